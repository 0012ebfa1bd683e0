package dst

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/runtime"
)

// step does one random thing: clients act (alone or several in one
// round), the clock moves and timers fire, an assignor answers, storage
// faults and crashes are armed, topics change.
func (s *sim) step() {
	switch r := s.rng.IntN(100); {
	case r < 4:
		s.pipeline()
	case r < 38:
		s.act(1)
	case r < 48:
		s.act(2 + s.rng.IntN(4))
	case r < 63:
		ms := int64(s.rng.IntN(4000))
		if s.rng.IntN(8) == 0 {
			ms = int64(s.rng.IntN(60000))
		}
		s.advance(ms)
	case r < 77:
		s.answerRun()
	case r < 80:
		s.one(s.stale())
	case r < 83:
		s.one(s.leave())
	case r < 85:
		s.vanish()
	case r < 91:
		p, n := s.rng.IntN(partitions), 1+s.rng.IntN(3)
		s.tracef("fault: next %d appends of p%d fail (storage)", n, p)
		s.faults.FailAppends(p, n, fmt.Errorf("disk full: %w", runtime.ErrStorage))
	case r < 93:
		p := s.rng.IntN(partitions)
		s.tracef("fault: next append of p%d is fenced", p)
		s.faults.FailAppends(p, 1, fmt.Errorf("another writer: %w", runtime.ErrFenced))
	case r < 95:
		p, mode := s.rng.IntN(partitions), crashLost+crashMode(s.rng.IntN(2))
		s.tracef("fault: crash during the next append of p%d (durable=%v)", p, mode == crashDurable)
		s.crashAt[p] = mode
	case r < 96:
		s.tracef("fault: crash after the next round's append, before its responses")
		s.dropNext = true
	case r < 97:
		s.crash("crash between rounds")
	default:
		s.changeTopics()
	}
}

// act lets n random clients act; requests of one partition share a round.
func (s *sim) act(n int) {
	byPart := make([][]*call, partitions)
	for i := 0; i < n; i++ {
		if c := s.clientAct(); c != nil {
			p := partitionOf(c.group)
			byPart[p] = append(byPart[p], c)
		}
	}
	for p, calls := range byPart {
		if len(calls) > 0 && s.failure() == nil {
			s.send(p, calls...)
		}
	}
}

// clients counts the simulated clients of every kind.
func (s *sim) clients() int {
	return len(s.streams) + len(s.classics) + len(s.consumers) + len(s.classicStreams)
}

// pick returns a random client as its kind and index within its kind's
// list: one kind in four is the mixed group's, whose clients are spread
// over two lists, so that its conversions come often.
func (s *sim) pick() (kind, i int) {
	if s.rng.IntN(4) == 0 {
		var mixed []int
		for i, cl := range s.streams {
			if cl.group == mixedGroups[0] {
				mixed = append(mixed, i)
			}
		}
		k := s.rng.IntN(len(mixed) + len(s.classicStreams))
		if k < len(mixed) {
			return kindStreams, mixed[k]
		}
		return kindClassicStreams, k - len(mixed)
	}
	k := s.rng.IntN(s.clients())
	for kind, n := range []int{len(s.streams), len(s.classics), len(s.consumers), len(s.classicStreams)} {
		if k < n {
			return kind, k
		}
		k -= n
	}
	panic("unreachable")
}

// The client kinds pick returns.
const (
	kindStreams = iota
	kindClassic
	kindConsumer
	kindClassicStreams
)

// clientAct lets a random client take its next step.
func (s *sim) clientAct() *call { return s.actAs(s.pick()) }

// actAs lets client i of kind take its next step.
func (s *sim) actAs(kind, i int) *call {
	switch kind {
	case kindStreams:
		return s.streamsAct(s.streams[i])
	case kindClassic:
		return s.classicAct(s.classics[i])
	case kindConsumer:
		return s.consumerAct(s.consumers[i])
	default:
		return s.classicStreamsAct(s.classicStreams[i])
	}
}

// leave makes a random client leave its group.
func (s *sim) leave() *call {
	switch kind, i := s.pick(); kind {
	case kindStreams:
		return s.streamsLeave(s.streams[i])
	case kindClassic:
		return s.classicLeave(s.classics[i])
	case kindConsumer:
		return s.consumerLeave(s.consumers[i])
	default:
		return s.classicStreamsLeave(s.classicStreams[i])
	}
}

// stale resends a random streams, consumer or classic Streams client's
// last request.
func (s *sim) stale() *call {
	switch k := s.rng.IntN(len(s.streams) + len(s.consumers) + len(s.classicStreams)); {
	case k < len(s.streams):
		return s.streamsStale(s.streams[k])
	case k < len(s.streams)+len(s.consumers):
		return s.consumerStale(s.consumers[k-len(s.streams)])
	default:
		return s.classicStreamsStale(s.classicStreams[k-len(s.streams)-len(s.consumers)])
	}
}

func (s *sim) one(c *call) {
	if c != nil {
		s.send(partitionOf(c.group), c)
	}
}

// vanish makes a random client stop talking without leaving; its session
// times out unless it comes back first. It still runs what it owned.
func (s *sim) vanish() {
	switch kind, i := s.pick(); kind {
	case kindStreams:
		cl := s.streams[i]
		s.tracef("%s vanishes", cl.memberID)
		cl.gone, cl.waiting = true, false
	case kindClassic:
		cl := s.classics[i]
		s.tracef("%s vanishes", cl.memberID)
		cl.gone, cl.waiting = true, false
		cl.incarnation++
	case kindConsumer:
		cl := s.consumers[i]
		s.tracef("%s vanishes", cl.memberID)
		cl.gone, cl.waiting = true, false
	default:
		cl := s.classicStreams[i]
		s.tracef("%s vanishes", cl.memberID)
		cl.gone, cl.waiting = true, false
		cl.incarnation++
	}
}

// advance moves the clock by ms, firing each partition's timers at their
// deadlines in deadline order.
func (s *sim) advance(ms int64) {
	target := s.now + ms
	s.tracef("advance %dms", ms)
	for i := 0; s.failure() == nil; i++ {
		p, at, ok := s.nextDeadline()
		if !ok || at > target {
			break
		}
		if i == 10000 {
			s.fail(fmt.Errorf("timers keep firing at %d", at))
			return
		}
		s.now = max(s.now, at)
		s.tracef("p%d tick @%d", p, s.now)
		s.submit(p, runtime.Tick{})
	}
	s.now = max(s.now, target)
}

func (s *sim) nextDeadline() (int, int64, bool) {
	best, at, found := 0, int64(0), false
	for p, sh := range s.shards {
		if d, ok := sh.c.NextDeadline(); ok && (!found || d < at) {
			best, at, found = p, d, true
		}
	}
	return best, at, found
}

// answerRun answers a random outstanding assignor run: with the reference
// assignor, or with an error.
func (s *sim) answerRun() {
	if len(s.runs) == 0 {
		return
	}
	i := s.rng.IntN(len(s.runs))
	run := s.runs[i]
	s.runs = append(s.runs[:i:i], s.runs[i+1:]...)
	p := partitionOf(run.Group)
	if s.rng.IntN(10) == 0 {
		s.internal(p, fmt.Sprintf("assignor %s epoch=%d fails", run.Group, run.Epoch), func(c *core.Coordinator, now int64) core.Output {
			return mustStep(c, now, core.AssignorResult{Run: run, Err: fmt.Errorf("assignor trapped")})
		})
		return
	}
	res := core.ReferenceAssign(run.Input)
	s.internal(p, fmt.Sprintf("assignor %s epoch=%d answers", run.Group, run.Epoch), func(c *core.Coordinator, now int64) core.Output {
		return mustStep(c, now, core.AssignorResult{Run: run, Result: res})
	})
}

// changeTopics changes the streams source topic's partition count on every
// partition's coordinator.
func (s *sim) changeTopics() {
	n := []int32{4, 6, 8}[s.rng.IntN(3)]
	s.topics[0].Partitions, s.topics[2].Partitions = n, n
	for p := 0; p < partitions && s.failure() == nil; p++ {
		topics := append([]core.TopicMetadata(nil), s.topics...)
		s.internal(p, fmt.Sprintf("topic in has %d partitions", n), func(c *core.Coordinator, now int64) core.Output {
			return mustStep(c, now, core.Topics{Topics: topics})
		})
	}
}

// fmtResponse is a one-line account of a response for the trace.
func fmtResponse(msg kmsg.Response) string {
	switch r := msg.(type) {
	case *kmsg.ConsumerGroupHeartbeatResponse:
		out := fmt.Sprintf("consumer hb err=%d epoch=%d", r.ErrorCode, r.MemberEpoch)
		if r.Assignment != nil {
			out += " assigned=" + fromAssignment(r.Assignment).String()
		}
		return out
	case *kmsg.StreamsGroupHeartbeatResponse:
		out := fmt.Sprintf("streams hb err=%d epoch=%d", r.ErrorCode, r.MemberEpoch)
		if r.ActiveTasks != nil {
			out += " active=" + fromKmsg(r.ActiveTasks).String()
		}
		return out
	case *kmsg.JoinGroupResponse:
		return fmt.Sprintf("join err=%d gen=%d member=%s leader=%s members=%d", r.ErrorCode, r.Generation, r.MemberID, r.LeaderID, len(r.Members))
	case *kmsg.SyncGroupResponse:
		if tasks, _, err := decodeStreamsAssignment(r.MemberAssignment); err == nil && len(r.MemberAssignment) > 0 {
			return fmt.Sprintf("sync err=%d tasks=%s", r.ErrorCode, tasks)
		}
		return fmt.Sprintf("sync err=%d partitions=%v", r.ErrorCode, decodeAssignment(r.MemberAssignment))
	case *kmsg.HeartbeatResponse:
		return fmt.Sprintf("heartbeat err=%d", r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		return fmt.Sprintf("leave err=%d", r.ErrorCode)
	case *kmsg.OffsetCommitResponse:
		return fmt.Sprintf("offset commit err=%d", r.Topics[0].Partitions[0].ErrorCode)
	}
	return fmt.Sprintf("%T", msg)
}
