package sim

import (
	"fmt"
	"html"
	"strconv"
	"strings"
)

// palette colours the assignors, in order (repeats after eight).
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// HTML renders the report as one static page: tables and inline SVG
// charts, no scripts and nothing fetched from elsewhere. Equal reports
// render to equal bytes.
func (r *Report) HTML() []byte {
	var b strings.Builder
	writeHead(&b, r.Scenario)
	fmt.Fprintf(&b, "<h1>Scenario %s</h1>\n", html.EscapeString(r.Scenario))
	r.body(&b)
	b.WriteString("</body>\n</html>\n")
	return []byte(b.String())
}

// writeHead writes the page's head, its style and the opening body tag.
func writeHead(b *strings.Builder, title string) {
	fmt.Fprintf(b, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>coordhost simulate: %s</title>
<style>
body{font-family:sans-serif;margin:2em;max-width:60em}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right}
th:first-child,td:first-child{text-align:left}
svg text{font-size:11px;font-family:sans-serif}
.key{display:inline-block;width:1em;height:.6em;margin-right:.3em}
</style>
</head>
<body>
`, html.EscapeString(title))
}

// body writes the report under its heading: parameters, totals, charts
// and each assignor's targets.
func (r *Report) body(b *strings.Builder) {
	esc := html.EscapeString
	fmt.Fprintf(b, "<p>Seed %d, %s s simulated in ticks of %d ms, %d tasks, restore rate %d records/s %s.</p>\n",
		r.Seed, num(r.DurationS), r.TickMs, r.Tasks, r.RestorePerS, r.restoreUnit())
	r.totalsTable(b)
	b.WriteString("<h2>Tasks without a caught-up active</h2>\n")
	r.chart(b, func(a AssignorReport) []Point { return a.Unavailable })
	b.WriteString("<h2>Active tasks per process: spread (most − fewest) after each target</h2>\n")
	r.chart(b, func(a AssignorReport) []Point {
		out := make([]Point, 0, len(a.Rebalances))
		for _, rb := range a.Rebalances {
			out = append(out, Point{AtS: rb.AtS, Tasks: rb.Balance.ActivePerProcess.Spread})
		}
		return out
	})
	for i, a := range r.Assignors {
		fmt.Fprintf(b, "<h2><span class=\"key\" style=\"background:%s\"></span>%s (%s): targets</h2>\n",
			palette[i%len(palette)], esc(a.Name), esc(a.Version))
		if a.Error != "" {
			fmt.Fprintf(b, "<p><strong>Stopped:</strong> %s</p>\n", esc(a.Error))
		}
		b.WriteString("<table>\n<tr><th>at s</th><th>epoch</th><th>reasons</th><th>members</th><th>moved</th><th>warm</th><th>cold</th><th>warm-ups</th><th>active spread</th></tr>\n")
		for _, rb := range a.Rebalances {
			reasons := strings.Join(rb.Reasons, " ")
			moves := fmt.Sprintf("<td>%d</td><td>%d</td><td>%d</td>", rb.TasksMoved, rb.Movement.Warm, rb.Movement.Cold)
			if rb.Baseline { // the starting point moves nothing
				reasons += " (baseline)"
				moves = "<td>–</td><td>–</td><td>–</td>"
			}
			fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td><td>%s</td><td>%d</td>%s<td>%d</td><td>%d</td></tr>\n",
				num(rb.AtS), rb.Epoch, esc(reasons), rb.Members, moves, rb.Warmups.Open, rb.Balance.ActivePerProcess.Spread)
		}
		b.WriteString("</table>\n")
	}
}

func (r *Report) totalsTable(b *strings.Builder) {
	b.WriteString("<h2>Totals after the baseline</h2>\n<table>\n<tr><th>assignor</th><th>version</th><th>rebalances</th><th>probing rounds (unchanged)</th><th>tasks moved</th><th>warm hand-overs</th><th>cold hand-overs</th><th>unavailable task-s</th><th>most unavailable at once</th><th>max active spread</th><th>records restored</th><th>settled, s after the last event</th></tr>\n")
	for i, a := range r.Assignors {
		t := a.Totals
		name := html.EscapeString(a.Name)
		if a.Error != "" {
			name += " (stopped)"
		}
		fmt.Fprintf(b, "<tr><td><span class=\"key\" style=\"background:%s\"></span>%s</td><td>%s</td><td>%d</td><td>%d (%d)</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td></tr>\n",
			palette[i%len(palette)], name, html.EscapeString(a.Version), t.Rebalances, t.ProbingRounds, t.ProbesUnchanged, t.TasksMoved,
			t.Warm, t.Cold, num(a.UnavailableTaskS), t.MaxUnavailable, t.MaxActiveSpread, t.RecordsRestored, settle(t))
	}
	b.WriteString("</table>\n")
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH         = 720, 220
	padL, padR, padT, padB = 40, 10, 10, 25
)

// chart draws one step line per assignor over the scenario's duration.
func (r *Report) chart(b *strings.Builder, series func(AssignorReport) []Point) {
	top := 1
	for _, a := range r.Assignors {
		for _, p := range series(a) {
			top = max(top, p.Tasks)
		}
	}
	x := func(s float64) float64 { return padL + s/r.DurationS*(chartW-padL-padR) }
	y := func(v int) float64 { return chartH - padB - float64(v)/float64(top)*(chartH-padT-padB) }
	fmt.Fprintf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(b, "<path d=\"M%s %s V%s H%s\" fill=\"none\" stroke=\"#888\"/>\n", num(padL), num(padT), num(y(0)), num(x(r.DurationS)))
	fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"end\">%d</text>\n", num(padL-4), num(y(top)+4), top)
	fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"end\">0</text>\n", num(padL-4), num(y(0)+4))
	fmt.Fprintf(b, "<text x=\"%s\" y=\"%d\">0 s</text>\n", num(padL), chartH-8)
	fmt.Fprintf(b, "<text x=\"%s\" y=\"%d\" text-anchor=\"end\">%s s</text>\n", num(x(r.DurationS)), chartH-8, num(r.DurationS))
	for i, a := range r.Assignors {
		ps := series(a)
		if len(ps) == 0 {
			continue
		}
		var d strings.Builder
		fmt.Fprintf(&d, "M%s %s", num(x(ps[0].AtS)), num(y(ps[0].Tasks)))
		for _, p := range ps[1:] {
			fmt.Fprintf(&d, " H%s V%s", num(x(p.AtS)), num(y(p.Tasks)))
		}
		fmt.Fprintf(&d, " H%s", num(x(r.DurationS)))
		// Offset each line by a pixel so equal lines stay visible.
		fmt.Fprintf(b, "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" transform=\"translate(0 %d)\"><title>%s</title></path>\n",
			d.String(), palette[i%len(palette)], -i, html.EscapeString(a.Name))
	}
	b.WriteString("</svg>\n")
}

// num formats a number with at most two decimals, the same on every run.
func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// settle is Totals.SettleS for a table: "not settled" when the group was
// not settled at the end.
func settle(t Totals) string {
	if t.SettleS < 0 {
		return "not settled"
	}
	return num(t.SettleS)
}
