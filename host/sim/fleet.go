package sim

import (
	"fmt"
	"html"
	"strings"
)

// A Fleet is several groups' replays against the same assignors: a
// platform team's applications, each its own scenario, and per assignor
// what the whole fleet would have paid. Its JSON, like a Report's, has a
// fixed field order and no maps.
type Fleet struct {
	Groups []*Report     `json:"groups"`
	Totals []FleetTotals `json:"totals"`
}

// FleetTotals sum one assignor's replays over the fleet's groups.
type FleetTotals struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Groups counts the groups whose replay completed; Stopped those
	// whose replay stopped on an error (left out of every sum).
	Groups  int `json:"groups"`
	Stopped int `json:"stopped"`
	// Best counts the groups where this assignor had the fewest
	// unavailable task-seconds of all assignors that completed there
	// (a tie counts for each tied assignor).
	Best             int     `json:"best_unavailable"`
	UnavailableTaskS float64 `json:"unavailable_task_seconds"`
	Rebalances       int     `json:"rebalances"`
	ProbingRounds    int     `json:"probing_rounds"`
	TasksMoved       int     `json:"tasks_moved"`
	Warm             int     `json:"warm_hand_overs"`
	Cold             int     `json:"cold_hand_overs"`
	RecordsRestored  int64   `json:"records_restored"`
	BytesRestored    int64   `json:"bytes_restored,omitempty"`
	// NotSettled counts the groups not settled at their scenario's end;
	// MaxSettleS is the longest settle time of those that were.
	NotSettled int     `json:"not_settled"`
	MaxSettleS float64 `json:"max_settle_s"`
}

// NewFleet sums reports made with the same assignors, in the same order
// (the same names and versions), over distinct scenario names.
func NewFleet(reports []*Report) (*Fleet, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("a fleet needs at least one group")
	}
	f := &Fleet{Groups: reports}
	seen := map[string]bool{}
	for i, r := range reports {
		if seen[r.Scenario] {
			return nil, fmt.Errorf("two groups of the fleet are named %q: each scenario needs its own name", r.Scenario)
		}
		seen[r.Scenario] = true
		if len(r.Assignors) != len(reports[0].Assignors) {
			return nil, fmt.Errorf("group %q has %d assignors, %q has %d", r.Scenario, len(r.Assignors), reports[0].Scenario, len(reports[0].Assignors))
		}
		for j, a := range r.Assignors {
			if first := reports[0].Assignors[j]; a.Name != first.Name || a.Version != first.Version {
				return nil, fmt.Errorf("group %q: assignor %d is %s %s, in %q it is %s %s", r.Scenario, j, a.Name, a.Version, reports[0].Scenario, first.Name, first.Version)
			}
		}
		if i == 0 {
			for _, a := range r.Assignors {
				f.Totals = append(f.Totals, FleetTotals{Name: a.Name, Version: a.Version})
			}
		}
		f.add(r)
	}
	return f, nil
}

func (f *Fleet) add(r *Report) {
	best := -1.0
	for _, a := range r.Assignors {
		if a.Error == "" && (best < 0 || a.UnavailableTaskS < best) {
			best = a.UnavailableTaskS
		}
	}
	for j, a := range r.Assignors {
		ft := &f.Totals[j]
		if a.Error != "" {
			ft.Stopped++
			continue
		}
		t := a.Totals
		ft.Groups++
		if a.UnavailableTaskS == best {
			ft.Best++
		}
		ft.UnavailableTaskS += a.UnavailableTaskS
		ft.Rebalances += t.Rebalances
		ft.ProbingRounds += t.ProbingRounds
		ft.TasksMoved += t.TasksMoved
		ft.Warm += t.Warm
		ft.Cold += t.Cold
		ft.RecordsRestored += t.RecordsRestored
		ft.BytesRestored += t.BytesRestored
		if t.SettleS < 0 {
			ft.NotSettled++
		} else {
			ft.MaxSettleS = max(ft.MaxSettleS, t.SettleS)
		}
	}
}

// JSON encodes the fleet, indented, with a final newline.
func (f *Fleet) JSON() []byte { return indentJSON(f) }

// Failed lists, per group, the assignors whose replay stopped.
func (f *Fleet) Failed() []string {
	var out []string
	for _, r := range f.Groups {
		for _, name := range r.Failed() {
			out = append(out, r.Scenario+": "+name)
		}
	}
	return out
}

// HTML renders the fleet as one static page in the report's look: the
// fleet's totals, then each group's report.
func (f *Fleet) HTML() []byte {
	var b strings.Builder
	esc := html.EscapeString
	names := make([]string, len(f.Groups))
	for i, r := range f.Groups {
		names[i] = r.Scenario
	}
	writeHead(&b, "fleet of "+fmt.Sprint(len(f.Groups))+" groups")
	fmt.Fprintf(&b, "<h1>Fleet of %d groups</h1>\n<p>%s.</p>\n", len(f.Groups), esc(strings.Join(names, ", ")))
	b.WriteString("<h2>Totals over the fleet</h2>\n<table>\n<tr><th>assignor</th><th>version</th><th>groups (stopped)</th><th>fewest unavailable in</th><th>unavailable task-s</th><th>rebalances</th><th>probing rounds</th><th>tasks moved</th><th>warm hand-overs</th><th>cold hand-overs</th><th>records restored</th><th>not settled</th><th>longest settle s</th></tr>\n")
	for i, t := range f.Totals {
		fmt.Fprintf(&b, "<tr><td><span class=\"key\" style=\"background:%s\"></span>%s</td><td>%s</td><td>%d (%d)</td><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td></tr>\n",
			palette[i%len(palette)], esc(t.Name), esc(t.Version), t.Groups, t.Stopped, t.Best, num(t.UnavailableTaskS), t.Rebalances,
			t.ProbingRounds, t.TasksMoved, t.Warm, t.Cold, t.RecordsRestored, t.NotSettled, num(t.MaxSettleS))
	}
	b.WriteString("</table>\n")
	for _, r := range f.Groups {
		fmt.Fprintf(&b, "<hr>\n<h1>Group %s</h1>\n", esc(r.Scenario))
		r.body(&b)
	}
	b.WriteString("</body>\n</html>\n")
	return []byte(b.String())
}
