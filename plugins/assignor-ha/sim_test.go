package ha_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

// cluster simulates a streams group over rebalance rounds: changelog end
// offsets grow, running actives stay caught up, standbys and warm-ups
// restore at a fixed rate, and state of tasks a process no longer holds
// goes stale. Each round feeds the previous target back as the members'
// current assignment, like a probing rebalance.
type cluster struct {
	procs     []string
	tasks     int32
	end       []int64
	offset    [][]int64 // per process, per task; -1: no local state
	target    []abi.MemberAssignment
	produce   int64 // records appended per task per round
	restore   int64 // records a standby or warm-up restores per round
	accept    int64
	warmups   int32
	standbys  int32
	subs      []abi.Subtopology
	processOf []int32 // member -> process (one member per process)
}

// scaleOut is the simulated scale-out: process 0 runs all 12 stateful tasks;
// process 1 joins with state for half of them within the acceptable lag
// (former standbys); process 2 joins empty; process 3 joins with state far
// behind.
func scaleOut() *cluster {
	c := &cluster{procs: []string{"p0", "p1", "p2", "p3"}, tasks: 12, produce: 100, restore: 10000, accept: 1000, warmups: 2,
		subs: []abi.Subtopology{{ID: "0", Partitions: 6, Stateful: true}, {ID: "1", Partitions: 6, Stateful: true}}}
	c.end = make([]int64, c.tasks)
	c.offset = make([][]int64, len(c.procs))
	for p := range c.offset {
		c.offset[p] = make([]int64, c.tasks)
		c.processOf = append(c.processOf, int32(p))
	}
	c.target = make([]abi.MemberAssignment, len(c.procs))
	for t := int32(0); t < c.tasks; t++ {
		c.end[t] = 20000
		c.offset[0][t] = c.end[t]
		c.offset[1][t], c.offset[2][t], c.offset[3][t] = -1, -1, 4000
		if t%2 == 0 {
			c.offset[1][t] = c.end[t] - 500
		}
		c.target[0].Active = append(c.target[0].Active, t)
	}
	return c
}

func (c *cluster) request() *abi.AssignRequest {
	req := &abi.AssignRequest{GroupID: "sim", Processes: c.procs, Subtopologies: c.subs,
		Configs: abi.Configs{AcceptableRecoveryLag: c.accept, NumWarmupReplicas: c.warmups, NumStandbyReplicas: c.standbys}}
	for i, p := range c.processOf {
		m := abi.Member{ID: fmt.Sprint("m", i), Process: p, Active: c.target[i].Active,
			Standby: c.target[i].Standby, Warmup: c.target[i].Warmup}
		for t := int32(0); t < c.tasks; t++ {
			if o := c.offset[p][t]; o >= 0 && !has32(m.Active, t) {
				m.TaskOffsets = append(m.TaskOffsets, abi.TaskOffset{Task: t, Offset: o})
			}
			if i == 0 { // the host fills in end offsets (ListOffsets)
				m.TaskEndOffsets = append(m.TaskEndOffsets, abi.TaskOffset{Task: t, Offset: c.end[t]})
			}
		}
		req.Members = append(req.Members, m)
	}
	return req
}

func has32(set []int32, t int32) bool {
	for _, x := range set {
		if x == t {
			return true
		}
	}
	return false
}

// lag is process p's lag for task t as the assignor saw it this round.
func (c *cluster) lag(p int, t int32, running bool) int64 {
	if running {
		return 0
	}
	if c.offset[p][t] < 0 {
		return c.end[t]
	}
	return c.end[t] - c.offset[p][t]
}

// simFigures are the outcome of a simulated scale-out.
type simFigures struct {
	rounds, coldHandOvers, moves, warmupsPlaced, balancedAt int
	// lastProbe is the last round whose response asked for a probing
	// rebalance (-1: none).
	lastProbe int
}

// run performs rounds of assign and counts cold hand-overs: an active task
// moved to a process whose lag for it is above the acceptable recovery lag
// while a process within it existed.
func (c *cluster) run(t *testing.T, assign func(*abi.AssignRequest) (*abi.AssignResponse, error), rounds int) simFigures {
	t.Helper()
	f := simFigures{rounds: rounds, balancedAt: -1, lastProbe: -1}
	for r := 0; r < rounds; r++ {
		req := c.request()
		resp, err := assign(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := abi.ValidateAssignment(req, resp); err != nil {
			t.Fatal(err)
		}
		for task := int32(0); task < c.tasks; task++ {
			from, to := c.owner(c.target, task), c.owner(resp.Members, task)
			if from == to {
				continue
			}
			f.moves++
			if c.lag(to, task, false) > c.accept && c.someCaughtUp(task, from) {
				f.coldHandOvers++
			}
		}
		for _, m := range resp.Members {
			f.warmupsPlaced += len(m.Warmup)
		}
		if resp.NextProbeMs >= 0 {
			f.lastProbe = r + 1
		}
		c.target = resp.Members
		if f.balancedAt < 0 && c.balanced() {
			f.balancedAt = r + 1
		}
		c.advance()
	}
	return f
}

func (c *cluster) owner(ms []abi.MemberAssignment, t int32) int {
	for i, m := range ms {
		if has32(m.Active, t) {
			return int(c.processOf[i])
		}
	}
	return -1
}

func (c *cluster) someCaughtUp(t int32, running int) bool {
	for p := range c.procs {
		if c.lag(p, t, p == running) <= c.accept {
			return true
		}
	}
	return false
}

func (c *cluster) balanced() bool {
	lo, hi := int(c.tasks), 0
	for _, m := range c.target {
		lo, hi = min(lo, len(m.Active)), max(hi, len(m.Active))
	}
	return hi-lo <= 1
}

// advance moves time on by one probing interval.
func (c *cluster) advance() {
	for t := int32(0); t < c.tasks; t++ {
		c.end[t] += c.produce
	}
	for i, m := range c.target {
		p := c.processOf[i]
		for _, t := range m.Active {
			c.offset[p][t] = c.end[t] // a running active is caught up
		}
		for _, t := range append(append([]int32(nil), m.Standby...), m.Warmup...) {
			c.offset[p][t] = min(max(c.offset[p][t], 0)+c.restore, c.end[t])
		}
	}
}

// TestScaleOutColdHandOvers: on a scale-out with
// caught-up and lagging processes, the HA assignor makes no cold hand-over
// while Kafka's sticky assignor makes some. Figures: docs/BENCHMARKS.md.
func TestScaleOutColdHandOvers(t *testing.T) {
	const rounds = 30
	var b strings.Builder
	fmt.Fprintf(&b, "\n| standbys | assignor | rounds | cold hand-overs | active moves | warm-ups placed | actives balanced after round | last round asking for a probe |\n|---|---|---|---|---|---|---|---|\n")
	for _, standbys := range []int32{0, 1} {
		figs := map[string]simFigures{}
		for _, a := range []struct {
			name   string
			assign func(*abi.AssignRequest) (*abi.AssignResponse, error)
		}{{"ha", ha.Assign}, {"sticky", sticky.Assign}} {
			c := scaleOut()
			c.standbys = standbys
			f := c.run(t, a.assign, rounds)
			figs[a.name] = f
			fmt.Fprintf(&b, "| %d | %s | %d | %d | %d | %d | %d | %d |\n", standbys, a.name, f.rounds, f.coldHandOvers, f.moves, f.warmupsPlaced, f.balancedAt, f.lastProbe)
		}
		if figs["ha"].coldHandOvers != 0 {
			t.Errorf("standbys=%d: HA made %d cold hand-overs, want 0", standbys, figs["ha"].coldHandOvers)
		}
		if figs["sticky"].coldHandOvers == 0 {
			t.Errorf("standbys=%d: sticky made no cold hand-over: the scenario does not show the difference", standbys)
		}
		if figs["ha"].balancedAt < 0 {
			t.Errorf("standbys=%d: HA never balanced the actives in %d rounds", standbys, rounds)
		}
		// Probing is bounded: once actives and standbys sit on caught-up
		// processes, HA stops asking (well before the last round).
		if last := figs["ha"].lastProbe; last < 0 || last > rounds/2 {
			t.Errorf("standbys=%d: HA still asked for probes in round %d of %d", standbys, last, rounds)
		}
	}
	t.Log(b.String())
}

// BenchmarkAssign times one run of each assignor on the conformance kit's
// 100 members x 1,055 tasks group (history, offsets, one standby), plus the
// lagging scale-out group; compare ha against sticky in the same run.
func BenchmarkAssign(b *testing.B) {
	var big *abi.AssignRequest
	for _, c := range abitest.Cases(false) {
		if c.Name == "100x1000" {
			big = c.Req
		}
	}
	for _, in := range []struct {
		name string
		req  *abi.AssignRequest
	}{{"100x1000", big}, {"scale-out", scaleOut().request()}} {
		for _, a := range []struct {
			name   string
			assign func(*abi.AssignRequest) (*abi.AssignResponse, error)
		}{{"ha", ha.Assign}, {"sticky", sticky.Assign}} {
			b.Run(in.name+"/"+a.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := a.assign(in.req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
