package loop

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
)

// streamsJoin is a first StreamsGroupHeartbeat of member with a
// one-subtopology topology reading source.
func streamsJoin(group, member, source string) *wire.Request {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	proc := "p-" + member
	req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.ProcessID = group, member, 30000, &proc
	req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{source}}}}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return &wire.Request{Key: req.Key(), Version: req.Version, Body: req}
}

// nativeDeps are the deps of a one-partition loop whose core has topic
// "in" (3 partitions), no rebalance delay, interval or assignor wait,
// and whose sticky assignor is fn.
func nativeDeps(t testing.TB, fn assign.Native) Deps {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs, cfg.AssignorWaitMs = 0, 0, 0
	c, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Step(time.Now().UnixMilli(), core.Topics{Topics: []core.TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 3}}})
	c.Commit()
	asg, err := assign.NewNative(slog.New(slog.DiscardHandler), map[string]assign.Native{"sticky": fn})
	if err != nil {
		t.Fatal(err)
	}
	return Deps{Core: c, Assignors: asg}
}

// TestLoadedRerequestsRuns: a loop stops while an assignor run is in
// flight (the result never arrives); a new loop over the same store
// re-requests the run from Loaded and installs the target without any
// member heartbeating again.
func TestLoadedRerequestsRuns(t *testing.T) {
	dir := t.TempDir()
	block := make(chan struct{})
	started := make(chan struct{}, 16)
	blocking := func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		started <- struct{}{}
		<-block
		return nil, fmt.Errorf("abandoned")
	}
	newLoop := func(fn assign.Native) (*Loop, *core.Coordinator, *store.Store) {
		d := nativeDeps(t, fn)
		st, err := store.Open(filepath.Join(dir, "coordhost.db"))
		if err != nil {
			t.Fatal(err)
		}
		d.Store = st
		l, err := New(d)
		if err != nil {
			t.Fatal(err)
		}
		return l, d.Core, st
	}
	l, _, st := newLoop(blocking)
	hb := streamsJoin("g", "m1", "in")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.Handle(ctx, hb); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("no assignor run was started")
	}
	done := make(chan error, 1)
	go func() { done <- l.Shutdown(ctx) }()
	close(block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st.Close()

	l2, c2, st2 := newLoop(assign.Builtins["sticky"].Native)
	defer func() { _ = l2.Shutdown(context.Background()); st2.Close() }()
	for {
		var assigned bool
		err := l2.read(ctx, func(c *core.Coordinator, _ int64) core.Output {
			dr := kmsg.NewPtrStreamsGroupDescribeRequest()
			dr.Groups = []string{"g"}
			d := readCore[*kmsg.StreamsGroupDescribeResponse](l2, c, dr).Groups[0]
			assigned = d.AssignmentEpoch == d.Epoch && len(d.Members) == 1 && len(d.Members[0].TargetAssignment.ActiveTasks) == 1 &&
				len(d.Members[0].TargetAssignment.ActiveTasks[0].Partitions) == 3
			return core.Output{}
		})
		if err != nil {
			t.Fatal(err)
		}
		if assigned {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the run was not re-requested after the restart:\n%s", c2.Dump())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
