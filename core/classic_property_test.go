package core

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClassicProperties drives classic groups with random clients over
// 1000 seeds (random joins with and without member ids, static members,
// syncs with stale generations, heartbeats, single and batch leaves, clock
// jumps that expire sessions and rebalances, and failed appends) and checks
// after every batch:
//   - a group's generation never goes backwards (live and durable);
//   - every generation has exactly one leader, a member of it: all
//     successful JoinGroup responses of a generation name the same leader,
//     only the leader's carries the member list, and a Stable group's
//     leader is one of its members;
//   - a Stable group's in-memory generation equals its last record
//     (generation, protocol, leader, members and assignments);
//   - replaying the committed records, compacted as the store keeps them,
//     yields the live durable state.
func TestClassicProperties(t *testing.T) {
	seeds := 1000
	if testing.Short() {
		seeds = 200
	}
	for seed := 0; seed < seeds; seed++ {
		runClassicProperty(t, int64(seed), 60)
	}
}

type classicPropClient struct {
	alias    string
	group    string
	instance *string
	memberID string
	gen      int32
}

type classicProp struct {
	t       *testing.T
	seed    int64
	rng     *rand.Rand
	c       *Coordinator
	cfg     Config
	now     int64
	log     []records.Record
	clients []*classicPropClient
	nextReq RequestID
	reqFrom map[RequestID]*classicPropClient
	maxGen  map[string]int32
	leaders map[string]string // group/gen -> leader
	trace   []string
}

func runClassicProperty(t *testing.T, seed int64, steps int) {
	runClassicPropertyInto(t, seed, steps, &classicProp{})
}

// runClassicPropertyInto runs one seed into p (whose log the caller may
// read afterwards).
func runClassicPropertyInto(t *testing.T, seed int64, steps int, p *classicProp) {
	cfg := DefaultConfig()
	cfg.Classic.InitialRebalanceDelayMs = 100
	cfg.Classic.NewMemberJoinTimeoutMs = 20000
	cfg.Classic.MaxSize = 4
	c, _ := New(cfg)
	*p = classicProp{t: t, seed: seed, rng: rand.New(rand.NewSource(seed)), c: c, cfg: cfg,
		reqFrom: map[RequestID]*classicPropClient{}, maxGen: map[string]int32{}, leaders: map[string]string{}}
	for i := 0; i < 5; i++ {
		cl := &classicPropClient{alias: fmt.Sprintf("c%d", i), group: []string{"g", "h"}[i%2], gen: -1}
		if p.rng.Intn(3) == 0 {
			inst := "i-" + cl.alias
			cl.instance = &inst
		}
		p.clients = append(p.clients, cl)
	}
	for step := 0; step < steps; step++ {
		p.step()
		if step%15 == 14 {
			p.checkReplay()
		}
	}
	p.checkReplay()
}

func (p *classicProp) fatalf(format string, args ...any) {
	p.t.Helper()
	p.t.Fatalf("seed %d: %s\ntrace:\n%s", p.seed, fmt.Sprintf(format, args...), strings.Join(p.trace, "\n"))
}

func (p *classicProp) req(cl *classicPropClient) RequestID {
	p.nextReq++
	p.reqFrom[p.nextReq] = cl
	return p.nextReq
}

func (p *classicProp) step() {
	r := p.rng
	cl := p.clients[r.Intn(len(p.clients))]
	var o Output
	op := r.Intn(100)
	switch {
	case op < 30:
		o = p.join(cl)
	case op < 50:
		o = p.sync(cl)
	case op < 70:
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation, req.InstanceID = cl.group, cl.memberID, cl.gen, cl.instance
		p.trace = append(p.trace, fmt.Sprintf("@%d hb %s", p.now, cl.alias))
		o = p.c.heartbeat(p.now, p.req(cl), req)
	case op < 78:
		o = p.leave(cl)
	default:
		p.now += int64(r.Intn(12000))
		p.trace = append(p.trace, fmt.Sprintf("@%d tick", p.now))
		o = p.c.tick(p.now)
	}
	p.finish(o, r.Intn(12) == 0)
}

func (p *classicProp) join(cl *classicPropClient) Output {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = []int16{3, 5, 9}[p.rng.Intn(3)]
	if cl.instance != nil && req.Version < 5 {
		req.Version = 5
	}
	req.Group, req.MemberID, req.InstanceID = cl.group, cl.memberID, cl.instance
	if p.rng.Intn(8) == 0 {
		req.MemberID = "" // a restart
	}
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, int32(5000+p.rng.Intn(3)*5000)
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: consumerSubscription([]string{"t"})}}
	if p.rng.Intn(3) == 0 {
		req.Protocols = append([]kmsg.JoinGroupRequestProtocol{{Name: "cooperative-sticky", Metadata: consumerSubscription([]string{"t"})}}, req.Protocols...)
	}
	p.trace = append(p.trace, fmt.Sprintf("@%d join %s v%d id=%q", p.now, cl.alias, req.Version, req.MemberID))
	return p.c.joinGroup(p.now, p.req(cl), ClientInfo{ClientID: cl.alias}, req)
}

func (p *classicProp) sync(cl *classicPropClient) Output {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation, req.InstanceID = cl.group, cl.memberID, cl.gen, cl.instance
	if p.rng.Intn(10) == 0 {
		req.Generation-- // stale
	}
	for _, o := range p.clients {
		if o.group == cl.group && o.memberID != "" && p.rng.Intn(4) != 0 {
			req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: o.memberID,
				MemberAssignment: []byte(fmt.Sprintf("%s@%d", o.alias, req.Generation))})
		}
	}
	p.trace = append(p.trace, fmt.Sprintf("@%d sync %s gen=%d", p.now, cl.alias, req.Generation))
	return p.c.syncGroup(p.now, p.req(cl), req)
}

func (p *classicProp) leave(cl *classicPropClient) Output {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 5, cl.group
	names := []string{cl.alias}
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: cl.memberID, InstanceID: cl.instance}}
	if p.rng.Intn(3) == 0 { // batch with another client of the group
		for _, o := range p.clients {
			if o != cl && o.group == cl.group {
				req.Members = append(req.Members, kmsg.LeaveGroupRequestMember{MemberID: o.memberID, InstanceID: o.instance})
				names = append(names, o.alias)
				break
			}
		}
	}
	p.trace = append(p.trace, fmt.Sprintf("@%d leave %v", p.now, names))
	o := p.c.leaveGroup(p.now, p.req(cl), req)
	return o
}

// finish commits or rolls back a batch, lets clients observe their
// responses, and checks the invariants.
func (p *classicProp) finish(o Output, fail bool) {
	if err := eventsExplain(o); err != nil {
		p.fatalf("%v", err)
	}
	if fail {
		p.trace = append(p.trace, "  append failed")
		p.c.Rollback()
		p.checkState()
		return
	}
	p.c.Commit()
	p.log = append(p.log, o.Records...)
	for _, r := range o.Responses {
		p.observe(p.reqFrom[r.Request], r.Msg)
	}
	p.checkState()
}

func (p *classicProp) observe(cl *classicPropClient, msg kmsg.Response) {
	switch r := msg.(type) {
	case *kmsg.JoinGroupResponse:
		p.trace = append(p.trace, fmt.Sprintf("  %s join err=%d gen=%d leader=%s members=%d", cl.alias, r.ErrorCode, r.Generation, r.LeaderID, len(r.Members)))
		if r.MemberID != "" {
			cl.memberID = r.MemberID
		}
		switch r.ErrorCode {
		case 0:
			cl.gen = r.Generation
			key := fmt.Sprintf("%s/%d", cl.group, r.Generation)
			if l, ok := p.leaders[key]; ok && leaderIdentity(l) != leaderIdentity(r.LeaderID) {
				p.fatalf("generation %s has leaders %s and %s", key, l, r.LeaderID)
			}
			p.leaders[key] = r.LeaderID
			if (len(r.Members) > 0) != (r.LeaderID == r.MemberID) && !r.SkipAssignment {
				if !(len(r.Members) == 0 && r.LeaderID == r.MemberID) { // a leader's stable-state rejoin copy
					p.fatalf("member %s got %d members with leader %s", r.MemberID, len(r.Members), r.LeaderID)
				}
			}
		case errUnknownMemberID, errFencedInstanceID:
			cl.memberID, cl.gen = "", -1
		}
	case *kmsg.SyncGroupResponse:
		p.trace = append(p.trace, fmt.Sprintf("  %s sync err=%d %q", cl.alias, r.ErrorCode, r.MemberAssignment))
		if r.ErrorCode == 0 && len(r.MemberAssignment) > 0 && !bytes.HasPrefix(r.MemberAssignment, []byte(cl.alias+"@")) {
			p.fatalf("%s got assignment %q", cl.alias, r.MemberAssignment)
		}
		if r.ErrorCode == errUnknownMemberID || r.ErrorCode == errFencedInstanceID {
			cl.memberID, cl.gen = "", -1
		}
	case *kmsg.HeartbeatResponse:
		if r.ErrorCode == errUnknownMemberID || r.ErrorCode == errFencedInstanceID {
			cl.memberID, cl.gen = "", -1
		}
	}
}

func (p *classicProp) checkState() {
	for _, id := range p.c.groupIDs() {
		g, ok := p.c.groups[id].(*classicGroup)
		if !ok {
			continue
		}
		if g.generation < p.maxGen[id] {
			p.fatalf("group %s generation went back from %d to %d", id, p.maxGen[id], g.generation)
		}
		p.maxGen[id] = g.generation
		if g.durable != nil && g.durable.Generation > g.generation {
			p.fatalf("group %s durable generation %d ahead of live %d", id, g.durable.Generation, g.generation)
		}
		if g.state == classicStable || g.state == classicCompletingRebalance {
			if g.leader == nil || g.members[*g.leader] == nil {
				p.fatalf("group %s in %s has leader %v not among its members", id, g.state, strOrNull(g.leader))
			}
			if l, ok := p.leaders[fmt.Sprintf("%s/%d", id, g.generation)]; ok && leaderIdentity(l) != leaderIdentity(*g.leader) {
				p.fatalf("group %s generation %d: leader %s, responses named %s", id, g.generation, *g.leader, l)
			}
		}
		if g.state == classicStable {
			p.checkStableMatchesRecord(g)
		}
	}
}

// checkStableMatchesRecord: a Stable group is exactly its last record.
func (p *classicProp) checkStableMatchesRecord(g *classicGroup) {
	v := g.durable
	if v == nil || v.Generation != g.generation || deref0(v.Protocol) != deref0(g.protocolName) ||
		deref0(v.Leader) != deref0(g.leader) || len(v.Members) != len(g.members) {
		p.fatalf("stable group %s differs from its record: live gen=%d leader=%s members=%d, record %+v",
			g.id, g.generation, strOrNull(g.leader), len(g.members), v)
	}
	for _, m := range v.Members {
		lm := g.members[m.MemberID]
		if lm == nil || !bytes.Equal(lm.assignment, m.Assignment) {
			p.fatalf("stable group %s member %s differs from its record", g.id, m.MemberID)
		}
	}
}

func (p *classicProp) checkReplay() {
	fresh, err := replayLog(p.cfg, p.log)
	if err != nil {
		p.fatalf("%v", err)
	}
	if live, replayed := p.c.Dump(), fresh.Dump(); live != replayed {
		p.fatalf("replay mismatch\nlive:\n%s\nreplayed:\n%s", live, replayed)
	}
}

// leaderIdentity is who a leader is: a static member keeps its identity
// (its group.instance.id, the prefix of its member ids) across restarts
// that replace its member id within a generation.
func leaderIdentity(id string) string {
	if strings.HasPrefix(id, "i-") {
		parts := strings.Split(id, "-")
		return strings.Join(parts[:len(parts)-5], "-")
	}
	return id
}
