package core

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The migration property test: random mixes of classic and streams
// Kafka Streams instances (joins, kills without LeaveGroup, graceful
// leaves, pauses that let session/join/sync timers fence, coordinator
// restarts by replay, failed appends, lost responses) under a random
// streams.migration.policy. After every request: no active task on two
// processes, no grant of a task another member still owns, no fencing
// error for a classic member the coordinator holds at the generation it
// sent, the group kind the policy and membership say, and at every
// restart the state replayed from the compacted log (as the store
// replays it) equals the live one. At the end, with the chaos off, the
// group must settle with every task active exactly once.

// propRecorder collects failures; Fatal aborts the run.
type propRecorder struct{ errs []string }

type propAbort struct{}

func (r *propRecorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }
func (r *propRecorder) Fatalf(f string, a ...any) { r.Errorf(f, a...); panic(propAbort{}) }
func (r *propRecorder) Fatal(a ...any)            { r.errs = append(r.errs, fmt.Sprint(a...)); panic(propAbort{}) }

const migrationPropertySeeds = 1000

// More seeds than CI runs: go test ./core -run 'TestMigrationProperty$'
// -migration-seeds 20000 [-migration-first 1001]; one seed's trace:
// -run TestMigrationPropertyTrace -migration-seed N.
var (
	migrationSeeds = flag.Int("migration-seeds", migrationPropertySeeds, "number of migration property seeds")
	migrationFirst = flag.Uint64("migration-first", 1, "first migration property seed")
)

func TestMigrationProperty(t *testing.T) {
	n := *migrationSeeds
	if testing.Short() {
		n = 200
	}
	failed := 0
	for seed := *migrationFirst; seed < *migrationFirst+uint64(n); seed++ {
		trace, errs := runMigrationProperty(seed, 60)
		if len(errs) == 0 {
			continue
		}
		if failed++; failed == 1 {
			t.Errorf("seed %d: %s\n--- trace tail ---\n%s", seed, strings.Join(errs, "\n"), tail(trace, 60))
		} else {
			t.Errorf("seed %d: %s", seed, errs[0])
		}
	}
}

func TestMigrationPropertyDeterministic(t *testing.T) {
	a, _ := runMigrationProperty(42, 60)
	b, _ := runMigrationProperty(42, 60)
	if a != b || a == "" {
		t.Fatalf("seed 42 gave different traces (%d vs %d bytes)", len(a), len(b))
	}
}

func runMigrationProperty(seed uint64, steps int) (trace string, errs []string) {
	rec := &propRecorder{}
	rng := rand.New(rand.NewPCG(seed, 0x919))
	policy := []MigrationPolicy{MigrationBidirectional, MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled}[rng.IntN(5)]
	// Half the seeds park streams heartbeats for the assignor (the default).
	s := newMigSimConfig(rec, 6, policy, []int64{0, 1000}[rng.IntN(2)])
	if rng.IntN(2) == 0 {
		// Half the seeds throttle targets (streams.assignment.interval.ms),
		// which lets a restarted process's threads regroup before one
		// target (migration_regroup.go).
		ms := int32(1000)
		s.setGroupConfig(StreamsGroupOverrides{AssignmentIntervalMs: &ms})
	}
	s.rng, s.tolerateFencing = rng, true
	s.recording = *migrationDebug
	s.failP, s.loseP = 0.04, 0.04
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(propAbort); !ok {
				rec.Errorf("panic: %v", r)
			}
		}
		trace, errs = s.trace.String(), rec.errs
	}()
	s.debugf("policy %s", policy)
	names := 0
	start := func(classic bool) {
		names++
		kind := "s"
		if classic {
			kind = "c"
		}
		in := s.inst(fmt.Sprintf("%s%d", kind, names), byte(1+rng.IntN(4)), classic)
		if classic {
			in.version = []int32{6, 8, 11, 11}[rng.IntN(4)] // mixed SubscriptionInfo versions
		}
		s.debugf("start %s process %d v%d", in.name, in.process[15], in.version)
		// One process speaks one protocol: its process id lives in its
		// state directory, which one process locks (docs/MIGRATION.md,
		// "Same process, new protocol"). Starting an instance with the
		// other protocol is a restart of that process: its instances of
		// the old protocol stop (without LeaveGroup).
		for _, o := range s.insts {
			if o != in && o.alive && o.process == in.process && o.classic != in.classic {
				o.alive = false
				s.debugf("kill %s (process restarted with the other protocol)", o.name)
			}
		}
	}
	live := func() []*migInst {
		var out []*migInst
		for _, in := range s.insts {
			if in.alive {
				out = append(out, in)
			}
		}
		return out
	}
	// A classic group first, usually; sometimes a streams group.
	first := rng.IntN(4) != 0
	for i := 0; i < 2+rng.IntN(2); i++ {
		start(first)
	}
	for step := 0; step < steps; step++ {
		ls := live()
		switch r := rng.IntN(100); {
		case r < 12 && len(ls) < 6:
			// Lean towards the protocol the group does not speak, to
			// drive conversions both ways.
			g, _ := s.c.Group("g")
			opposite := g != nil && g.Kind() == GroupKindStreams
			start(rng.IntN(5) < 3 == opposite)
		case r < 20 && len(ls) > 0:
			in := ls[rng.IntN(len(ls))]
			in.alive = false
			s.debugf("kill %s", in.name)
		case r < 26 && len(ls) > 0:
			s.leave(ls[rng.IntN(len(ls))])
		case r < 32 && len(ls) > 0:
			in := ls[rng.IntN(len(ls))]
			in.paused = !in.paused
			s.debugf("%s paused=%v", in.name, in.paused)
		case r < 36:
			s.restart()
		case r < 38:
			for _, in := range ls {
				in.refused = false // try again: the group may have changed
			}
		case r < 42 && len(ls) > 0:
			s.commitCheck(ls[rng.IntN(len(ls))])
		default:
			for _, in := range ls {
				if rng.IntN(5) != 0 {
					s.act(in)
					s.check()
				}
			}
		}
		adv := int64(500 + rng.IntN(3000))
		if rng.IntN(10) == 0 {
			adv = 15000
		}
		s.now += adv
		s.finish(s.c.tick(s.now))
		s.check()
		s.checkConversion(policy)
	}
	// Chaos off: everyone alive resumes; the group must settle.
	s.failP, s.loseP = 0, 0
	for _, in := range s.insts {
		in.paused, in.refused = false, false // refused ones try again
	}
	if len(live()) == 0 {
		start(rng.IntN(2) == 0)
	}
	s.settleLive(300)
	ups, downs := 0, 0
	for _, r := range s.log {
		if r.Key.RecordType() == records.RecGroupMetadata && r.Value == nil {
			ups++
		}
		if gm, ok := r.Value.(records.GroupMetadataValue); ok && gm.Version == 4 {
			downs++
		}
	}
	s.debugf("conversions: %d classic tombstones (upgrades or offline), %d downgrades", ups, downs)
	return
}

// leave is a graceful shutdown: a leave heartbeat or a LeaveGroup.
func (s *migSim) leave(in *migInst) {
	in.alive = false
	s.debugf("leave %s", in.name)
	if in.memberID == "" {
		return
	}
	if in.classic {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version = 5
		req.Group = "g"
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: in.memberID}}
		s.finish(s.c.leaveGroup(s.now, s.req(in), req))
		return
	}
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "g", in.memberID, -1
	s.finish(s.c.streamsGroupHeartbeat(s.now, s.req(in), ClientInfo{}, req))
}

// restart replaces the coordinator by one replayed from the durable log
// (a failover); parked requests are lost and clients retry.
func (s *migSim) restart() {
	s.debugf("restart")
	s.replayCheck()
	r, err := replayLog(s.c.cfg, s.log)
	if err != nil {
		s.t.Fatalf("replay: %v", err)
	}
	s.c = r
	if s.overrides != nil {
		r.setStreamsGroupConfig("g", *s.overrides)
	}
	for _, in := range s.insts {
		if in.inflight {
			in.inflight = false
			if in.needSync || s.isMember(in) && in.gen >= 0 && !in.rejoin {
				in.needSync = true
			} else {
				in.rejoin = true
			}
		}
	}
	s.finish(r.Loaded(s.now))
	s.finish(r.updateTopics(s.now, s.topics))
}

// checkKind: right after a classic member's Heartbeat was answered NONE,
// the group is no longer a streams group of classic members only that
// may downgrade, has settled and awaits no departed process — such a
// group converts at that heartbeat at the latest (docs/MIGRATION.md,
// "Downgrade"). Before it settles, or while a process that left may
// return, it stays a streams group served by the bridge.
func (s *migSim) checkKind() {
	g, ok := s.c.groups["g"].(*streamsGroup)
	if !ok || !s.c.downgradable(g) || !g.settled() || s.c.awaitingReturn(g) {
		return
	}
	s.t.Errorf("at %d: settled streams group of classic members only after a classic heartbeat", s.now)
}

// settleLive runs rounds until the live members own every task exactly
// once and the group is stable.
func (s *migSim) settleLive(max int) {
	for i := 0; i < max; i++ {
		s.round()
		if s.stable() {
			return
		}
	}
	s.t.Fatalf("did not settle by %d:\n%s", s.now, s.describe())
}

func TestMigrationPropertyTrace(t *testing.T) {
	if *migrationSeed == 0 {
		t.Skip("set -migration-seed to print one seed's trace")
	}
	trace, errs := runMigrationProperty(*migrationSeed, 60)
	t.Log(trace)
	if len(errs) > 0 {
		t.Fatalf("seed %d:\n%s", *migrationSeed, strings.Join(errs, "\n"))
	}
}

// commitCheck: a classic member's OffsetCommit at the generation the
// coordinator holds it at is accepted.
func (s *migSim) commitCheck(in *migInst) {
	if !in.classic || in.memberID == "" {
		return
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.MemberID, req.Generation = "g", in.memberID, in.gen
	d, o := s.c.decideOffsetCommit(s.now, req)
	s.finish(o)
	s.debugf("%s commit gen=%d: %s", in.name, in.gen, errName(d.ErrorCode))
	if g, ok := s.c.groups["g"].(*streamsGroup); ok {
		if m := g.members[in.memberID]; m != nil && m.classic != nil && m.epoch == in.gen && d.ErrorCode != 0 {
			s.t.Errorf("at %d classic member %s committing at its epoch %d got %s", s.now, in.name, in.gen, errName(d.ErrorCode))
		}
	}
}

// checkConversion: a non-empty group changes kind only as the policy
// allows (empty groups convert freely).
func (s *migSim) checkConversion(policy MigrationPolicy) {
	g, ok := s.c.Group("g")
	if !ok {
		s.lastKind, s.lastNonEmpty = 0, false
		return
	}
	if s.lastKind != 0 && s.lastKind != g.Kind() && s.lastNonEmpty {
		if g.Kind() == GroupKindStreams && !policy.allowsUpgrade() || g.Kind() == GroupKindClassic && !policy.allowsDowngrade() {
			s.t.Errorf("at %d a non-empty %s group became %s under policy %s", s.now, s.lastKind, g.Kind(), policy)
		}
	}
	s.lastKind, s.lastNonEmpty = g.Kind(), !g.IsEmpty()
}
