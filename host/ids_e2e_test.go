package host_test

import (
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOverlongIDsRefused: group and member ids over Kafka's 32,767-byte
// string limit (a 64 KiB id, in the flexible versions where a compact
// string can carry one) close the connection as Kafka's parser does, and
// a streams group on the same server keeps heartbeating.
func TestOverlongIDsRefused(t *testing.T) {
	srv := startLoopHost(t, "")
	ctx := timeout(t)
	if err := createTopic(ctx, newClient(t, srv.KafkaAddr()), "ids-in", 1); err != nil {
		t.Fatal(err)
	}
	canary := newStreamsMember(onConn{dialRaw(t, srv.KafkaAddr())}, "ids-canary", "ids-in")
	beat := func() {
		t.Helper()
		if code, _, err := canary.heartbeat(ctx); err != nil || code != 0 {
			t.Fatalf("canary heartbeat: code %d err %v", code, err)
		}
	}
	beat()
	long := strings.Repeat("x", 64<<10)
	sgh := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	sgh.Group, sgh.MemberID = "ids-g", long
	sgh2 := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	sgh2.Group, sgh2.MemberID = long, "m"
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType = long, "consumer"
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group = long
	for _, r := range []struct {
		req kmsg.Request
		v   int16
	}{{sgh, 0}, {sgh2, 0}, {jg, 9}, {oc, 9}} {
		c := dialRaw(t, srv.KafkaAddr())
		r.req.SetVersion(r.v)
		if _, err := c.c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, r.req, 1)); err != nil {
			t.Fatal(err)
		}
		c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.br.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("%s v%d with a 64 KiB id: want the connection closed, got %v", kmsg.NameForKey(r.req.Key()), r.v, err)
		}
		beat()
	}
	g, err := describeStreams(ctx, canary.cl, "ids-canary")
	if err != nil || len(g.Members) != 1 {
		t.Fatalf("canary group after the refusals: %+v, %v", g, err)
	}
	if code, _, _ := canary.heartbeat(ctx); code != 0 {
		t.Fatalf("canary: %v", kerr.ErrorForCode(code))
	}
}
