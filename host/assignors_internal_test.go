package host

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
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

// randomRun builds a core assignor run with several subtopologies,
// members sharing processes and owned tasks and offsets in random order.
func randomRun(r *rand.Rand) core.AssignorRun {
	var in core.AssignInput
	nsub := 1 + r.IntN(4)
	for s := 0; s < nsub; s++ {
		in.Subtopologies = append(in.Subtopologies, core.AssignSubtopology{ID: fmt.Sprintf("s%d", s), NumTasks: int32(r.IntN(6)), Stateful: r.IntN(2) == 0})
	}
	nm := 1 + r.IntN(6)
	for m := 0; m < nm; m++ {
		am := core.AssignMember{MemberID: fmt.Sprintf("m%02d", m), ProcessID: fmt.Sprintf("p%d", r.IntN(3)),
			ClientTags: []core.KeyValue{{Key: "zone", Value: "a"}, {Key: "az", Value: "b"}}}
		for s, sub := range in.Subtopologies {
			for p := int32(0); p < sub.NumTasks; p++ {
				ref := core.TaskRef{Subtopology: int32(s), Partition: p}
				switch r.IntN(6) {
				case 0:
					am.Active = append([]core.TaskRef{ref}, am.Active...) // reversed: the host must sort
				case 1:
					am.Standby = append(am.Standby, ref)
				}
				if r.IntN(3) == 0 {
					am.TaskOffsets = append([]core.TaskOffset{{Task: ref, Offset: int64(r.IntN(100))}}, am.TaskOffsets...)
				}
			}
		}
		in.Members = append(in.Members, am)
	}
	return core.AssignorRun{Group: "g", Epoch: 3, Assignor: "sticky", Input: in}
}

// TestABITranslation: core's assignor input translates to a valid ABI
// request (it encodes and decodes under the ABI's ordering rules), owned
// tasks map to the right dense indices and back, and the native sticky
// assignor's answer translates back to a result core accepts (every task
// active exactly once).
func TestABITranslation(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		run := randomRun(r)
		req, ts := toABI(run)
		b, err := abi.AppendAssignRequest(nil, req)
		if err != nil {
			t.Fatalf("case %d: request breaks the ABI rules: %v", i, err)
		}
		var back abi.AssignRequest
		if err := abi.DecodeAssignRequest(b, &back); err != nil {
			t.Fatalf("case %d: decode: %v", i, err)
		}
		echo := &abi.AssignResponse{NextProbeMs: -1}
		for _, m := range req.Members {
			echo.Members = append(echo.Members, abi.MemberAssignment{Active: m.Active, Standby: m.Standby})
		}
		res, err := fromABI(ts, echo, len(run.Input.Members))
		if err != nil {
			t.Fatal(err)
		}
		for j, m := range run.Input.Members {
			if !sameRefs(m.Active, res.Members[j].Active) || !sameRefs(m.Standby, res.Members[j].Standby) {
				t.Fatalf("case %d member %d: owned %v/%v came back as %v/%v", i, j, m.Active, m.Standby, res.Members[j].Active, res.Members[j].Standby)
			}
			if req.Processes[req.Members[j].Process] != m.ProcessID {
				t.Fatalf("case %d member %d: process %q became %q", i, j, m.ProcessID, req.Processes[req.Members[j].Process])
			}
		}
		resp, err := BuiltinAssignors["sticky"].Native(req)
		if err != nil {
			t.Fatalf("case %d: sticky: %v", i, err)
		}
		out, err := fromABI(ts, resp, len(run.Input.Members))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[core.TaskRef]int{}
		for _, m := range out.Members {
			for _, ref := range m.Active {
				seen[ref]++
			}
		}
		if int32(len(seen)) != ts.Total() {
			t.Fatalf("case %d: %d of %d tasks active", i, len(seen), ts.Total())
		}
		for ref, n := range seen {
			if n != 1 {
				t.Fatalf("case %d: task %v active %d times", i, ref, n)
			}
		}
	}
	if _, err := fromABI(abi.NewTaskSpace([]abi.Subtopology{{ID: "a", Partitions: 2}}), &abi.AssignResponse{Members: []abi.MemberAssignment{{Active: []int32{2}}}}, 1); err == nil {
		t.Fatal("a task index beyond the task space was accepted")
	}
}

func sameRefs(a, b []core.TaskRef) bool {
	set := func(s []core.TaskRef) map[core.TaskRef]bool {
		m := map[core.TaskRef]bool{}
		for _, r := range s {
			m[r] = true
		}
		return m
	}
	return reflect.DeepEqual(set(a), set(b))
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
	newLoop := func(fn NativeAssignor) (*Loop, *core.Coordinator, *store.Store) {
		cfg := core.DefaultConfig()
		cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs, cfg.AssignorWaitMs = 0, 0, 0
		c, err := core.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.UpdateTopics(time.Now().UnixMilli(), []core.TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 3}})
		c.Commit()
		st, err := store.Open(filepath.Join(dir, "coordhost.db"))
		if err != nil {
			t.Fatal(err)
		}
		asg := &Assignors{byName: map[string]*assignor{"sticky": {name: "sticky", native: fn, fallback: "sticky"}}}
		asg.log = slog.New(slog.DiscardHandler)
		l, err := NewLoop(LoopDeps{Core: c, Store: st, Assignors: asg})
		if err != nil {
			t.Fatal(err)
		}
		return l, c, st
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

	l2, c2, st2 := newLoop(BuiltinAssignors["sticky"].Native)
	defer func() { _ = l2.Shutdown(context.Background()); st2.Close() }()
	for {
		var assigned bool
		err := l2.read(ctx, func(c *core.Coordinator, _ int64) core.Output {
			dr := kmsg.NewPtrStreamsGroupDescribeRequest()
			dr.Groups = []string{"g"}
			d := c.StreamsGroupDescribe(dr).Groups[0]
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
