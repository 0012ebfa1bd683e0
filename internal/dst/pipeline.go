package dst

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/runtime"
)

// Pipelined rounds. Outside a pipeline episode the simulation submits one
// round and waits for its end, so one round is in flight at a time. An
// episode (pipeline below) holds a partition's appends in holdLog: the
// runtime steps the next rounds on top of the rounds whose append waits
// (up to runtime.DefaultPipeline appends), and the simulation decides when
// each held append goes on and what happens to it (it succeeds, fails,
// is fenced, or the process crashes in it, with the batch lost or
// durable). The shard reports every Seal, durable hook, Commit and
// Rollback as a note; the simulation keeps a model of the rounds in
// flight, checks each note against it, and acts only when the model says
// the runtime has nothing left to do (quiescent), so the episode is as
// deterministic as the rest of the run.

// noteKind is what a note reports.
type noteKind int

const (
	noteSealed     noteKind = iota // a round was sealed (last: the sim's round is stepped)
	noteAppend                     // the runtime called Append (held: it waits for the sim)
	noteAppendDone                 // an Append returned (err)
	noteDurable                    // a round's durable hook ran: its responses go
	noteCommit                     // Commit made the oldest sealed round final
	noteRollback                   // Rollback undid every round not committed
	noteDead                       // the process died in an append
	noteTurnEnd                    // the runtime ended a turn on the partition (it asked for the deadline)
)

type note struct {
	kind      noteKind
	seq       int // the round (noteSealed, noteDurable, noteCommit)
	recs      int // records of the round or of the append
	last      bool
	held      bool
	err       error
	responses []core.Response
	runs      []core.AssignorRun
	failed    []core.RequestID
}

// holdLog sits above the crash log: during a partition's episode it tells
// the simulation about every append and, while the partition's appends
// are held, waits for the simulation to let each one go on.
type holdLog struct {
	runtime.Log
	sim *sim
}

func (l *holdLog) Append(p int, recs []runtime.Record) error {
	s := l.sim
	if !s.piped[p].Load() {
		return l.Log.Append(p, recs)
	}
	held := s.held[p].Load()
	s.notes <- note{kind: noteAppend, recs: len(recs), held: held}
	if held {
		<-s.letGoCh[p]
	}
	err := l.Log.Append(p, recs)
	s.notes <- note{kind: noteAppendDone, err: err}
	return err
}

// mround is a round in flight as the model sees it.
type mround struct {
	seq, recs        int
	writing, durable bool
	ok               bool // its append succeeded
}

func (r *mround) done() bool { return r.recs == 0 || r.ok }

// pipeModel is the simulation's account of one partition's rounds in
// flight during an episode.
type pipeModel struct {
	s      *sim
	p      int
	rounds []*mround // sealed and not committed, oldest first
	// stepping: rounds submitted and not yet stepped to their end; a
	// round is stepped once its last seal is noted (sealedLast) and the
	// runtime's turn that sealed it has ended, so the runtime has put it
	// in its pipeline.
	stepping, sealedLast int
	// held: an append waits for the simulation; running: one goes on.
	held, running bool
	// failed: an append failed and the rollback is due.
	failed bool
	// over: the episode ended in a rollback or the process's death.
	over, dead bool
	err        error
	// committed: a round with records was committed.
	committed bool
	pending   []note // notes applied to the model, acted on at quiescence
	maxFlight int    // the most rounds in flight at once
}

func (m *pipeModel) failf(format string, args ...any) {
	m.s.fail(fmt.Errorf("partition %d pipeline: "+format, append([]any{m.p}, args...)...))
	m.over = true
}

func (m *pipeModel) round(seq int) (int, *mround) {
	for i, r := range m.rounds {
		if r.seq == seq {
			return i, r
		}
	}
	return -1, nil
}

// apply checks a note against the model and updates it.
func (m *pipeModel) apply(n note) {
	switch n.kind {
	case noteSealed:
		m.rounds = append(m.rounds, &mround{seq: n.seq, recs: n.recs})
		m.maxFlight = max(m.maxFlight, len(m.rounds))
		if n.last {
			m.sealedLast++
		}
	case noteTurnEnd:
		m.stepping -= m.sealedLast
		m.sealedLast = 0
	case noteAppend:
		want := 0
		for _, r := range m.rounds {
			if r.recs > 0 && !r.writing && !r.ok {
				r.writing = true
				want += r.recs
			}
		}
		if want != n.recs {
			m.failf("an append of %d records, the rounds waiting for one have %d", n.recs, want)
		}
		m.held, m.running = n.held, !n.held
	case noteAppendDone:
		m.running = false
		for _, r := range m.rounds {
			if r.writing {
				r.writing, r.ok = false, n.err == nil
			}
		}
		m.failed = n.err != nil
	case noteDurable:
		i, r := m.round(n.seq)
		if r == nil {
			m.failf("the durable hook of round %d, which is not in flight", n.seq)
			return
		}
		for _, q := range m.rounds[:i+1] {
			if !q.done() {
				m.failf("round %d's responses released while round %d (%d records) is not durable", n.seq, q.seq, q.recs)
				return
			}
		}
		r.durable = true
	case noteCommit:
		if len(m.rounds) == 0 || m.rounds[0].seq != n.seq {
			m.failf("round %d committed out of order (in flight: %v)", n.seq, m.seqs())
			return
		}
		if !m.rounds[0].done() {
			m.failf("round %d committed before its append succeeded", n.seq)
			return
		}
		m.committed = m.committed || m.rounds[0].recs > 0
		m.rounds = m.rounds[1:]
	case noteRollback:
		for _, r := range m.rounds {
			if r.ok || r.durable {
				m.failf("round %d rolled back after its append succeeded", r.seq)
				return
			}
		}
		m.rounds, m.failed, m.over, m.err = nil, false, true, n.err
	case noteDead:
		m.over, m.dead = true, true
	}
}

func (m *pipeModel) seqs() []int {
	out := make([]int, len(m.rounds))
	for i, r := range m.rounds {
		out[i] = r.seq
	}
	return out
}

// quiescent reports whether the runtime has nothing left to do for the
// partition until the simulation acts: every submitted round is stepped,
// no append runs, no rollback or commit is due, and a round waiting for
// its append has one held.
func (m *pipeModel) quiescent() bool {
	if m.over {
		return true
	}
	if m.stepping > 0 || m.running || m.failed {
		return false
	}
	if len(m.rounds) > 0 && m.rounds[0].done() {
		return false
	}
	for _, r := range m.rounds {
		if r.recs > 0 && !r.writing && !r.ok && !m.held {
			return false
		}
	}
	return true
}

// appends counts the rounds whose appends are outstanding (the runtime's
// pipeline depth counts these).
func (m *pipeModel) appends() int {
	n := 0
	for _, r := range m.rounds {
		if !r.done() {
			n++
		}
	}
	return n
}

// settle waits for the notes until the model is quiescent, then acts on
// them in order: releases responses, fails requests, dispatches runs.
func (s *sim) settle(m *pipeModel) {
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for !m.quiescent() {
		select {
		case n := <-s.notes:
			m.apply(n)
			m.pending = append(m.pending, n)
		case <-timeout.C:
			m.failf("the runtime did not become quiescent (harness): rounds %v stepping=%d held=%v running=%v failed=%v",
				m.seqs(), m.stepping, m.held, m.running, m.failed)
			return
		}
	}
	notes := m.pending
	m.pending = nil
	for _, n := range notes {
		switch n.kind {
		case noteDurable:
			for _, r := range n.responses {
				s.release(r)
			}
		case noteCommit:
			s.runs = append(s.runs, n.runs...)
			s.failRequests(n.failed)
		case noteRollback:
			s.stats.FailedAppends++
			s.tracef("p%d append failed, every round in flight rolled back: %v", m.p, n.err)
			s.failRequests(n.failed)
		}
	}
}

func (s *sim) failRequests(ids []core.RequestID) {
	for _, id := range ids {
		if c := s.inflight[id]; c != nil {
			delete(s.inflight, id)
			s.tracef("  req#%d failed (NOT_COORDINATOR)", id)
			c.failed()
		}
	}
}

// pipeline is one episode: a partition's appends are held while up to
// four of its rounds are stepped, each held append is let go with a
// random outcome (some in the middle of the episode), and the episode
// drains until no round is in flight — or ends in a rollback or a crash.
func (s *sim) pipeline() {
	p := s.rng.IntN(partitions)
	sh := s.shards[p]
	k := 2 + s.rng.IntN(3)
	m := &pipeModel{s: s, p: p}
	for len(s.notes) > 0 {
		<-s.notes
	}
	sh.piped, sh.recs = true, 0
	s.piped[p].Store(true)
	s.held[p].Store(true)
	s.tracef("p%d pipeline of %d rounds, appends held", p, k)
	for i := 0; i < k && !m.over && s.failure() == nil; i++ {
		if m.appends() >= runtime.DefaultPipeline-1 {
			break // the runtime would not step the next round
		}
		c := s.clientActOn(p)
		if c == nil {
			continue
		}
		s.nextReq++
		id := s.nextReq
		s.inflight[id] = c
		s.tracef("p%d req#%d %s: %s (pipelined)", p, id, c.group, c.what)
		m.stepping++
		sh.left = 1
		s.mustSubmit(p, request{id: id, call: c.run})
		s.settle(m)
		if m.held && s.rng.IntN(3) == 0 {
			s.letGo(m)
		}
	}
	s.held[p].Store(false)
	for !m.over && m.held && s.failure() == nil {
		s.letGo(m)
	}
	s.stats.Pipelined += max(m.maxFlight-1, 0)
	sh.piped = false
	s.piped[p].Store(false)
	switch {
	case s.failure() != nil:
	case m.dead:
		s.tracef("p%d crashed during a pipelined append", p)
		s.noteUndelivered(s.undelivered)
		s.undelivered = nil
		s.crash("crash during a pipelined append")
	default:
		// The committed rounds' state (a rollback undid the others).
		if m.committed {
			s.inv.afterCommit(s, p)
		}
		if errors.Is(m.err, runtime.ErrFenced) {
			s.reload(p)
		}
	}
}

// letGo lets the held append of m's partition go on, after arming what
// happens to it: most succeed; some fail, are fenced, or the process
// crashes in them with the batch lost or durable.
func (s *sim) letGo(m *pipeModel) {
	p := m.p
	switch r := s.rng.IntN(20); {
	case r < 2:
		s.tracef("p%d held append goes on and fails (storage)", p)
		s.faults.FailAppends(p, 1, fmt.Errorf("disk full: %w", runtime.ErrStorage))
	case r < 3:
		s.tracef("p%d held append goes on and is fenced", p)
		s.faults.FailAppends(p, 1, fmt.Errorf("another writer: %w", runtime.ErrFenced))
	case r < 4:
		mode := crashLost + crashMode(s.rng.IntN(2))
		s.tracef("p%d held append goes on and the process crashes in it (durable=%v)", p, mode == crashDurable)
		s.crashAt[p] = mode
	default:
		s.tracef("p%d held append goes on", p)
	}
	m.held, m.running = false, true
	s.letGoCh[p] <- struct{}{}
	s.settle(m)
}

// clientActOn lets a random client of a group on partition p act.
func (s *sim) clientActOn(p int) *call {
	type pick struct{ kind, i int }
	var on []pick
	for i, cl := range s.streams {
		if partitionOf(cl.group) == p {
			on = append(on, pick{kindStreams, i})
		}
	}
	for i, cl := range s.classics {
		if partitionOf(cl.group) == p {
			on = append(on, pick{kindClassic, i})
		}
	}
	for i, cl := range s.consumers {
		if partitionOf(cl.group) == p {
			on = append(on, pick{kindConsumer, i})
		}
	}
	for i, cl := range s.classicStreams {
		if partitionOf(cl.group) == p {
			on = append(on, pick{kindClassicStreams, i})
		}
	}
	for try := 0; try < 4 && len(on) > 0; try++ {
		x := on[s.rng.IntN(len(on))]
		if c := s.actAs(x.kind, x.i); c != nil {
			return c
		}
	}
	return nil
}

// pipeFlags are the per-partition switches holdLog reads on the
// runtime's appender goroutine.
type pipeFlags struct {
	piped, held [partitions]atomic.Bool
	letGoCh     [partitions]chan struct{}
	notes       chan note
}

func (f *pipeFlags) init() {
	f.notes = make(chan note, 256)
	for p := range f.letGoCh {
		f.letGoCh[p] = make(chan struct{})
	}
}
