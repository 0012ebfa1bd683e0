package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStreamsPropertySliced runs the streams property test with every
// assignor result of two members or more written one member per step: the
// invariants (no task active twice, epochs never back, replay equal to
// live state, checked in the middle of slices too) hold as they do for
// results written at once.
func TestStreamsPropertySliced(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 100
	}
	for seed := 0; seed < seeds; seed++ {
		trace, err := runPropertySliced(uint64(seed), *propSteps, 1)
		if err != nil {
			t.Fatalf("seed %d: %v\ntrace tail:\n%s", seed, err, tail(trace, 6000))
		}
	}
}

// sliceRig drives one coordinator through joins of a streams group, each
// assignor run answered by the reference assignor and any slices it left
// written by ticks, and records everything it wrote and answered.
type sliceRig struct {
	t     *testing.T
	c     *Coordinator
	cfg   Config
	now   int64
	log   []records.Record
	trace strings.Builder
	parts int // steps that wrote part of a target
	id    RequestID
	// prepared: results are handed in with PrepareAssignorResult's work
	// done, as the host hands them.
	prepared bool
}

func newSliceRig(t *testing.T, slice int, wait int64) *sliceRig {
	cfg := DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs = 0, 0
	cfg.AssignorWaitMs = wait
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.targetSlice = slice
	r := &sliceRig{t: t, c: c, cfg: cfg, now: 1000}
	r.step(Topics{Topics: []TopicMetadata{{Name: "in", ID: topicID("in"), Partitions: 16}}})
	return r
}

// step steps in, commits it and returns its output.
func (r *sliceRig) step(in Input) Output {
	r.t.Helper()
	out, err := r.c.Step(r.now, in)
	if err != nil {
		r.t.Fatalf("Step(%T): %v", in, err)
	}
	if err := eventsExplain(out); err != nil {
		r.t.Fatal(err)
	}
	r.c.Commit()
	r.log = append(r.log, out.Records...)
	for _, e := range out.Events {
		if e.Kind == EventTargetPart {
			r.parts++
		}
	}
	for _, rec := range out.Records {
		fmt.Fprintf(&r.trace, "%s\n", fmtRecord(rec))
	}
	for _, resp := range out.Responses {
		fmt.Fprintf(&r.trace, "%s\n", fmtResponse("response", resp.Msg))
	}
	return out
}

// heartbeat sends req and returns the step's output.
func (r *sliceRig) heartbeat(req *kmsg.StreamsGroupHeartbeatRequest) Output {
	r.id++
	return r.step(Request{ID: r.id, Client: ClientInfo{ClientID: "c"}, Body: req})
}

// answer answers runs and, unless partial, writes the slices they left.
func (r *sliceRig) answer(runs []AssignorRun, partial bool) {
	for _, run := range runs {
		run.BuildInput() // a deferring Coordinator's (DeferAssignorInputs)
		in := AssignorResult{Run: run, Result: ReferenceAssign(run.Input)}
		if r.prepared {
			in.Prepared = PrepareAssignorResult(in.Run, in.Result)
		}
		r.answer(r.step(in).AssignorRuns, partial)
	}
	for !partial && r.c.hasTimer(targetSliceKey("s")) {
		r.answer(r.step(Tick{Limit: 1}).AssignorRuns, false)
	}
}

// build joins n members one after the other, each run answered in full,
// and returns the last join's run unanswered.
func (r *sliceRig) build(n int) []AssignorRun {
	var runs []AssignorRun
	for i := 0; i < n; i++ {
		r.answer(runs, false)
		runs = r.heartbeat(joinRequest("s", fmt.Sprintf("m%02d", i))).AssignorRuns
	}
	return runs
}

// fullHeartbeat is member's heartbeat reporting the tasks it was given.
func (r *sliceRig) fullHeartbeat(member string) *kmsg.StreamsGroupHeartbeatRequest {
	m := r.c.groups["s"].(*streamsGroup).members[member]
	req := joinRequest("s", member)
	req.Topology, req.MemberEpoch = nil, m.epoch
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = kmsgTasks(m.assigned.active.set()), kmsgTasks(m.assigned.standby), kmsgTasks(m.assigned.warmup)
	return req
}

// The same joins and results give the same records, in the same order,
// and the same state whether a result is written at once or in slices (of
// 3 members, and of the default size), and whether it comes prepared
// (PrepareAssignorResult, as the host hands it) or not; the log replays
// to the live state.
func TestTargetSlicesWriteWhatOneStepWrites(t *testing.T) {
	const members = 2*defaultTargetSlice + 5
	var rigs []*sliceRig
	for _, v := range []struct {
		slice    int
		prepared bool
	}{{members + 1, false}, {3, false}, {3, true}, {members + 1, true}, {0, true}} {
		r := newSliceRig(t, v.slice, 0)
		r.prepared = v.prepared
		r.answer(r.build(members), false)
		replayed, err := replayLog(r.cfg, r.log)
		if err != nil {
			t.Fatal(err)
		}
		if live, rep := r.c.Dump(), replayed.Dump(); live != rep {
			t.Fatalf("slice %d: replay differs from live state:\nlive:\n%s\nreplayed:\n%s", r.c.targetSlice, live, rep)
		}
		if sliced := r.parts > 0; sliced != (v.slice <= members) {
			t.Fatalf("slice %d: %d steps wrote part of a target", v.slice, r.parts)
		}
		rigs = append(rigs, r)
	}
	whole := rigs[0]
	for _, r := range rigs[1:] {
		if a, b := whole.trace.String(), r.trace.String(); a != b {
			t.Fatalf("slice %d, prepared %v: records and responses differ:\nwhole:\n%s\nthis one:\n%s", r.c.targetSlice, r.prepared, a, b)
		}
		if a, b := whole.c.Dump(), r.c.Dump(); a != b {
			t.Fatalf("slice %d, prepared %v: state differs:\nwhole:\n%s\nthis one:\n%s", r.c.targetSlice, r.prepared, a, b)
		}
	}
}

// A result the check refuses (a task active twice) is discarded the same
// way prepared or not: the same answers to the heartbeats that waited,
// the same records (none of the result) and state.
func TestPreparedResultRefusedAlike(t *testing.T) {
	var traces, dumps []string
	for _, prepared := range []bool{false, true} {
		r := newSliceRig(t, 0, 1000)
		r.answer(r.build(3), false)
		runs := r.heartbeat(joinRequest("s", "m03")).AssignorRuns
		if len(runs) != 1 {
			t.Fatalf("the join started %d runs", len(runs))
		}
		res := ReferenceAssign(runs[0].Input)
		res.Members[1].Active = append(res.Members[1].Active, res.Members[0].Active...)
		if len(res.Members[0].Active) == 0 {
			t.Fatal("member 0 got no active task to assign twice")
		}
		in := AssignorResult{Run: runs[0], Result: res}
		if prepared {
			in.Prepared = PrepareAssignorResult(in.Run, in.Result)
		}
		out := r.step(in)
		if !slices.ContainsFunc(out.Events, func(e Event) bool { return e.Kind == EventAssignorResultDiscarded }) {
			t.Fatalf("prepared %v: the result was not discarded: %+v", prepared, out.Events)
		}
		traces, dumps = append(traces, r.trace.String()), append(dumps, r.c.Dump())
	}
	if traces[0] != traces[1] || dumps[0] != dumps[1] {
		t.Fatalf("a refused result prepared differs:\nnot prepared:\n%s\n%s\nprepared:\n%s\n%s", traces[0], dumps[0], traces[1], dumps[1])
	}
}

// A heartbeat that arrives while a result is written in slices sees the
// whole new target, never a part: with an assignor wait it parks and is
// answered after the last slice, without one it writes the rest first.
// Either way its answer is the one it gets once the result is written at
// once, for a member whose target is already written and for one whose
// target is not.
func TestTargetSlicesHeartbeatSeesWholeTarget(t *testing.T) {
	for _, wait := range []int64{0, 1000} {
		for _, member := range []string{"m00", "m11"} {
			t.Run(fmt.Sprintf("wait=%d/%s", wait, member), func(t *testing.T) {
				whole, sliced := newSliceRig(t, 0, wait), newSliceRig(t, 3, wait)
				// Every member joined and reconciled; the last join's
				// run is answered next.
				for _, r := range []*sliceRig{whole, sliced} {
					r.answer(r.build(12), false)
					for i := 0; i < 12; i++ {
						r.heartbeat(r.fullHeartbeat(fmt.Sprintf("m%02d", i)))
					}
				}
				// One more member: the target moves tasks.
				runs := whole.heartbeat(joinRequest("s", "m12")).AssignorRuns
				whole.answer(runs, false)
				want := whole.heartbeat(whole.fullHeartbeat(member))

				runs = sliced.heartbeat(joinRequest("s", "m12")).AssignorRuns
				sliced.answer(runs, true) // the result's first step only
				g := sliced.c.groups["s"].(*streamsGroup)
				if g.soft.slices == nil || g.assignmentEpoch == runs[0].Epoch {
					t.Fatal("the result was written at once; the test needs it in slices")
				}
				got := sliced.heartbeat(sliced.fullHeartbeat(member))
				hbID := sliced.id
				if wait > 0 {
					if responseTo(got, hbID) != "" || g.soft.slices == nil {
						t.Fatal("with a wait the heartbeat parks while the result is written; it was answered")
					}
					for responseTo(got, hbID) == "" && sliced.c.hasTimer(targetSliceKey("s")) {
						got = sliced.step(Tick{Limit: 1})
					}
				}
				if g.soft.slices != nil || g.assignmentEpoch != runs[0].Epoch {
					t.Fatalf("answered with the result not all written (assignment epoch %d, run %d)", g.assignmentEpoch, runs[0].Epoch)
				}
				a, b := responseTo(want, whole.id), responseTo(got, hbID)
				if a == "" || a != b {
					t.Fatalf("the heartbeat's answer differs:\nwhole:  %s\nsliced: %s", a, b)
				}
				if a, b := whole.c.Dump(), sliced.c.Dump(); a != b {
					t.Fatalf("state differs:\nwhole:\n%s\nsliced:\n%s", a, b)
				}
			})
		}
	}
}

// responseTo renders the response to request id in out ("" if none).
func responseTo(out Output, id RequestID) string {
	for _, r := range out.Responses {
		if r.Request == id {
			return fmtResponse("response", r.Msg)
		}
	}
	return ""
}

// TestMergeMemberIDs: the members a result's slices write are the group's
// members in id order, whichever of the run's members left and whichever
// joined since (before, between and after the run's ids), as sorting
// them all gives.
func TestMergeMemberIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		g := newStreamsGroup("g")
		var in []AssignMember
		for n := rng.IntN(40); n > 0; n-- {
			id := fmt.Sprintf("m%03d", rng.IntN(100))
			if _, dup := g.members[id]; dup {
				continue
			}
			g.swapMember(nil, storedStreamsMember(id))
			in = append(in, AssignMember{MemberID: id})
		}
		slices.SortFunc(in, compareMemberIDs)
		for id := range g.members {
			if rng.IntN(3) == 0 {
				g.swapMember(g.members[id], nil) // left
			}
		}
		for n := rng.IntN(10); n > 0; n-- {
			if id := fmt.Sprintf("m%03d", rng.IntN(100)); g.members[id] == nil {
				g.swapMember(nil, storedStreamsMember(id)) // joined, or left and came back
			}
		}
		if got, want := mergeMemberIDs(g, in), g.sortedMemberIDs(); !slices.Equal(got, want) {
			t.Fatalf("round %d: merged %v, sorted %v (input %v)", round, got, want, in)
		}
	}
}
