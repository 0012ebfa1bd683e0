package host_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// onConn is a kmsg.Requestor over one raw TCP connection to coordhost, so
// a test controls when a client reconnects (and gets a new port).
type onConn struct{ r *rawConn }

// connVersions are the versions onConn sends (a Kafka 4.4 client's).
var connVersions = map[int16]int16{
	int16(kmsg.JoinGroup): 9, int16(kmsg.SyncGroup): 5, int16(kmsg.Heartbeat): 4, int16(kmsg.DescribeGroups): 5,
	int16(kmsg.StreamsGroupHeartbeat): 0, int16(kmsg.StreamsGroupDescribe): 0,
}

func (o onConn) Request(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	v, ok := connVersions[req.Key()]
	if !ok {
		return nil, fmt.Errorf("onConn: no version for %s", kmsg.NameForKey(req.Key()))
	}
	return o.r.do(req, v), nil
}

// TestReconnectChangesNothing: a streams member and a classic member that
// reconnect (a new connection, so a new ephemeral port) and go on with the
// same member metadata cause no group epoch bump and no rebalance, as in
// Kafka, which records the client host as "/" and the IP without port.
func TestReconnectChangesNothing(t *testing.T) {
	srv := startLoopHost(t, "")
	ctx := timeout(t)
	if err := createTopic(ctx, newClient(t, srv.KafkaAddr()), "rc-in", 2); err != nil {
		t.Fatal(err)
	}

	first := dialRaw(t, srv.KafkaAddr())
	m := newStreamsMember(onConn{first}, "rc", "rc-in")
	waitFor(t, 20*time.Second, "streams member Stable with both tasks", func() error {
		if code, _, err := m.heartbeat(ctx); err != nil || code != 0 {
			return fmt.Errorf("heartbeat: code %d err %v", code, err)
		}
		g, err := describeStreams(ctx, onConn{first}, "rc")
		if err != nil {
			return err
		}
		if g.State != "Stable" || g.AssignmentEpoch != g.Epoch || len(m.partitions()) != 2 {
			return fmt.Errorf("state %s, epochs %d/%d, member owns %v", g.State, g.Epoch, g.AssignmentEpoch, m.partitions())
		}
		return nil
	})
	before, err := groupEpochs(ctx, onConn{first}, "rc")
	if err != nil {
		t.Fatal(err)
	}
	first.c.Close()

	second := dialRaw(t, srv.KafkaAddr())
	if first.c.LocalAddr().String() == second.c.LocalAddr().String() {
		t.Fatal("the reconnect reused the port; the test shows nothing")
	}
	m.cl = onConn{second}
	for i := 0; i < 3; i++ {
		if code, _, err := m.heartbeat(ctx); err != nil || code != 0 {
			t.Fatalf("heartbeat after reconnect: code %d err %v", code, err)
		}
	}
	after, err := groupEpochs(ctx, onConn{second}, "rc")
	if err != nil {
		t.Fatal(err)
	}
	if !before.equal(after) {
		t.Fatalf("a reconnect changed the streams group: before %v, after %v", before, after)
	}
	g, err := describeStreams(ctx, onConn{second}, "rc")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Members) != 1 || g.Members[0].ClientHost != "/127.0.0.1" {
		t.Fatalf("member client host %+v, want /127.0.0.1 (Kafka's form)", g.Members)
	}

	third := dialRaw(t, srv.KafkaAddr())
	cm := &classicMember{cl: onConn{third}, group: "rc-classic"}
	if err := cm.join(ctx); err != nil {
		t.Fatal(err)
	}
	gen := cm.generation
	third.c.Close()
	cm.cl = onConn{dialRaw(t, srv.KafkaAddr())}
	if err := cm.heartbeat(ctx); err != nil {
		t.Fatalf("classic heartbeat after reconnect: %v", err)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"rc-classic"}
	resp, err := dg.RequestWith(ctx, cm.cl)
	if err != nil {
		t.Fatal(err)
	}
	d := resp.Groups[0]
	if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].ClientHost != "/127.0.0.1" {
		t.Fatalf("classic group after reconnect: %+v", d)
	}
	if err := cm.heartbeat(ctx); err != nil || cm.generation != gen {
		t.Fatalf("classic generation %d -> %d (%v)", gen, cm.generation, err)
	}
}
