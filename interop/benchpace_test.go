package interop

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// benchPaceOutEnv names the output file of TestBenchComparePacing.
const benchPaceOutEnv = "COORDHOST_INTEROP_BENCH_PACE_OUT"

// paceRow is one hbload run of TestBenchComparePacing.
type paceRow struct {
	round        int
	server, pace string
	started      time.Time
	res          map[string]hbResult
}

// TestBenchComparePacing (COORDHOST_INTEROP=1 and
// COORDHOST_INTEROP_BENCH_PACE_OUT=file; not in CI) measures what
// hbload's pacing of the fixed-rate phases does to both servers: RUNS
// rounds (COORDHOST_INTEROP_BENCH_RUNS, default 3) of Kafka 4.4 with
// -pace tick, Kafka with -pace even, coordhost (2 workers) with tick and
// with even, each on a fresh server after the 45 s warm-up, 100 groups ×
// 10, phases rate=2000 and rate=20000, sent as the comparison sends them
// (benchOpen). It writes every run's figures and
// the coordhost : Kafka ratios under each pacing to the file. It asserts
// no timing, only steady, error-free heartbeats.
func TestBenchComparePacing(t *testing.T) {
	out := benchOutFile(t, benchPaceOutEnv, "to run the pacing comparison")
	runs := benchRuns(t)
	dir := logDir(t)
	sh := benchShapes[0]
	phases := []string{"rate=2000", "rate=20000"}
	started, loadBefore, commit := time.Now().UTC(), loadAverage(), gitCommit()
	var rows []paceRow
	for round := 1; round <= runs; round++ {
		for _, server := range []string{"kafka", "coordhost"} {
			for _, pace := range []string{"tick", "even"} {
				name := fmt.Sprintf("p%d-%s-%s", round, server[:1], pace)
				t0 := time.Now().UTC()
				var addr string
				var pid int
				var kill func()
				if server == "kafka" {
					b := startBenchBroker(t, dir)
					addr, pid, kill = b.addr, b.proc.cmd.Process.Pid, b.proc.kill
				} else {
					c := startBenchCoordhost(t, dir, 2)
					addr, pid, kill = c.addr, c.proc.cmd.Process.Pid, c.proc.kill
				}
				warmUp(t, dir, name, addr)
				res := runHBLoad(t, dir, name, addr, pid, sh, "-idle", "10s", "-warmup", "5s", "-duration", "10s",
					"-pace", pace, "-open", benchOpen, "-phases", strings.Join(phases, ","))
				kill()
				rows = append(rows, paceRow{round, server, pace, t0, res})
				t.Logf("%s done at %s, loadavg %s", name, time.Now().UTC().Format("15:04:05"), loadAverage())
			}
		}
	}
	md := paceMarkdown(rows, phases, commit, started, loadBefore)
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s\n%s", out, md)
}

func paceMarkdown(rows []paceRow, phases []string, commit string, started time.Time, loadBefore string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Commit %s, %s–%s UTC; rounds of Kafka 4.4 tick, Kafka even, coordhost (2 workers) tick, coordhost even, each a fresh server after a 45 s closed-loop warm-up; 100 groups × 10; 10 s per phase after a 5 s warm-up, idle baseline 10 s; load average at start %s, at end %s.\n\n",
		commit, started.Format("2006-01-02 15:04"), time.Now().UTC().Format("15:04"), loadBefore, loadAverage())
	b.WriteString("| round | server | pace | phase | started UTC | heartbeats/s | p50 ms | p99 ms | server CPU-s / 10k, idle-subtracted | release − due p50 / p99 µs | gap p10 / p50 / p90 µs | burst gaps | load average |\n" +
		"|---|---|---|---|---|---:|---:|---:|---:|---|---|---:|---|\n")
	for _, r := range rows {
		for _, ph := range phases {
			x, ok := r.res[ph]
			if !ok {
				continue
			}
			p := x.Pacing
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.0f | %.2f | %.2f | %.3f | %.0f / %.0f | %.0f / %.0f / %.0f | %.1f %% | %s |\n",
				r.round, r.server, r.pace, ph, r.started.Format("15:04:05"), x.Rate, x.P50us/1000, x.P99us/1000, x.NetCPUPer10k,
				p.LagP50us, p.LagP99us, p.GapP10us, p.GapP50us, p.GapP90us, p.Burst*100, x.LoadAvg)
		}
	}
	get := func(round int, server, pace, ph string) (hbResult, bool) {
		for _, r := range rows {
			if r.round == round && r.server == server && r.pace == pace {
				x, ok := r.res[ph]
				return x, ok
			}
		}
		return hbResult{}, false
	}
	ratio := func(f func(round int) (float64, bool)) string {
		var xs []float64
		var v []string
		for round := 1; ; round++ {
			if _, ok := get(round, "kafka", "tick", phases[0]); !ok {
				break
			}
			if x, ok := f(round); ok {
				xs = append(xs, x)
				v = append(v, fmt.Sprintf("%.2f", x))
			}
		}
		if len(xs) == 0 {
			return "-"
		}
		return fmt.Sprintf("**%.2f** (%s)", medianF(xs), strings.Join(v, ", "))
	}
	net := func(x hbResult) float64 { return x.NetCPUPer10k }
	p99 := func(x hbResult) float64 { return x.P99us }
	pair := func(sa, pa, sb, pb, ph string, f func(hbResult) float64) func(int) (float64, bool) {
		return func(round int) (float64, bool) {
			a, oka := get(round, sa, pa, ph)
			c, okc := get(round, sb, pb, ph)
			if !oka || !okc || f(c) == 0 {
				return 0, false
			}
			return f(a) / f(c), true
		}
	}
	b.WriteString("\nRatios, median over the rounds (each round's own in brackets); CPU idle-subtracted:\n\n" +
		"| phase | pace | CPU / heartbeat coordhost : Kafka | p99 coordhost : Kafka |\n|---|---|---|---|\n")
	for _, ph := range phases {
		for _, pace := range []string{"tick", "even"} {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", ph, pace, ratio(pair("coordhost", pace, "kafka", pace, ph, net)), ratio(pair("coordhost", pace, "kafka", pace, ph, p99)))
		}
	}
	b.WriteString("\nEach server's CPU per heartbeat, even : tick:\n\n| phase | Kafka | coordhost |\n|---|---|---|\n")
	for _, ph := range phases {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", ph, ratio(pair("kafka", "even", "kafka", "tick", ph, net)), ratio(pair("coordhost", "even", "coordhost", "tick", ph, net)))
	}
	return b.String()
}
