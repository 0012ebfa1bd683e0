// Package experiment compares assignors on live groups and remembers what
// they did: the rebalance history of every group (history.go), shadow
// runs of other assignors on the same input (shadow.go), groups split
// between a control and a candidate assignor (split.go), and the A/B
// report over them. The host wires one Runtime into its event loop and
// its admin routes; the Runtime never changes what core installs.
//
// The A/B report: per group, the latest figures (abi/metrics) of the
// primary assignor's target and of each shadow's, side by side at GET
// /v1/ab; per assignor and role, totals exported on /metrics. Every
// figure of an arm, primary or shadow, is measured against the group's
// actual assignment when the run started (the members' current tasks in
// the run's input): a shadow's movement is what it would have changed
// from there.
package experiment

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/metrics"
	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/shadowproc"
)

// Arm roles.
const (
	rolePrimary = "primary"
	roleShadow  = "shadow"
)

// arm names who computed a result.
type arm struct {
	Assignor string `json:"assignor"`
	Role     string `json:"role"`
	Version  string `json:"version,omitempty"`
	Epoch    int32  `json:"epoch"`
}

// ArmResult is the latest result of one assignor for one group.
type ArmResult struct {
	arm
	Time time.Time `json:"time"`
	// Metrics is nil when the run failed.
	Metrics *metrics.Report `json:"metrics,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// GroupAB is one group's latest primary and shadow results.
type GroupAB struct {
	Group string `json:"group"`
	// Arm is the group's arm of a split ("control" or "candidate"; ""
	// when its settings split nothing).
	Arm     string       `json:"arm,omitempty"`
	Primary *ArmResult   `json:"primary,omitempty"`
	Shadows []*ArmResult `json:"shadows"`
}

// assignorStats are one assignor's totals in one role, over all groups.
type assignorStats struct {
	Assignor string `json:"assignor"`
	Role     string `json:"role"`
	Runs     int64  `json:"runs"`
	Failures int64  `json:"failures"`
	// Dropped counts shadow runs dropped because the queue was full.
	Dropped int64 `json:"dropped"`
	// Crashes counts shadow runs during which the shadow process crashed
	// or hung (it was killed and started again; the runs are failures).
	Crashes int64 `json:"process_crashes"`
	// Sums of the figures of the measured runs.
	Moved         int64 `json:"tasks_moved"` // moved + new active tasks
	MovedProcess  int64 `json:"tasks_moved_process"`
	Cold          int64 `json:"cold_hand_overs"`
	Warm          int64 `json:"warm_hand_overs"`
	StandbysShort int64 `json:"tasks_standbys_short"`
	WarmupsOpen   int64 `json:"warmups_open"`
	ActiveSpread  int64 `json:"active_per_process_spread"`
	ComputeNanos  int64 `json:"compute_ns"`
}

// Runtime holds the history, the shadow queues and the comparisons. A nil
// *Runtime (a loop built by hand in tests) ignores every call.
type Runtime struct {
	log     *slog.Logger
	asg     *assign.Registry
	now     func() time.Time
	ctx     context.Context
	wg      *sync.WaitGroup
	history *targetHistory
	inputs  bool // Config.HistoryInputs
	slots   chan struct{}

	procOnce sync.Once
	proc     *shadowproc.Proc // shadow.go

	mu     sync.Mutex
	queues map[string]*shadowQueue
	groups map[string]*GroupAB
	stats  map[[2]string]*assignorStats // by assignor, role
	arms   map[string]string            // split arm by group (split.go)
}

// Config is what a Runtime needs from the host.
type Config struct {
	Log *slog.Logger
	// Assignors runs the shadows and names each assignor's version; nil:
	// shadow runs are ignored.
	Assignors *assign.Registry
	// HistoryTargets is how many targets the history keeps per group
	// (0: DefaultHistoryTargets).
	HistoryTargets int
	// HistoryInputs keeps each target's assignor lag input in the history
	// (admin.history.inputs): what a simulation needs to replay the
	// assignor's decisions, at several hundred bytes a target.
	HistoryInputs bool
	// Metrics, when set, gets the per-assignor totals.
	Metrics *admin.Metrics
	// Now is the clock of the recorded results (nil: time.Now).
	Now func() time.Time
}

// New is a Runtime whose goroutines (shadow queues, the shadow process)
// stop with ctx and are waited for with wg.
func New(ctx context.Context, wg *sync.WaitGroup, cfg Config) *Runtime {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	a := &Runtime{log: cfg.Log, asg: cfg.Assignors, now: cfg.Now, ctx: ctx, wg: wg, inputs: cfg.HistoryInputs,
		history: newTargetHistory(cfg.HistoryTargets, cfg.Log),
		slots:   make(chan struct{}, shadowSlots), queues: map[string]*shadowQueue{},
		groups: map[string]*GroupAB{}, stats: map[[2]string]*assignorStats{}, arms: map[string]string{}}
	if cfg.Metrics != nil {
		a.registerMetrics(cfg.Metrics)
	}
	return a
}

// Observe hands a committed batch's events to the history.
func (a *Runtime) Observe(events []core.Event) {
	if a == nil {
		return
	}
	a.history.observe(events)
	for _, e := range events {
		if e.Kind == core.EventGroupDeleted {
			a.mu.Lock()
			delete(a.groups, e.Group)
			a.mu.Unlock()
		}
	}
}

// Reasons returns (and forgets) the reasons gathered for group's next run.
func (a *Runtime) Reasons(group string) []Reason {
	if a == nil {
		return nil
	}
	return a.history.take(group)
}

// Installed notes the target t computed for group because of reasons (as
// Reasons returned them when the run was dispatched); it joins the
// history once core's events say the target was installed. Called where
// core's output for the assignor result is made.
func (a *Runtime) Installed(group string, t *Target, reasons []Reason, events []core.Event) {
	if a != nil {
		a.history.computed(group, t, reasons, events)
	}
}

// Primary measures the primary's result on a worker and returns the
// history entry it becomes once core installs it (nil when it cannot be
// measured).
func (a *Runtime) Primary(run core.AssignorRun, req *abi.AssignRequest, resp *abi.AssignResponse, took time.Duration) *Target {
	if a == nil {
		return nil
	}
	who := arm{Assignor: run.Assignor, Role: rolePrimary, Version: a.asg.Version(run.Assignor), Epoch: run.Epoch}
	rep, err := metrics.Measure(req, resp, metrics.Options{ComputeTime: took})
	a.record(run.Group, who, rep, err)
	if err != nil {
		return nil
	}
	t := newTarget(run, req, resp, who.Version, rep, a.now())
	if a.inputs {
		t.keepInputs(req)
	}
	return t
}

// PrimaryFailed records that the primary's run for run failed with err.
func (a *Runtime) PrimaryFailed(run core.AssignorRun, err error) {
	a.record(run.Group, arm{Assignor: run.Assignor, Role: rolePrimary, Epoch: run.Epoch}, metrics.Report{}, err)
}

// record keeps a group's latest result of who and adds it to the totals.
func (a *Runtime) record(group string, who arm, rep metrics.Report, err error) {
	if a == nil {
		return
	}
	res := &ArmResult{arm: who, Time: a.now().UTC()}
	if err != nil {
		res.Error = err.Error()
	} else {
		res.Metrics = &rep
	}
	a.count(who.Assignor, who.Role, func(s *assignorStats) {
		s.Runs++
		if err != nil {
			s.Failures++
			return
		}
		mv := rep.Movement
		s.Moved += int64(mv.Moved + mv.New)
		s.MovedProcess += int64(mv.MovedProcess)
		s.Cold += int64(mv.Cold)
		s.Warm += int64(mv.Warm)
		s.StandbysShort += int64(rep.Standbys.Short)
		s.WarmupsOpen += int64(rep.Warmups.Open)
		s.ActiveSpread += int64(rep.Balance.ActivePerProcess.Spread)
		s.ComputeNanos += rep.ComputeTime.Nanoseconds()
	})
	a.mu.Lock()
	defer a.mu.Unlock()
	g := a.groups[group]
	if g == nil {
		if len(a.groups) >= maxGroups {
			forgetOne(a.groups)
		}
		g = &GroupAB{Group: group}
		a.groups[group] = g
	}
	if who.Role == rolePrimary {
		g.Primary = res
		return
	}
	for i, s := range g.Shadows {
		if s.Assignor == who.Assignor {
			g.Shadows[i] = res
			return
		}
	}
	g.Shadows = append(g.Shadows, res)
	sort.Slice(g.Shadows, func(i, j int) bool { return g.Shadows[i].Assignor < g.Shadows[j].Assignor })
}

// count applies fn to the totals of assignor in role.
func (a *Runtime) count(assignor, role string, fn func(*assignorStats)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := [2]string{assignor, role}
	s := a.stats[k]
	if s == nil {
		s = &assignorStats{Assignor: assignor, Role: role}
		a.stats[k] = s
	}
	fn(s)
}

// ABReport is GET /v1/ab.
type ABReport struct {
	// Note says how the figures are measured.
	Note      string          `json:"note"`
	Groups    []GroupAB       `json:"groups"`
	Assignors []assignorStats `json:"assignors"`
	// Split compares the groups that run a candidate assignor with the
	// others; absent when no group is split.
	Split *SplitReport `json:"split,omitempty"`
}

// abNote is the /v1/ab note.
const abNote = "every figure is measured against the group's actual assignment when the run started; a shadow's movement is what it would have changed from there"

// Report is a snapshot for /v1/ab, groups and assignors sorted.
func (a *Runtime) Report() ABReport {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := ABReport{Note: abNote, Groups: make([]GroupAB, 0, len(a.groups)), Split: a.splitReport()}
	for _, g := range a.groups {
		c := GroupAB{Group: g.Group, Arm: a.arms[g.Group], Primary: g.Primary, Shadows: append([]*ArmResult{}, g.Shadows...)}
		out.Groups = append(out.Groups, c)
	}
	sort.Slice(out.Groups, func(i, j int) bool { return out.Groups[i].Group < out.Groups[j].Group })
	out.Assignors = a.totalsLocked()
	return out
}

// totals are the per-assignor totals, sorted by assignor and role.
func (a *Runtime) totals() []assignorStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.totalsLocked()
}

func (a *Runtime) totalsLocked() []assignorStats {
	out := make([]assignorStats, 0, len(a.stats))
	for _, s := range a.stats {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		return x.Assignor < y.Assignor || x.Assignor == y.Assignor && x.Role < y.Role
	})
	return out
}

// registerMetrics exports the per-assignor totals, labelled by assignor
// and role (never by group).
func (a *Runtime) registerMetrics(m *admin.Metrics) {
	fam := func(name, help string, v func(s assignorStats) int64) {
		m.GaugeFamily(name, help, func() []admin.Series {
			var out []admin.Series
			for _, s := range a.totals() {
				out = append(out, admin.Series{Labels: [][2]string{{"assignor", s.Assignor}, {"role", s.Role}}, Value: float64(v(s))})
			}
			return out
		})
	}
	fam("coordhost_ab_runs_total", "Assignor runs measured, by assignor and role (primary or shadow).", func(s assignorStats) int64 { return s.Runs })
	fam("coordhost_ab_failures_total", "Assignor runs that failed or could not be measured, by assignor and role.", func(s assignorStats) int64 { return s.Failures })
	fam("coordhost_ab_dropped_total", "Shadow runs dropped because the shadow's queue was full.", func(s assignorStats) int64 { return s.Dropped })
	fam("coordhost_ab_shadow_process_crashes_total", "Shadow runs during which the shadow process crashed or hung and was killed.", func(s assignorStats) int64 { return s.Crashes })
	fam("coordhost_ab_tasks_moved_total", "Active tasks a target moved or newly placed, against the group's actual assignment.", func(s assignorStats) int64 { return s.Moved })
	fam("coordhost_ab_tasks_moved_process_total", "Active tasks a target moved to another process.", func(s assignorStats) int64 { return s.MovedProcess })
	fam("coordhost_ab_cold_hand_overs_total", "Stateful tasks a target made active on a process without their state.", func(s assignorStats) int64 { return s.Cold })
	fam("coordhost_ab_warm_hand_overs_total", "Stateful tasks a target made active on a process with caught-up state.", func(s assignorStats) int64 { return s.Warm })
	fam("coordhost_ab_tasks_standbys_short_total", "Stateful tasks with fewer standbys than possible, summed over targets.", func(s assignorStats) int64 { return s.StandbysShort })
	fam("coordhost_ab_warmups_open_total", "Warm-up replicas targets opened, summed over targets.", func(s assignorStats) int64 { return s.WarmupsOpen })
	fam("coordhost_ab_active_spread_total", "Spread of active tasks per process (max - min), summed over targets.", func(s assignorStats) int64 { return s.ActiveSpread })
	fam("coordhost_ab_compute_nanoseconds_total", "Time the assignor took, summed over runs.", func(s assignorStats) int64 { return s.ComputeNanos })
}
