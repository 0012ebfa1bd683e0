package interop

import (
	"bufio"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coordhost/coordhost/interop/proccpu"
)

const (
	// benchAppInstances is the interop app's instances in the app phase.
	benchAppInstances = 2
	// benchAppMeasure is how long the app phase is measured, once the
	// app's output has caught up with its input.
	benchAppMeasure = 30 * time.Second
	// benchAppProtocol is the app's group.protocol in the app phase.
	benchAppProtocol = "streams"
)

// appResult is one side's figures of the app phase in one run.
type appResult struct {
	p50, p99, max time.Duration // produce to the output's read, over the outputs read in the phase
	in, out       int64         // records produced, outputs read in the phase
	// CPU-seconds per 10,000 records produced in the phase: the broker's,
	// and the gateway's (gateway side only), which there also coordinates
	// the app's group and stores its offsets.
	brokerCPU, gwCPU float64
	// txnCommit is the gateway's mean time to answer a TxnOffsetCommit
	// (the offsets of the app's exactly-once commits) in the phase; -1 on
	// the direct side.
	txnCommit time.Duration
}

// appRun runs the interop app (App.java, benchAppInstances instances)
// through addr with LoadGen producing recordsPerSec records a second and
// verifying every output, and measures benchAppMeasure once the output has
// caught up: the latency from each record's produce to the read of its
// output (read_committed, so through the app's exactly-once commits). Every
// output must be exact.
func appRun(t *testing.T, dir, addr, metricsURL, name string, brokerPid, gwPid int) appResult {
	t.Helper()
	appID := "lat-" + name
	tp := topicsOf(appID)
	lg := startLoadGen(t, dir, addr, aggApp, tp, inputKeys, recordsPerSec)
	f := newFleet(t, dir, addr, appID, benchAppInstances, tp)
	f.setApp(aggApp)
	f.leaveOnClose()
	f.startAll(benchAppProtocol, 1)
	if err := f.waitRunning(3 * time.Minute); err != nil {
		t.Fatalf("app %s: %v", name, err)
	}
	if err := lg.caughtUp(aggApp.caughtUp, 3*time.Minute); err != nil {
		t.Fatalf("app %s: %v", name, err)
	}
	if err := lg.phase("measure"); err != nil {
		t.Fatalf("app %s: %v", name, err)
	}
	b0, g0, m0 := proccpu.Seconds(brokerPid), proccpu.Seconds(gwPid), scrapeMetrics(t, metricsURL)
	time.Sleep(benchAppMeasure)
	b1, g1, m1 := proccpu.Seconds(brokerPid), proccpu.Seconds(gwPid), scrapeMetrics(t, metricsURL)
	if err := lg.phase("after"); err != nil {
		t.Fatalf("app %s: %v", name, err)
	}
	res, err := lg.finish()
	if err != nil {
		t.Fatalf("app %s: loadgen: %v\n%s", name, err, lg.p.tail(20))
	}
	if err := f.stopAll(); err != nil {
		t.Fatalf("app %s: stopping the instances: %v", name, err)
	}
	if bad := res.badOutputs(); bad != 0 || res.Missing != 0 {
		t.Fatalf("app %s: outputs not exact: %s, send errors %d, samples %v", name, res.verdict(), res.SendErrors, res.WrongSamples)
	}
	i := slices.IndexFunc(res.Phases, func(p phaseResult) bool { return p.Name == "measure" })
	if i < 0 || res.Phases[i].Out == 0 || res.Phases[i].In == 0 {
		t.Fatalf("app %s: no output read in the measured phase: %+v", name, res.Phases)
	}
	ph := res.Phases[i]
	per10k := float64(ph.In) / 1e4
	// mean is the phase's mean of a total over a count, the total in
	// units of unit.
	mean := func(total, count string, unit time.Duration) time.Duration {
		n := m1[count] - m0[count]
		if metricsURL == "" || n <= 0 {
			return -1
		}
		return time.Duration((m1[total] - m0[total]) / n * float64(unit))
	}
	const txn = `{api="TxnOffsetCommit"}`
	return appResult{
		p50: time.Duration(ph.LatencyP50Ms) * time.Millisecond, p99: time.Duration(ph.LatencyP99Ms) * time.Millisecond,
		max: time.Duration(ph.LatencyMaxMs) * time.Millisecond, in: ph.In, out: ph.Out,
		brokerCPU: (b1 - b0) / per10k, gwCPU: (g1 - g0) / per10k,
		txnCommit: mean("coordhost_kafka_request_seconds_total"+txn, "coordhost_kafka_requests_total"+txn, time.Second),
	}
}

// scrapeMetrics reads coordhost's Prometheus page at url into a map from
// each sample's name and labels to its value; nil for an empty url.
func scrapeMetrics(t *testing.T, url string) map[string]float64 {
	t.Helper()
	if url == "" {
		return nil
	}
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatalf("reading coordhost's metrics: %v", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if strings.HasPrefix(line, "#") || i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("reading coordhost's metrics: %v (%s)", err, resp.Status)
	}
	return out
}

// writeAppReport writes the app phase's table: every run's latencies per
// side, and the medians.
func writeAppReport(sb *strings.Builder, res map[string][]appResult) {
	fmt.Fprintf(sb, "\n## %s\n\n", benchGWClientNames["app"])
	sb.WriteString("| run | records in, out direct | via gateway | p50 direct | p50 gateway | p99 direct | p99 gateway | added p99 | max direct | max gateway | broker CPU-s/10k records direct | via gateway | gateway CPU-s/10k records | gateway's mean TxnOffsetCommit |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var added []time.Duration
	for i := range res["direct"] {
		d, g := res["direct"][i], res["gateway"][i]
		added = append(added, g.p99-d.p99)
		fmt.Fprintf(sb, "| %d | %d, %d | %d, %d | %v | %v | %v | %v | %v | %v | %v | %.3f | %.3f | %.3f | %v |\n", i+1, d.in, d.out, g.in, g.out,
			d.p50, g.p50, d.p99, g.p99, g.p99-d.p99, d.max, g.max, d.brokerCPU, g.brokerCPU, g.gwCPU, g.txnCommit.Round(10*time.Microsecond))
	}
	if base := res["base"]; len(base) > 0 {
		sb.WriteString("\nThe same runs through the base gateway:\n\n| run | p50 | p99 | added p99 | max | broker CPU-s/10k records | gateway CPU-s/10k records | mean TxnOffsetCommit |\n|---|---|---|---|---|---|---|---|\n")
		for i, g := range base {
			fmt.Fprintf(sb, "| %d | %v | %v | %v | %v | %.3f | %.3f | %v |\n", i+1, g.p50, g.p99, g.p99-res["direct"][i].p99, g.max, g.brokerCPU, g.gwCPU, g.txnCommit.Round(10*time.Microsecond))
		}
	}
	med := func(side string, of func(appResult) time.Duration) time.Duration {
		var v []time.Duration
		for _, r := range res[side] {
			v = append(v, of(r))
		}
		return median(v)
	}
	p50 := func(r appResult) time.Duration { return r.p50 }
	p99 := func(r appResult) time.Duration { return r.p99 }
	fmt.Fprintf(sb, "\nmedians over the runs: p50 direct %v, gateway %v; p99 direct %v, gateway %v; added p99 (median of the runs') %v\n",
		med("direct", p50), med("gateway", p50), med("direct", p99), med("gateway", p99), median(added))
}
