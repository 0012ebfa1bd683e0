package dst

import (
	"fmt"
	"runtime/debug"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/host/runtime"
)

// request is one client request as a runtime event: call runs it on the
// partition's coordinator.
type request struct {
	id   core.RequestID
	call func(c *core.Coordinator, now int64, id core.RequestID) core.Output
}

// gate is the first event of a multi-event round: its Step waits until the
// sim has queued the round's other events, so they all land in the next
// round (one append; the runtime may commit events that wrote nothing
// before it) whatever the scheduling.
type gate struct{ entered, release chan struct{} }

// roundEnd is what a runtime round handed back: the responses released by
// its Commit (ok), or the requests failed by its Rollback.
type roundEnd struct {
	ok        bool
	err       error
	responses []core.Response
	runs      []core.AssignorRun
	failed    []core.RequestID
	dead      bool // the shard had crashed: nothing was delivered
	wrote     bool // the round appended records
}

// shard is runtime.Sealer over a core.Coordinator, as host's shard is,
// minus sockets: it collects each round's responses and hands them to the
// sim at Commit. The sim waits for each round's end before it submits the
// next, so at most one sealed round is in flight; a second is a harness
// failure. Its timers are the sim's: NextDeadline reports none, and the sim
// submits Tick when the simulated clock passes core's deadline.
type shard struct {
	sim  *sim
	p    int
	c    *core.Coordinator
	dead bool
	// expect is the durable state (core's Dump) the replayed log must give,
	// checked when Loaded is stepped; "" on a first load.
	expect   string
	expected bool
	// The round being built, and what a Rollback carries into the next one.
	resp   []core.Response
	runs   []core.AssignorRun
	failed []core.RequestID
	// done: responses of the round's events the runtime committed at once
	// (an event that wrote nothing while nothing was waiting to be
	// appended), released with the round's end whatever its append does.
	done []core.Response
	// left: the events of the sim's round not yet stepped; a Commit or
	// Rollback while some are left is not the round's end. next is left
	// for the round after (a gate's round is followed by its events').
	left, next int
	// err: a Rollback within the round (a record the log refused).
	err error
	// crash: a crash happened during this round's append.
	crash bool
	// wrote: the round being built has records.
	wrote bool
	// sealed: a round is sealed and not yet committed or rolled back.
	sealed bool
	// renewed: groups created, or converted while empty, since the
	// invariants last looked: their epochs start again.
	renewed map[string]bool
	// converted: a group converted online since the invariants last
	// looked.
	converted bool
	// piped: a pipeline episode runs (pipeline.go): rounds are reported
	// as notes, several may be in flight, and their responses go with
	// their durable hooks, as host's shard does. psealed are the sealed
	// rounds not yet committed, pseq numbers them, recs counts the
	// records of the round being stepped.
	piped   bool
	psealed []pround
	pseq    int
	recs    int
}

// pround is a sealed round of a pipeline episode.
type pround struct {
	seq    int
	recs   int
	resp   []core.Response
	runs   []core.AssignorRun
	failed []core.RequestID
}

func (s *shard) Replay(r runtime.Record) error {
	if err := s.c.ReplayBytes(r.Key, r.Value); err != nil {
		return fmt.Errorf("replaying a record: %w", err)
	}
	return nil
}

func (s *shard) Step(now int64, in any) (out []runtime.Record) {
	defer func() {
		if r := recover(); r != nil {
			s.sim.fail(fmt.Errorf("panic in partition %d: %v\n%s", s.p, r, debug.Stack()))
			out = nil
		}
	}()
	if s.left > 0 {
		s.left--
	}
	var o core.Output
	switch in := in.(type) {
	case gate:
		close(in.entered)
		<-in.release
		return nil
	case runtime.Loaded:
		if s.expected {
			if got := s.c.Dump(); got != s.expect {
				s.sim.fail(fmt.Errorf("partition %d: state replayed from the log differs from the durable state before the crash (- durable, + replayed):\n%s", s.p, dumpDiff(s.expect, got)))
			}
		}
		// As host's shard does: the topic image (not in the log), then Loaded.
		mustStep(s.c, now, core.Topics{Topics: s.sim.topics})
		s.c.Commit()
		o = s.c.Loaded(now)
	case runtime.Tick:
		o = mustStep(s.c, now, core.Tick{})
	case request:
		o = in.call(s.c, now, in.id)
	}
	for _, ev := range o.Events {
		if ev.Kind == core.EventGroupConverted && (ev.Reason == core.ReasonOnlineToStreams || ev.Reason == core.ReasonOnlineToClassic) {
			s.sim.stats.Conversions++
			s.converted = true
			s.sim.tracef("  group %s converted (%s) at epoch %d", ev.Group, ev.Reason, ev.Epoch)
		}
		if ev.Kind == core.EventGroupCreated || ev.Kind == core.EventGroupConverted &&
			(ev.Reason == core.ReasonOfflineToStreams || ev.Reason == core.ReasonOfflineToClassic || ev.Reason == core.ReasonOfflineToConsumer) {
			if s.renewed == nil {
				s.renewed = map[string]bool{}
			}
			s.renewed[ev.Group] = true
		}
	}
	s.resp = append(s.resp, o.Responses...)
	s.runs = append(s.runs, o.AssignorRuns...)
	s.failed = append(s.failed, o.Failed...)
	s.wrote = s.wrote || len(o.Records) > 0
	s.recs += len(o.Records)
	for _, r := range o.Records {
		k, v := records.EncodeRecord(r)
		out = append(out, runtime.Record{Key: k, Value: v})
	}
	return out
}

// take ends the sim's round: what it released (the responses committed at
// once, then resp) and failed.
func (s *shard) take() roundEnd {
	e := roundEnd{responses: append(s.done, s.resp...), runs: s.runs, failed: s.failed, wrote: s.wrote, err: s.err}
	s.resp, s.runs, s.failed, s.wrote, s.done, s.err = nil, nil, nil, false, nil, nil
	s.left, s.next = s.next, 0
	return e
}

// Seal ends a runtime round: core's batch waits for its append.
// Its responses go to the sim with the round's Commit.
func (s *shard) Seal() func() {
	if s.piped {
		return s.pipedSeal()
	}
	if s.sealed {
		s.sim.fail(fmt.Errorf("partition %d: a second round sealed while one is in flight; the sim submits one round at a time", s.p))
	}
	s.sealed = true
	s.c.Seal()
	return nil
}

// Commit makes the sealed round's events final. Within the sim's round (events
// left to step: the runtime committed an event that wrote nothing at once)
// it keeps their responses for the round's end; at the end it hands the
// round to the sim.
func (s *shard) Commit() {
	s.sealed = false
	if s.dead {
		s.deadEnd()
		return
	}
	if s.piped {
		s.pipedCommit()
		return
	}
	s.c.CommitSealed()
	if s.left > 0 {
		s.done, s.resp = append(s.done, s.resp...), nil
		return
	}
	e := s.take()
	e.ok = e.err == nil
	s.sim.ends <- e
}

func (s *shard) Rollback(err error) {
	s.sealed = false
	if s.dead {
		s.deadEnd()
		return
	}
	if s.piped {
		s.pipedRollback(err)
		return
	}
	// Requests answered since the last Commit fail (host: NOT_COORDINATOR);
	// what the rollback itself produced is released with the next Commit,
	// as host does.
	for _, r := range s.resp {
		s.failed = append(s.failed, r.Request)
	}
	ro := s.c.Rollback()
	s.failed = append(s.failed, ro.Failed...)
	s.resp, s.err = nil, err
	if s.left > 0 {
		s.resp, s.runs = ro.Responses, append(s.runs, ro.AssignorRuns...)
		return
	}
	e := s.take()
	s.resp, s.runs = ro.Responses, ro.AssignorRuns
	s.sim.ends <- e
}

// deadEnd ends a round of a dead shard: the round whose append crashed
// tells the sim; the rounds of unloading a dead process say nothing.
func (s *shard) deadEnd() {
	if s.crash {
		s.crash = false
		if s.piped {
			s.sim.notes <- note{kind: noteDead}
			return
		}
		s.sim.ends <- roundEnd{dead: true}
	}
}

// pipedSeal seals a round of an episode; its durable hook releases its
// responses.
func (s *shard) pipedSeal() func() {
	if s.dead {
		return nil
	}
	s.c.Seal()
	s.pseq++
	r := pround{seq: s.pseq, recs: s.recs, resp: s.resp, runs: s.runs, failed: s.failed}
	s.resp, s.runs, s.failed, s.recs, s.wrote = nil, nil, nil, 0, false
	s.psealed = append(s.psealed, r)
	s.sim.notes <- note{kind: noteSealed, seq: r.seq, recs: r.recs, last: s.left == 0}
	return func() { s.sim.notes <- note{kind: noteDurable, seq: r.seq, responses: r.resp} }
}

// pipedCommit commits the oldest sealed round of an episode.
func (s *shard) pipedCommit() {
	if len(s.psealed) == 0 {
		s.sim.fail(fmt.Errorf("partition %d: Commit without a sealed round", s.p))
		return
	}
	r := s.psealed[0]
	s.psealed = s.psealed[1:]
	s.c.CommitSealed()
	s.sim.notes <- note{kind: noteCommit, seq: r.seq, runs: r.runs, failed: r.failed}
}

// pipedRollback undoes every round of an episode not committed: their
// requests fail; what the rollback produced goes with the next round.
func (s *shard) pipedRollback(err error) {
	var failed []core.RequestID
	for _, r := range append(s.psealed, pround{resp: s.resp, failed: s.failed}) {
		for _, resp := range r.resp {
			failed = append(failed, resp.Request)
		}
		failed = append(failed, r.failed...)
	}
	s.psealed = nil
	ro := s.c.Rollback()
	failed = append(failed, ro.Failed...)
	s.resp, s.runs, s.failed, s.recs, s.wrote = ro.Responses, ro.AssignorRuns, nil, 0, false
	s.sim.notes <- note{kind: noteRollback, err: err, failed: failed}
}

// NextDeadline reports none: the sim fires timers from its own clock.
// The runtime asks at the end of each turn on the partition, which a
// pipeline episode waits for.
func (s *shard) NextDeadline() (int64, bool) {
	if s.sim.piped[s.p].Load() { // the owner may end a turn after the episode
		s.sim.notes <- note{kind: noteTurnEnd}
	}
	return 0, false
}

func (s *shard) Unload() {}

// stepRequest is a client's request, stepped with the id its shard gives it.
func stepRequest(client core.ClientInfo, body kmsg.Request) func(*core.Coordinator, int64, core.RequestID) core.Output {
	return func(c *core.Coordinator, now int64, id core.RequestID) core.Output {
		return mustStep(c, now, core.Request{ID: id, Client: client, Body: body})
	}
}

// mustStep applies in to c. core refuses only an input it does not take,
// and the simulation builds none: a refusal is a bug in the simulation.
func mustStep(c *core.Coordinator, now int64, in core.Input) core.Output {
	out, err := c.Step(now, in)
	if err != nil {
		panic(fmt.Sprintf("dst: core refused an input: %v", err))
	}
	return out
}
