package core

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicJoin is a JoinGroup v3 (no member id required) of a new member.
func classicJoin(c *Coordinator, now int64, id RequestID, group string) Output {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group = 3, group
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 5000
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: consumerSubscription([]string{"t"})}}
	return c.joinGroup(now, id, ClientInfo{ClientID: "c"}, req)
}

func newPipelineCore(t *testing.T) *Coordinator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Classic.InitialRebalanceDelayMs = 3000 // joins stay parked
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSealedBatchesCommitInOrder: with three batches uncommitted at once,
// committing the first and rolling back gives the state after the first,
// and only the requests parked in the rolled-back batches fail.
func TestSealedBatchesCommitInOrder(t *testing.T) {
	c := newPipelineCore(t)
	classicJoin(c, 1000, 1, "g1") // parks request 1
	c.Seal()
	after1 := c.Dump()
	classicJoin(c, 1001, 2, "g2")
	c.Seal()
	classicJoin(c, 1002, 3, "g3") // not sealed
	c.CommitSealed()
	ro := c.Rollback()
	if got := c.Dump(); got != after1 {
		t.Fatalf("state after rolling back batches 2 and 3 is not the state after batch 1:\nwant\n%s\ngot\n%s", after1, got)
	}
	slices.Sort(ro.Failed)
	if !slices.Equal(ro.Failed, []RequestID{2, 3}) {
		t.Fatalf("rollback failed requests %v, want [2 3] (request 1 was committed)", ro.Failed)
	}

	// Committing every sealed batch, one by one, leaves nothing to roll back.
	classicJoin(c, 1003, 4, "g4")
	c.Seal()
	classicJoin(c, 1004, 5, "g5")
	c.Seal()
	c.CommitSealed()
	c.CommitSealed()
	c.CommitSealed() // nothing sealed: no effect
	committed := c.Dump()
	if ro := c.Rollback(); len(ro.Failed) != 0 || c.Dump() != committed {
		t.Fatalf("rolling back after every batch was committed changed state or failed %v", ro.Failed)
	}
}

// TestSealedBatchKeepsAnsweredRequestAnswered: a classic join parked and
// answered within uncommitted batches is not parked again by a rollback.
func TestSealedBatchKeepsAnsweredRequestAnswered(t *testing.T) {
	c := newPipelineCore(t)
	classicJoin(c, 1000, 1, "g")
	c.Commit()
	// The delay expires in a later batch: the join is answered there.
	o := c.tick(5000)
	c.Seal()
	answered := false
	for _, r := range o.Responses {
		answered = answered || r.Request == 1
	}
	if !answered {
		t.Fatalf("the parked join was not answered when the delay expired: %+v", o.Responses)
	}
	classicJoin(c, 5001, 2, "g")
	ro := c.Rollback()
	if slices.Contains(ro.Failed, 1) {
		t.Fatalf("rollback failed request 1, answered in a rolled-back batch: the host fails it already")
	}
	for _, r := range c.tick(5000).Responses {
		if r.Request == 1 {
			t.Fatalf("the rolled-back state still held request 1 parked: answered again")
		}
	}
}
