package interop

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The wire comparison of streams heartbeats (`make bench-compare`,
// docs/BENCHMARKS.md): coordhost and a real Apache Kafka 4.4 broker, each
// in its own process, loaded by the separate hbload process. The names
// start with COORDHOST_INTEROP so coordhost's config does not read them
// (childEnv).
const (
	benchOutEnv   = "COORDHOST_INTEROP_BENCH_OUT"
	benchRunsEnv  = "COORDHOST_INTEROP_BENCH_RUNS"
	benchPhaseEnv = "COORDHOST_INTEROP_BENCH_PHASE"
	benchPinEnv   = "COORDHOST_INTEROP_BENCH_PIN"
)

// benchPace is hbload's pacing of the fixed-rate phases: request i due at
// start + i/rate and sent then (not in a burst every millisecond).
const benchPace = "even"

// benchOpen is hbload's sender of the fixed-rate phases: one thread that
// writes each request at its due time and reads every answer over raw
// sockets, cheap enough that the generator does not take from the broker
// the CPU the broker needs to serve 80 % of its own closed-loop rate
// (docs/BENCHMARKS.md, "A cheaper sender for the fixed rates").
const benchOpen = "raw"

// kafkaJVMFlags are the JVM options Kafka's own start script
// (kafka-run-class.sh, kafka-server-start.sh) gives a broker by default —
// full JIT and G1 — not the suite's small C1-only JVM, so the broker's CPU
// time per request is what a deployed broker spends.
var kafkaJVMFlags = []string{"-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true"}

// benchShape is one load shape: groups of members, one task per member.
type benchShape struct {
	name            string
	groups, members int
}

var benchShapes = []benchShape{{"100 groups × 10", 100, 10}, {"1 group × 1000", 1, 1000}}

// hbResult is one phase's RESULT line of hbload.
type hbResult struct {
	Phase        string   `json:"phase"`
	TargetRate   float64  `json:"targetRate"`
	Pace         string   `json:"pace"`
	Pacing       hbPacing `json:"pacing"`
	Seconds      float64  `json:"seconds"`
	Heartbeats   int64    `json:"heartbeats"`
	Rate         float64  `json:"rate"`
	P50us        float64  `json:"p50us"`
	P99us        float64  `json:"p99us"`
	P999us       float64  `json:"p999us"`
	Errors       int64    `json:"errors"`
	Changed      int64    `json:"changed"`
	ServerCPU    float64  `json:"serverCpuSec"`
	IdleCPURate  float64  `json:"idleCpuPerSec"`
	CPUPer10k    float64  `json:"cpuPer10k"`
	NetCPUPer10k float64  `json:"netCpuPer10k"`
	LoadCPU      float64  `json:"loadgenCpuSec"`
	LoadAvg      string   `json:"loadavg"`
	// The server's context switches per heartbeat, all and involuntary
	// (hbload's Result); nil when not read.
	Switches    *float64 `json:"serverSwitchesPerHb"`
	InvSwitches *float64 `json:"serverInvoluntarySwitchesPerHb"`
	// The share of the heartbeats coordhost's own poller answered; nil
	// for Kafka, or when not read.
	PollerShare *float64 `json:"pollerServedShare"`
}

// switches renders a phase's server context switches per heartbeat, the
// involuntary ones in brackets.
func (r hbResult) switches() string {
	if r.Switches == nil || r.InvSwitches == nil {
		return "-"
	}
	if r.PollerShare != nil {
		return fmt.Sprintf("%s; poller %.0f %%", fmtSwitches(*r.Switches, *r.InvSwitches), 100**r.PollerShare)
	}
	return fmtSwitches(*r.Switches, *r.InvSwitches)
}

// lag renders how late an open-loop phase's requests left hbload, p99
// and max in ms, "-" for a closed loop. A phase's latencies count from
// each request's due time, so a sender that fell behind shows here and
// in the tail of both servers alike.
func (r hbResult) lag() string {
	if !strings.HasPrefix(r.Phase, "rate=") {
		return "-"
	}
	return fmt.Sprintf("%.2f / %.2f", r.Pacing.LagP99us/1000, r.Pacing.LagMaxUs/1000)
}

// fmtSwitches renders context switches per heartbeat, the involuntary
// ones in brackets.
func fmtSwitches(all, involuntary float64) string {
	return fmt.Sprintf("%.2f (%.2f)", all, involuntary)
}

// hbPacing is how an open-loop phase's requests left hbload: release
// minus due time and gaps between releases, in µs; Burst is the fraction
// of gaps under a tenth of 1/rate.
type hbPacing struct {
	LagP50us float64 `json:"lagP50us"`
	LagP99us float64 `json:"lagP99us"`
	LagMaxUs float64 `json:"lagMaxUs"`
	GapP10us float64 `json:"gapP10us"`
	GapP50us float64 `json:"gapP50us"`
	GapP90us float64 `json:"gapP90us"`
	Burst    float64 `json:"burstFrac"`
}

var hbloadBuild struct {
	once sync.Once
	bin  string
	err  error
}

// hbloadBinary builds ./interop/hbload once per test binary.
func hbloadBinary(t *testing.T) string {
	t.Helper()
	hbloadBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "interop-hbload-")
		if err != nil {
			hbloadBuild.err = err
			return
		}
		bin := filepath.Join(dir, "hbload")
		if out, err := exec.Command("go", "build", "-o", bin, "./hbload").CombinedOutput(); err != nil {
			hbloadBuild.err = fmt.Errorf("go build ./interop/hbload: %v\n%s", err, out)
			return
		}
		hbloadBuild.bin = bin
	})
	if hbloadBuild.err != nil {
		t.Fatal(hbloadBuild.err)
	}
	return hbloadBuild.bin
}

// runHBLoad runs hbload against addr, measuring the CPU of process pid,
// and returns its results by phase name. It fails the test on any
// heartbeat error or on a response that changed the group in a measured
// phase: the phases must measure steady heartbeats.
func runHBLoad(t *testing.T, dir, name, addr string, pid int, sh benchShape, args ...string) map[string]hbResult {
	t.Helper()
	args = append([]string{"-bootstrap", addr, "-pid", strconv.Itoa(pid), "-prefix", name,
		"-groups", strconv.Itoa(sh.groups), "-members", strconv.Itoa(sh.members)}, args...)
	p := pinnedTo(benchLoadCPUs, func() *proc { return startProc(t, "hbload-"+name, dir, hbloadBinary(t), args...) })
	select {
	case <-p.done:
	case <-time.After(10 * time.Minute):
		t.Fatalf("hbload %s did not finish in 10m\n%s", name, p.tail(40))
	}
	if p.err != nil {
		t.Fatalf("hbload %s: %v\n%s", name, p.err, p.tail(40))
	}
	out := map[string]hbResult{}
	for _, l := range p.grep("RESULT ") {
		var r hbResult
		if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "RESULT ")), &r); err != nil {
			t.Fatalf("hbload %s: %q: %v", name, l, err)
		}
		if r.Heartbeats == 0 || r.Errors > 0 || r.Changed > 0 {
			t.Errorf("hbload %s phase %s: %d heartbeats, %d errors, %d changed (want steady, error-free heartbeats)", name, r.Phase, r.Heartbeats, r.Errors, r.Changed)
		}
		out[r.Phase] = r
	}
	t.Logf("%s: %s", name, strings.Join(p.grep("IDLE ", "STEADY "), "; "))
	return out
}

// The comparison's streams session timeout and heartbeat interval are
// Kafka's defaults on both sides (the suite's are shorter): a session long
// enough for hbload's idle window with the members still joined. The
// closed-loop and fixed-rate phases do not follow the interval.
const (
	benchSessionMs  = 45000
	benchIntervalMs = 5000
)

// startBenchBroker is startBroker with Kafka's default JVM options, the
// comparison's session timeout and heartbeat interval, and the group
// coordinator spread over 50 __consumer_offsets partitions (Kafka's
// default; coordhost's default is 50 partitions too).
func startBenchBroker(t *testing.T, dir string, extra ...map[string]string) *broker {
	t.Helper()
	saved := jvmFlags
	jvmFlags = kafkaJVMFlags
	defer func() { jvmFlags = saved }()
	port := freePort(t)
	props := map[string]string{
		"listeners":                           fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
		"advertised.listeners":                fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
		"offsets.topic.num.partitions":        "50",
		"group.streams.session.timeout.ms":    fmt.Sprint(benchSessionMs),
		"group.streams.heartbeat.interval.ms": fmt.Sprint(benchIntervalMs),
	}
	for _, e := range extra {
		maps.Copy(props, e)
	}
	return launchBroker(t, dir, port, props)
}

// startBenchCoordhost starts coordhost on its embedded data plane with
// benchCoordhostFlags, the given number of runtime workers, and any extra
// flags.
func startBenchCoordhost(t *testing.T, dir string, workers int, extra ...string) *coordhost {
	t.Helper()
	saved := coordhostFlags
	coordhostFlags = benchCoordhostFlags()
	defer func() { coordhostFlags = saved }()
	return startCoordhost(t, dir, "", append([]string{fmt.Sprintf("--runtime.workers=%d", workers)}, extra...)...)
}

// benchCoordhostFlags are the suite's coordhost flags (the broker's
// delays and standbys) with the comparison's session timeout and
// heartbeat interval for every streams member, as startBenchBroker gives
// the broker (Kafka's rule: no shorter interval for a member waiting for
// unreleased tasks, nor for a group in a roll), and info-level logging.
func benchCoordhostFlags() []string {
	flags := slices.DeleteFunc(slices.Clone(coordhostFlags), func(f string) bool {
		return strings.HasPrefix(f, "--log.level=") || strings.HasPrefix(f, "--groups.defaults.streams.session.timeout.ms=") ||
			strings.HasPrefix(f, "--groups.defaults.streams.heartbeat.interval.ms=") ||
			strings.HasPrefix(f, "--groups.defaults.streams.unreleased.heartbeat.interval.ms=") ||
			strings.HasPrefix(f, "--groups.defaults.streams.rebalance.heartbeat.interval.ms=")
	})
	return append(flags, "--log.level=info",
		fmt.Sprintf("--groups.defaults.streams.session.timeout.ms=%d", benchSessionMs),
		fmt.Sprintf("--groups.defaults.streams.heartbeat.interval.ms=%d", benchIntervalMs))
}

// warmUp runs 100 × 10 steady heartbeats, closed loop, for 45 s on a
// fresh server before anything is measured on it, in groups of their own:
// a fresh broker's JIT needs it — three passes of the 100 × 10 shape, one
// after the other on one broker, measured 1.48, 0.88 and 0.70 CPU-s per
// 10k heartbeats (docs/BENCHMARKS.md). coordhost gets the same, so both
// sides see the same sequence.
func warmUp(t *testing.T, dir, name, addr string) {
	t.Helper()
	runHBLoad(t, dir, name+"-jit", addr, 0, benchShapes[0], "-idle", "0", "-warmup", "0", "-duration", "45s", "-phases", "closed")
}

// benchRow is one hbload run's results: which server, which round.
type benchRow struct {
	server string // "kafka", "coordhost w=2", "coordhost w=1"
	run    int
	shape  benchShape
	res    map[string]hbResult
}

// TestBenchCompare (`make bench-compare`) alternates, RUNS times, a fresh
// Kafka 4.4 broker, coordhost with 2 runtime workers and coordhost with 1,
// so all three see the same machine noise. On each, after a 45 s warm-up
// (warmUp), it runs hbload for each
// shape: closed loop, a fixed 2,000/s and a fixed 80 % of the Kafka
// broker's closed-loop rate of the same round and shape (coordhost with 1
// worker: closed loop only). It writes the tables of docs/BENCHMARKS.md to
// $COORDHOST_INTEROP_BENCH_OUT. It asserts no timing, only that every
// measured heartbeat was steady and error-free.
func TestBenchCompare(t *testing.T) {
	out := benchOutFile(t, benchOutEnv, "(make bench-compare) to run the comparison")
	runs, phase := benchRuns(t), "10s"
	if v := os.Getenv(benchPhaseEnv); v != "" {
		phase = v
	}
	dir := logDir(t)
	serverCPUs, loadCPUs := benchPinning(t)
	benchLoadCPUs = loadCPUs
	defer func() { benchLoadCPUs = "" }()
	started, loadBefore, commit := time.Now().UTC(), loadAverage(), gitCommit()
	hbArgs := []string{"-idle", "10s", "-warmup", "5s", "-duration", phase, "-pace", benchPace, "-open", benchOpen}
	var rows []benchRow
	for run := 1; run <= runs; run++ {
		kafkaClosed := map[string]float64{}
		b := pinnedTo(serverCPUs, func() *broker { return startBenchBroker(t, dir) })
		warmUp(t, dir, fmt.Sprintf("k%d", run), b.addr)
		for i, sh := range benchShapes {
			name := fmt.Sprintf("k%d-%d", run, i)
			res := runHBLoad(t, dir, name, b.addr, b.proc.cmd.Process.Pid, sh, append(hbArgs, "-phases", "closed,rate=2000,rate=0.8x")...)
			kafkaClosed[sh.name] = res["closed"].Rate
			rows = append(rows, benchRow{"kafka", run, sh, res})
		}
		b.proc.kill()
		for _, w := range []int{2, 1} {
			c := pinnedTo(serverCPUs, func() *coordhost { return startBenchCoordhost(t, dir, w) })
			warmUp(t, dir, fmt.Sprintf("c%d-w%d", run, w), c.addr)
			for i, sh := range benchShapes {
				name := fmt.Sprintf("c%d-w%d-%d", run, w, i)
				phases := "closed"
				if w == 2 {
					phases = fmt.Sprintf("closed,rate=2000,rate=%.0f", 0.8*kafkaClosed[sh.name])
				}
				res := runHBLoad(t, dir, name, c.addr, c.proc.cmd.Process.Pid, sh, append(hbArgs, "-phases", phases, "-metrics", c.metricsURL())...)
				if k := fmt.Sprintf("rate=%.0f", 0.8*kafkaClosed[sh.name]); w == 2 {
					res["rate=0.8x"] = res[k] // the row shows the rate itself
					delete(res, k)
				}
				rows = append(rows, benchRow{fmt.Sprintf("coordhost w=%d", w), run, sh, res})
			}
			c.proc.kill()
		}
	}
	pinning := "not pinned"
	if serverCPUs != "" {
		pinning = fmt.Sprintf("each server pinned to CPUs %s and hbload to CPUs %s (taskset -c)", serverCPUs, loadCPUs)
	}
	md := benchMarkdown(rows, runs, phase, commit, pinning, started, loadBefore)
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s\n%s", out, md)
}

// benchOutFile skips the test unless the interop suite runs and env names
// the file to write its tables to, which it returns.
func benchOutFile(t *testing.T, env, why string) string {
	t.Helper()
	needInterop(t)
	out := os.Getenv(env)
	if out == "" {
		t.Skipf("set %s %s", env, why)
	}
	return out
}

// benchLoadCPUs is the CPU list runHBLoad pins hbload to ("": none).
var benchLoadCPUs string

// benchPinning is, with COORDHOST_INTEROP_BENCH_PIN=1, the CPUs each
// server is pinned to and those the load generator is pinned to: the
// first half of the CPUs this process may run on and the rest, so both
// servers get the same cores and the generator competes with neither.
// Unset, nothing is pinned; set without taskset or with fewer than two
// CPUs, the test fails.
func benchPinning(t *testing.T) (server, load string) {
	t.Helper()
	switch v := os.Getenv(benchPinEnv); v {
	case "", "0":
		return "", ""
	case "1":
	default:
		t.Fatalf("%s=%q: want 1 or 0", benchPinEnv, v)
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Fatalf("%s=1 needs taskset (util-linux): %v", benchPinEnv, err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatalf("%s=1: the CPUs this process may use: %v", benchPinEnv, err)
	}
	var cpus []string
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, strconv.Itoa(i))
		}
	}
	if len(cpus) < 2 {
		t.Fatalf("%s=1 needs two CPUs or more, this process may use %v", benchPinEnv, cpus)
	}
	half := len(cpus) / 2
	return strings.Join(cpus[:half], ","), strings.Join(cpus[half:], ",")
}

// benchRuns is COORDHOST_INTEROP_BENCH_RUNS, 3 when unset.
func benchRuns(t *testing.T) int {
	t.Helper()
	v := os.Getenv(benchRunsEnv)
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", benchRunsEnv, v)
	}
	return n
}

// benchMarkdown renders every run's figures and the medians the bars are
// about.
func benchMarkdown(rows []benchRow, runs int, phase, commit, pinning string, started time.Time, loadBefore string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Commit %s, %s UTC, %d runs alternating Kafka 4.4 / coordhost 2 workers / coordhost 1 worker; %s measured per phase after a 5 s warm-up (idle baseline: 10 s after the phases, members still joined); fixed rates paced -pace %s, sent -open %s; %s; load average at start %s, at end %s.\n\n",
		commit, started.Format("2006-01-02 15:04"), runs, phase, benchPace, benchOpen, pinning, loadBefore, loadAverage())
	b.WriteString("| run | server | shape | phase | heartbeats/s | p50 ms | p99 ms | p99.9 ms | hbload's send lag p99 / max ms | server CPU-s / 10k | idle-subtracted | loadgen CPU-s / 10k | server context switches / heartbeat (involuntary); share coordhost's own poller answered | load average |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	phases := []string{"closed", "rate=2000", "rate=0.8x"}
	for _, r := range rows {
		for _, ph := range phases {
			x, ok := r.res[ph]
			if !ok {
				continue
			}
			label := ph
			if ph == "rate=0.8x" {
				label = fmt.Sprintf("rate=%.0f", x.TargetRate)
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %.0f | %.2f | %.2f | %.2f | %s | %.3f | %.3f | %.3f | %s | %s |\n", r.run, r.server, r.shape.name, label,
				x.Rate, x.P50us/1000, x.P99us/1000, x.P999us/1000, x.lag(), x.CPUPer10k, x.NetCPUPer10k, x.LoadCPU/float64(x.Heartbeats)*1e4, x.switches(), x.LoadAvg)
		}
	}
	// ratios are f(a)/f(b) run by run, a and b naming a server and shape:
	// pairs from the same round saw about the same machine load.
	type side struct {
		server string
		shape  benchShape
	}
	ratios := func(a, b side, ph string, f func(hbResult) float64) string {
		var v []string
		var xs []float64
		for _, ra := range rows {
			for _, rb := range rows {
				xa, oka := ra.res[ph]
				xb, okb := rb.res[ph]
				if oka && okb && ra.run == rb.run && ra.server == a.server && ra.shape == a.shape && rb.server == b.server && rb.shape == b.shape && f(xb) != 0 {
					xs = append(xs, f(xa)/f(xb))
					v = append(v, fmt.Sprintf("%.2f", f(xa)/f(xb)))
				}
			}
		}
		if len(xs) == 0 {
			return "-"
		}
		return fmt.Sprintf("**%.2f** (%s)", medianF(xs), strings.Join(v, ", "))
	}
	net := func(x hbResult) float64 { return x.NetCPUPer10k }
	p99 := func(x hbResult) float64 { return x.P99us }
	rate := func(x hbResult) float64 { return x.Rate }
	kafka, ch2, ch1 := "kafka", "coordhost w=2", "coordhost w=1"
	b.WriteString("\nRatios, median over the runs (each run's own ratio in brackets, in run order); CPU idle-subtracted:\n\n" +
		"| shape | phase | CPU / heartbeat coordhost : Kafka | p99 coordhost : Kafka |\n|---|---|---|---|\n")
	for _, sh := range benchShapes {
		for _, ph := range phases {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", sh.name, ph, ratios(side{ch2, sh}, side{kafka, sh}, ph, net), ratios(side{ch2, sh}, side{kafka, sh}, ph, p99))
		}
	}
	big, small := benchShapes[1], benchShapes[0]
	// Only phases at the same rate for both shapes: a server's CPU per
	// heartbeat depends on the rate.
	b.WriteString("\nCPU per heartbeat, 1000-member group : 10-member groups:\n\n| phase | Kafka | coordhost |\n|---|---|---|\n")
	for _, ph := range phases[:2] {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", ph, ratios(side{kafka, big}, side{kafka, small}, ph, net), ratios(side{ch2, big}, side{ch2, small}, ph, net))
	}
	// What each server's threads did per answer: where coordhost's CPU
	// per heartbeat at a fixed rate exceeds its closed loop's, the extra
	// follows the sleeps and wake-ups (docs/BENCHMARKS.md).
	b.WriteString("\nServer context switches per heartbeat (involuntary in brackets), median over the runs:\n\n| shape | phase | Kafka | coordhost |\n|---|---|---|---|\n")
	for _, sh := range benchShapes {
		for _, ph := range phases {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", sh.name, ph, medianSwitches(rows, kafka, sh, ph), medianSwitches(rows, ch2, sh, ph))
		}
	}
	b.WriteString("\nCoordhost runtime workers, closed loop, 2 : 1:\n\n| shape | throughput | CPU / heartbeat |\n|---|---|---|\n")
	for _, sh := range benchShapes {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", sh.name, ratios(side{ch2, sh}, side{ch1, sh}, "closed", rate), ratios(side{ch2, sh}, side{ch1, sh}, "closed", net))
	}
	return b.String()
}

// medianSwitches is the median over the runs of server's context
// switches per heartbeat in shape and phase, the involuntary ones in
// brackets; "-" when none were read.
func medianSwitches(rows []benchRow, server string, sh benchShape, ph string) string {
	var all, inv []float64
	for _, r := range rows {
		if x, ok := r.res[ph]; ok && r.server == server && r.shape == sh && x.Switches != nil && x.InvSwitches != nil {
			all, inv = append(all, *x.Switches), append(inv, *x.InvSwitches)
		}
	}
	if len(all) == 0 {
		return "-"
	}
	return fmtSwitches(medianF(all), medianF(inv))
}

func medianF(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestBenchCompareSmoke (COORDHOST_INTEROP=1; under 30 s with the builds) runs hbload's
// whole path against coordhost in a small shape: topic, idle window, join
// until steady, a closed-loop and a fixed-rate phase, leave. It checks
// that both phases ran steady, error-free heartbeats and read coordhost's
// CPU time; it asserts no timing.
func TestBenchCompareSmoke(t *testing.T) {
	needInterop(t)
	dir := logDir(t)
	c := startBenchCoordhost(t, dir, 2)
	res := runHBLoad(t, dir, "smoke", c.addr, c.proc.cmd.Process.Pid, benchShape{"10 × 10", 10, 10},
		"-idle", "1s", "-warmup", "1s", "-duration", "2s", "-phases", "closed,rate=500", "-metrics", c.metricsURL())
	for _, ph := range []string{"closed", "rate=500"} {
		r, ok := res[ph]
		if !ok {
			t.Fatalf("no result for phase %s: %v", ph, res)
		}
		if r.ServerCPU <= 0 {
			t.Errorf("phase %s: server CPU %v s: /proc/%d/stat not read", ph, r.ServerCPU, c.proc.cmd.Process.Pid)
		}
		// Every answer at 500/s finds the server asleep in its poller at
		// least now and then: a server that never switched was not read.
		if r.Switches == nil || *r.Switches <= 0 || r.InvSwitches == nil || *r.InvSwitches > *r.Switches {
			t.Errorf("phase %s: server context switches per heartbeat %s: /proc/%d/task not read", ph, r.switches(), c.proc.cmd.Process.Pid)
		}
		if r.P50us <= 0 || r.P99us < r.P50us {
			t.Errorf("phase %s: latency p50 %vµs p99 %vµs", ph, r.P50us, r.P99us)
		}
		// kafka.poller is auto by default, so the metric is there; at
		// 500/s the poller is not engaged.
		if r.PollerShare == nil || *r.PollerShare < 0 || *r.PollerShare > 1.1 || ph == "rate=500" && *r.PollerShare > 0 {
			t.Errorf("phase %s: share answered by the poller %v: coordhost's metrics not read", ph, r.PollerShare)
		}
	}
}

// metricsURL is coordhost's Prometheus page on its admin listener.
func (c *coordhost) metricsURL() string { return "http://" + c.adminAddr() + "/metrics" }

// The bench's tables carry each phase's p99.9, hbload's send lag at a
// fixed rate and server context switches per heartbeat from hbload's
// RESULT line, and their medians.
func TestBenchMarkdownTailAndSwitches(t *testing.T) {
	var rows []benchRow
	for run, line := range []string{
		`{"phase":"closed","heartbeats":1000,"p99us":1500,"p999us":2500,"serverSwitchesPerHb":0.2,"serverInvoluntarySwitchesPerHb":0.05}`,
		`{"phase":"closed","heartbeats":1000,"serverSwitchesPerHb":0.4,"serverInvoluntarySwitchesPerHb":0.07}`,
		`{"phase":"closed","heartbeats":1000,"serverSwitchesPerHb":0.9,"serverInvoluntarySwitchesPerHb":0.01,"pollerServedShare":0.987}`,
		`{"phase":"closed","heartbeats":1000}`, // an older hbload: not read
		`{"phase":"rate=2000","heartbeats":1000,"pacing":{"lagP99us":1250,"lagMaxUs":31500}}`,
	} {
		var r hbResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, benchRow{server: "coordhost w=2", run: run + 1, shape: benchShapes[0], res: map[string]hbResult{r.Phase: r}})
	}
	if got := medianSwitches(rows, "coordhost w=2", benchShapes[0], "closed"); got != "0.40 (0.05)" {
		t.Errorf("median = %q, want 0.40 (0.05)", got)
	}
	if got := medianSwitches(rows, "kafka", benchShapes[0], "closed"); got != "-" {
		t.Errorf("median with no rows = %q, want -", got)
	}
	md := benchMarkdown(rows, 4, "10s", "abc", "not pinned", time.Unix(0, 0).UTC(), "0 0 0")
	for _, want := range []string{"| 1.50 | 2.50 | - | 0.000 | 0.000 | 0.000 | 0.20 (0.05) |", "| 0.90 (0.01); poller 99 % |", "| 100 groups × 10 | closed | - | 0.40 (0.05) |", "| rate=2000 | 0 | 0.00 | 0.00 | 0.00 | 1.25 / 31.50 | 0.000 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("tables lack %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "| 4 | coordhost w=2 | 100 groups × 10 | closed | 0 | 0.00 | 0.00 | 0.00 | - | 0.000 | 0.000 | 0.000 | - |"); n != 1 {
		t.Errorf("the run without switches renders them as -: found %d times\n%s", n, md)
	}
}

// A process started under pinnedTo runs on the CPUs given, keeps its own
// pid (taskset execs it), and a process started after it is not pinned.
func TestPinnedProcess(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("taskset (util-linux) not found: %v", err)
		}
		t.Skipf("taskset (util-linux) not found: %v", err)
	}
	if runtime.NumCPU() < 2 {
		t.Skipf("pinning splits the CPUs in two; this process may use %d", runtime.NumCPU())
	}
	t.Setenv(benchPinEnv, "1")
	server, load := benchPinning(t)
	if server == "" || load == "" || server == load {
		t.Fatalf("benchPinning = %q, %q: want two disjoint, non-empty lists", server, load)
	}
	dir := t.TempDir()
	allowed := func(p *proc) string {
		t.Helper()
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				return strings.TrimSpace(v)
			}
		}
		t.Fatalf("no Cpus_allowed_list in /proc/%d/status", p.cmd.Process.Pid)
		return ""
	}
	// The exec of sleep by taskset takes a moment: wait for the pid's
	// command to be sleep before reading its CPUs.
	execd := func(p *proc) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.cmd.Process.Pid)); err == nil && strings.TrimSpace(string(b)) == "sleep" {
				return
			}
		}
		t.Fatalf("process %d did not become sleep", p.cmd.Process.Pid)
	}
	first := strings.Split(server, ",")[0]
	p := pinnedTo(first, func() *proc { return startProc(t, "pinned", dir, "sleep", "30") })
	defer p.kill()
	execd(p)
	if got := allowed(p); got != first {
		t.Errorf("pinned process runs on CPUs %q, want %q", got, first)
	}
	q := startProc(t, "unpinned", dir, "sleep", "30")
	defer q.kill()
	execd(q)
	if got := allowed(q); got == first {
		t.Errorf("a process started after pinnedTo runs on CPUs %q only: the pin leaked", got)
	}
}
