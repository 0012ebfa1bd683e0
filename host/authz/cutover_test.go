package authz_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/wire"
)

// fakeGroups answers ListGroups with the groups and states it holds.
type fakeGroups struct {
	mu     sync.Mutex
	states map[string]string
	fail   error
	lists  int
}

func (f *fakeGroups) ask(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.fail != nil {
		return nil, f.fail
	}
	resp := req.(*kmsg.ListGroupsRequest).ResponseKind().(*kmsg.ListGroupsResponse)
	for g, s := range f.states {
		resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{Group: g, GroupState: s})
	}
	return resp, nil
}

func (f *fakeGroups) set(group, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[group] = state
}

// TestCutOver: groups the cluster's coordinator runs (not Empty or Dead)
// at start hold their member requests — JoinGroup, SyncGroup, Heartbeat,
// ConsumerGroupHeartbeat, StreamsGroupHeartbeat are answered
// COORDINATOR_NOT_AVAILABLE without reaching the coordinator — while
// other requests and other groups pass; the cluster is listed again at
// most once per interval, a failed list keeps the group held, and once
// the cluster's group is empty it is served for good, even if the
// cluster's group gets members again. A cluster that cannot be listed
// at start is an error.
func TestCutOver(t *testing.T) {
	cluster := &fakeGroups{states: map[string]string{"live": "Stable", "rebal": "PreparingRebalance", "consumer": "Reconciling", "idle": "Empty", "gone": "Dead"}}
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	co, err := authz.NewCutOver(context.Background(), cluster.ask, nil, time.Second, clock)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := authz.NewACLEvaluator(nil, []string{"User:u"}, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	a := authz.New(rec, authz.Config{Local: &authz.Local{Evaluator: ev}, CutOver: co})
	member := func(group string) []kmsg.Request {
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.ProtocolType = group, "consumer"
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group = group
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group = group
		chb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		chb.Group = group
		shb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		shb.Group = group
		return []kmsg.Request{join, sync, hb, chb, shb}
	}
	held := func(req kmsg.Request) bool {
		t.Helper()
		before := len(rec.got)
		resp, err := a.Handle(context.Background(), &wire.Request{Key: req.Key(), Body: req, Authenticated: true, SASLUser: "u"})
		if err != nil {
			t.Fatal(err)
		}
		reached := len(rec.got) > before
		return !reached && errorCode(resp) == kerr.CoordinatorNotAvailable.Code
	}
	for _, g := range []string{"live", "rebal", "consumer"} {
		for _, req := range member(g) {
			if !held(req) {
				t.Fatalf("%s of %s (live on the cluster) was not held", kmsg.NameForKey(req.Key()), g)
			}
		}
	}
	for _, g := range []string{"idle", "gone", "new"} {
		for _, req := range member(g) {
			if held(req) {
				t.Fatalf("%s of %s (not live on the cluster) was held", kmsg.NameForKey(req.Key()), g)
			}
		}
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "live"
	if held(fetch) {
		t.Fatal("an OffsetFetch of a held group was held")
	}
	lists := cluster.lists
	cluster.set("live", "Empty")
	if !held(member("live")[2]) || cluster.lists != lists {
		t.Fatalf("within the interval: the cluster was listed again (%d lists, had %d) or the group served", cluster.lists, lists)
	}
	now = now.Add(time.Second)
	cluster.fail = errors.New("unreachable")
	if !held(member("live")[2]) {
		t.Fatal("a failed list let the group through")
	}
	cluster.fail = nil
	now = now.Add(time.Second)
	if held(member("live")[2]) {
		t.Fatal("the cluster's group is empty, yet held")
	}
	if !held(member("rebal")[0]) {
		t.Fatal("another group still live on the cluster was let through")
	}
	cluster.set("live", "Stable")
	now = now.Add(time.Second)
	if held(member("live")[0]) {
		t.Fatal("a group cut over is held again")
	}
	cluster.fail = errors.New("unreachable")
	if _, err := authz.NewCutOver(context.Background(), cluster.ask, nil, time.Second, clock); err == nil {
		t.Fatal("started without listing the cluster's groups")
	}
}

// errorCode is the top-level error code of a member response.
func errorCode(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		return r.ErrorCode
	case *kmsg.SyncGroupResponse:
		return r.ErrorCode
	case *kmsg.HeartbeatResponse:
		return r.ErrorCode
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return r.ErrorCode
	case *kmsg.StreamsGroupHeartbeatResponse:
		return r.ErrorCode
	}
	return -1
}
