package host_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// TestOversizedTopologyRefused: a join carrying a topology of 100,000
// subtopologies (about 3 MB on the wire) is refused with INVALID_REQUEST
// naming streams.max.topology.size, leaves no group behind, and another
// group keeps heartbeating while it is handled.
func TestOversizedTopologyRefused(t *testing.T) {
	f := newLoopFixture(t, t.TempDir(), "", "")
	r := f.heartbeat(t, "steady", "m1", 0, nil)
	if r.ErrorCode != 0 {
		t.Fatalf("steady join: code %d", r.ErrorCode)
	}
	epoch := r.MemberEpoch

	huge := joinRequest("huge", "m-huge")
	huge.Topology.Subtopologies = make([]kmsg.StreamsGroupHeartbeatRequestTopologySubtopology, 100000)
	for i := range huge.Topology.Subtopologies {
		huge.Topology.Subtopologies[i] = kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			SubtopologyID: fmt.Sprint(i), SourceTopics: []string{fmt.Sprintf("source-topic-%06d", i)}}
	}
	if n := len(huge.AppendTo(nil)); n < 2<<20 {
		t.Fatalf("huge heartbeat encodes to %d bytes, want a few MB", n)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var steadyOK, steadyErr int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, "steady", "m1", epoch
			if r, err := handleHB(f.loop, req); err != nil || r.ErrorCode != 0 {
				steadyErr++
			} else {
				steadyOK++
			}
			time.Sleep(time.Millisecond)
		}
	}()
	resp, err := handleHB(f.loop, huge)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage == nil ||
		!strings.Contains(*resp.ErrorMessage, "streams.max.topology.size") {
		t.Fatalf("huge join: code %d message %v, want INVALID_REQUEST naming the limit", resp.ErrorCode, resp.ErrorMessage)
	}
	if steadyErr != 0 {
		t.Fatalf("steady group: %d failed heartbeats (%d ok) during the huge join", steadyErr, steadyOK)
	}
	if r := f.heartbeat(t, "steady", "m1", epoch, nil); r.ErrorCode != 0 {
		t.Fatalf("steady heartbeat after the huge join: code %d", r.ErrorCode)
	}
	if got := listGroupIDs(t, f.loop); slices.Contains(got, "huge") || !slices.Contains(got, "steady") {
		t.Fatalf("groups after the refused join: %v", got)
	}
	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups = []string{"huge"}
	dr, err := f.loop.Handle(context.Background(), &wire.Request{Key: d.Key(), Version: d.Version, Body: d})
	if err != nil {
		t.Fatal(err)
	}
	if g := dr.(*kmsg.StreamsGroupDescribeResponse).Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe huge: code %d, want GROUP_ID_NOT_FOUND", g.ErrorCode)
	}
}

// TestMaxGroupsThroughServer: runtime.max.groups reaches the coordinator
// of a one-partition store: the first JoinGroup creates its group, the
// second group's JoinGroup is answered COORDINATOR_NOT_AVAILABLE, and a
// second join to the first group is not refused.
func TestMaxGroupsThroughServer(t *testing.T) {
	srv := startLoopHost(t, "", "--store.partitions=1", "--runtime.max.groups=1")
	c := dialRaw(t, srv.KafkaAddr())
	join := func(group string) int16 {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		return c.do(req, 5).(*kmsg.JoinGroupResponse).ErrorCode
	}
	if code := join("first"); code != kerr.MemberIDRequired.Code {
		t.Fatalf("first group: code %d, want MEMBER_ID_REQUIRED", code)
	}
	if code := join("second"); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("second group: code %d, want COORDINATOR_NOT_AVAILABLE", code)
	}
	if code := join("first"); code != kerr.MemberIDRequired.Code {
		t.Fatalf("first group again: code %d, want MEMBER_ID_REQUIRED", code)
	}
}
