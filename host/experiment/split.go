package experiment

// Split groups: where streams.assignor.candidate.name names an assignor, the
// groups whose stable bucket (a hash of the group id, 0–99) is below
// streams.assignor.candidate.percent run it as their primary assignor
// (the "candidate" arm); the others keep streams.assignor.name (the
// "control" arm). The bucket depends on the group id alone, so a restart,
// or a reload that does not lower the percentage, never moves a group out
// of the candidate arm, and raising it only adds groups. GET /v1/ab
// compares the two populations on the figures of each group's latest
// target.

import (
	"hash/fnv"
	"math/rand/v2"
	"sort"

	"github.com/coordhost/coordhost/abi/metrics"
	"github.com/coordhost/coordhost/host/config"
)

// Split arms.
const (
	armControl   = "control"
	armCandidate = "candidate"
)

// minGroupsPerArm is the population below which /v1/ab compares nothing.
const minGroupsPerArm = 20

// bootstrapResamples is the number of resamples of each interval.
const bootstrapResamples = 1000

// splitBucket is group's stable place in [0, 100).
func splitBucket(group string) int64 {
	h := fnv.New32a()
	h.Write([]byte(group))
	return int64(h.Sum32() % 100)
}

// split returns g with the candidate as its assignor when group is in the
// candidate arm, and notes the group's arm ("" when g splits nothing).
// Called wherever the host hands a group's settings to core.
func (a *Runtime) Split(group string, g config.Group) config.Group {
	arm := ""
	if g.StreamsAssignorCandidate != "" {
		arm = armControl
		if splitBucket(group) < g.StreamsAssignorCandidatePercent {
			arm = armCandidate
			g.StreamsAssignorName = g.StreamsAssignorCandidate
		}
	}
	if a == nil {
		return g
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if arm == "" {
		delete(a.arms, group)
	} else {
		if _, known := a.arms[group]; !known && len(a.arms) >= maxGroups {
			forgetOne(a.arms)
		}
		a.arms[group] = arm
	}
	return g
}

// ArmSummary is one arm of the split at GET /v1/ab.
type ArmSummary struct {
	Arm string `json:"arm"`
	// Assignors are the primary assignors of the arm's measured groups.
	Assignors []string `json:"assignors"`
	// Groups counts the arm's groups with a measured target.
	Groups int `json:"groups"`
	// Figures are the means over those groups of their latest target's
	// figures, each with a 95 % bootstrap interval; empty with
	// insufficient data.
	Figures []Figure `json:"figures,omitempty"`
}

// Figure is one metric's mean over an arm's groups.
type Figure struct {
	Name string  `json:"name"`
	Mean float64 `json:"mean"`
	Low  float64 `json:"low"`  // 2.5th percentile of the bootstrap means
	High float64 `json:"high"` // 97.5th percentile
}

// SplitReport compares the arms.
type SplitReport struct {
	// Status is "ok", or "insufficient data" while an arm has fewer than
	// 20 measured groups.
	Status string       `json:"status"`
	Arms   []ArmSummary `json:"arms"`
}

// figures are the compared metrics of one report.
var figures = []struct {
	name string
	of   func(r *metrics.Report) float64
}{
	{"tasks_moved", func(r *metrics.Report) float64 { return float64(r.Movement.Moved + r.Movement.New) }},
	{"tasks_moved_process", func(r *metrics.Report) float64 { return float64(r.Movement.MovedProcess) }},
	{"cold_hand_overs", func(r *metrics.Report) float64 { return float64(r.Movement.Cold) }},
	{"active_per_process_spread", func(r *metrics.Report) float64 { return float64(r.Balance.ActivePerProcess.Spread) }},
	{"tasks_standbys_short", func(r *metrics.Report) float64 { return float64(r.Standbys.Short) }},
	{"warmups_open", func(r *metrics.Report) float64 { return float64(r.Warmups.Open) }},
	{"compute_ns", func(r *metrics.Report) float64 { return float64(r.ComputeTime.Nanoseconds()) }},
}

// splitReport compares the arms. Called with a.mu held; nil when no
// group is split.
func (a *Runtime) splitReport() *SplitReport {
	if len(a.arms) == 0 {
		return nil
	}
	groups := make([]string, 0, len(a.arms))
	for group := range a.arms {
		groups = append(groups, group)
	}
	sort.Strings(groups) // a fixed order for the seeded resampling
	byArm := map[string][]*metrics.Report{}
	names := map[string]map[string]bool{armControl: {}, armCandidate: {}}
	for _, group := range groups {
		if g, arm := a.groups[group], a.arms[group]; g != nil && g.Primary != nil && g.Primary.Metrics != nil {
			byArm[arm] = append(byArm[arm], g.Primary.Metrics)
			names[arm][g.Primary.Assignor] = true
		}
	}
	out := &SplitReport{Status: "ok"}
	for _, arm := range []string{armControl, armCandidate} {
		s := ArmSummary{Arm: arm, Groups: len(byArm[arm]), Assignors: []string{}}
		for n := range names[arm] {
			s.Assignors = append(s.Assignors, n)
		}
		sort.Strings(s.Assignors)
		if s.Groups < minGroupsPerArm {
			out.Status = "insufficient data"
		}
		out.Arms = append(out.Arms, s)
	}
	if out.Status != "ok" {
		return out
	}
	for i := range out.Arms {
		reps := byArm[out.Arms[i].Arm]
		for _, f := range figures {
			vs := make([]float64, len(reps))
			for j, r := range reps {
				vs[j] = f.of(r)
			}
			out.Arms[i].Figures = append(out.Arms[i].Figures, bootstrap(f.name, vs))
		}
	}
	return out
}

// bootstrap is the mean of vs with the 95 % percentile interval of the
// means of bootstrapResamples resamples (fixed seed: the same data give
// the same interval).
func bootstrap(name string, vs []float64) Figure {
	mean := func(pick func(int) float64) float64 {
		sum := 0.0
		for i := range vs {
			sum += pick(i)
		}
		return sum / float64(len(vs))
	}
	f := Figure{Name: name, Mean: mean(func(i int) float64 { return vs[i] })}
	rng := rand.New(rand.NewPCG(1, 2))
	means := make([]float64, bootstrapResamples)
	for k := range means {
		means[k] = mean(func(int) float64 { return vs[rng.IntN(len(vs))] })
	}
	sort.Float64s(means)
	f.Low, f.High = means[bootstrapResamples*25/1000], means[bootstrapResamples*975/1000-1]
	return f
}
