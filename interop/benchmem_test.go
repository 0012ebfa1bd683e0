package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The memory and replay comparison (`make bench-memory`,
// docs/BENCHMARKS.md). Gated by COORDHOST_INTEROP=1 and
// COORDHOST_INTEROP_BENCH=1: coordhost reads every other COORDHOST_*
// variable as configuration (childEnv passes these through to no child).
const (
	benchMemEnv       = "COORDHOST_INTEROP_BENCH"
	benchMemOutEnv    = "COORDHOST_INTEROP_BENCH_MEM_OUT"
	benchMemGroupsEnv = "COORDHOST_INTEROP_BENCH_GROUPS" // streams groups of 10 members (default 1000)
	benchMemKeysEnv   = "COORDHOST_INTEROP_BENCH_KEYS"   // committed offsets to replay (default 1,000,000)
	skipPart          = -1                               // GROUPS or KEYS -1: leave that comparison out
	benchMemToken     = "bench-memory-token"
	replayPartitions  = 1000 // partitions per OffsetCommit: one group's keys
)

// memResult is one side's memory figures, in bytes.
type memResult struct {
	base, loaded int64
}

// replayResult is one side's replay figures after the restart.
type replayResult struct {
	serving   time.Duration // process start until every group's offsets are fetchable
	ready     time.Duration // coordhost: process start until /readyz answers 200
	records   int64         // records the coordinator loaded (its log; coordhost's offsets live in the data plane, not in this count)
	loadSum   time.Duration // Kafka: sum of the partitions' loading times
	loadMax   time.Duration // Kafka: the longest partition's loading time
	loadParts int
	write     time.Duration // writing the keys before the restart
}

// TestBenchMemoryReplay (`make bench-memory`) alternates, RUNS times, Kafka
// 4.4 and coordhost (2 runtime workers) on two measurements:
//
//   - memory: the live heap after a forced full collection on a fresh
//     server, then with GROUPS streams groups of 10 members joined and
//     steady (interop/hbload), members still in their groups;
//   - replay: KEYS committed offsets (KEYS/1000 groups × 1000 partitions,
//     one OffsetCommit per group, each key written once), a graceful
//     restart, and the time from the new process's start until every
//     group's offsets are fetchable; Kafka's own per-partition loading
//     times come from its log.
//
// It asserts no timing, only correctness: every member steady, every
// commit accepted and every offset read back after the restart.
func TestBenchMemoryReplay(t *testing.T) {
	needInterop(t)
	if os.Getenv(benchMemEnv) != "1" {
		t.Skipf("set %s=1 (make bench-memory) to run the memory and replay comparison", benchMemEnv)
	}
	if _, err := exec.LookPath("jcmd"); err != nil {
		t.Fatalf("jcmd (JDK) is needed to read the broker's heap: %v", err)
	}
	groups, keys, runs := envInt(t, benchMemGroupsEnv, 1000), envInt(t, benchMemKeysEnv, 1_000_000), envInt(t, benchRunsEnv, 1)
	if keys%replayPartitions != 0 && keys != skipPart {
		t.Fatalf("%s=%d: want a multiple of %d", benchMemKeysEnv, keys, replayPartitions)
	}
	dir := logDir(t)
	started, loadBefore, commit := time.Now().UTC(), loadAverage(), gitCommit()
	var b strings.Builder
	fmt.Fprintf(&b, "Commit %s, %s UTC, %d run(s), Kafka 4.4 and coordhost (2 runtime workers) alternated; load average at start %s.\n\n",
		commit, started.Format("2006-01-02 15:04"), runs, loadBefore)
	b.WriteString("| run | server | heap before | heap with the groups | growth | growth per member | load average |\n|---|---|---:|---:|---:|---:|---|\n")
	var rb strings.Builder
	rb.WriteString("| run | server | keys written in | start → all offsets fetchable | coordhost /readyz | records loaded (log) | Kafka load time sum / max over partitions | keys/s (start → fetchable) | load average |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	var memRatios, replayRatios []string
	row := func(w *strings.Builder, format string, args ...any) { // logged at once: a later failure keeps it
		line := fmt.Sprintf(format, args...)
		w.WriteString(line)
		t.Log(strings.TrimSpace(line))
	}
	for run := 1; run <= runs && keys != skipPart; run++ {
		kr := kafkaReplay(t, dir, run, keys)
		row(&rb, "| %d | kafka | %v | %v | - | %d | %v / %v (%d partitions) | %.0f | %s |\n", run, kr.write.Round(time.Millisecond), kr.serving.Round(time.Millisecond),
			kr.records, kr.loadSum, kr.loadMax, kr.loadParts, float64(keys)/kr.serving.Seconds(), loadAverage())
		cr := coordhostReplay(t, dir, run, keys)
		row(&rb, "| %d | coordhost | %v | %v | %v | %d | - | %.0f | %s |\n", run, cr.write.Round(time.Millisecond), cr.serving.Round(time.Millisecond),
			cr.ready.Round(time.Millisecond), cr.records, float64(keys)/cr.serving.Seconds(), loadAverage())
		replayRatios = append(replayRatios, fmt.Sprintf("%.3f", cr.serving.Seconds()/kr.serving.Seconds()))
	}
	for run := 1; run <= runs && groups != skipPart; run++ {
		km := kafkaMemory(t, dir, run, groups)
		row(&b, "| %d | kafka | %s | %s | %s | %.0f B | %s |\n", run, mib(km.base), mib(km.loaded), mib(km.loaded-km.base), float64(km.loaded-km.base)/float64(groups*10), loadAverage())
		cm := coordhostMemory(t, dir, run, groups)
		row(&b, "| %d | coordhost | %s | %s | %s | %.0f B | %s |\n", run, mib(cm.base), mib(cm.loaded), mib(cm.loaded-cm.base), float64(cm.loaded-cm.base)/float64(groups*10), loadAverage())
		memRatios = append(memRatios, fmt.Sprintf("%.3f", float64(cm.loaded-cm.base)/float64(km.loaded-km.base)))
	}
	fmt.Fprintf(&b, "\nGrowth coordhost : Kafka, run by run: %s.\n", strings.Join(memRatios, ", "))
	if keys != skipPart {
		fmt.Fprintf(&b, "\nReplay of %d keys (%d groups × %d partitions, one OffsetCommit each):\n\n%s\nStart → fetchable coordhost : Kafka, run by run: %s.\n",
			keys, keys/replayPartitions, replayPartitions, rb.String(), strings.Join(replayRatios, ", "))
	}
	fmt.Fprintf(&b, "\nLoad average at end %s.\n", loadAverage())
	if out := os.Getenv(benchMemOutEnv); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("\n%s", b.String())
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || (n < 1 && n != skipPart) {
		t.Fatalf("%s=%q: want a positive number or -1", name, v)
	}
	return n
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// holdGroups runs hbload with groups × 10 streams members against addr:
// it joins them until steady, heartbeats them closed loop for 5 s
// (warm-up) and 10 s, then idles 30 s with the members still joined (the
// session is 45 s); measure runs 2 s into that idle window. It fails the
// test unless every member got steady and every heartbeat was
// error-free; answers that changed an assignment in the 10 s are logged.
func holdGroups(t *testing.T, dir, name, addr string, groups int, measure func()) {
	t.Helper()
	p := startProc(t, "hbload-"+name, dir, hbloadBinary(t), "-bootstrap", addr, "-prefix", name,
		"-groups", strconv.Itoa(groups), "-members", "10", "-phases", "closed", "-warmup", "5s", "-duration", "10s",
		"-idle", "30s", "-settle", "8m")
	if _, _, err := p.waitLine("STEADY ", 0, 9*time.Minute); err != nil {
		t.Fatalf("hbload %s: %v\n%s", name, err, p.tail(40))
	}
	time.Sleep(17 * time.Second) // the warm-up and phase, then idle
	measure()
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("hbload %s did not finish\n%s", name, p.tail(40))
	}
	if p.err != nil {
		t.Fatalf("hbload %s: %v\n%s", name, p.err, p.tail(40))
	}
	for _, l := range p.grep("RESULT ") {
		var r hbResult
		if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "RESULT ")), &r); err != nil {
			t.Fatalf("hbload %s: %q: %v", name, l, err)
		}
		if r.Heartbeats == 0 || r.Errors > 0 {
			t.Errorf("hbload %s: %d heartbeats, %d errors (want error-free heartbeats)", name, r.Heartbeats, r.Errors)
		}
		t.Logf("hbload %s: %d heartbeats in 10 s, %d changed an assignment", name, r.Heartbeats, r.Changed)
	}
	t.Logf("%s: %s", name, strings.Join(p.grep("STEADY ", "IDLE "), "; "))
}

// jvmLiveHeap is the live heap of the JVM pid after a full collection:
// jcmd GC.class_histogram collects (stop-the-world, full) and lists the
// live objects; its Total line is their bytes.
func jvmLiveHeap(t *testing.T, pid int) int64 {
	t.Helper()
	out, err := exec.Command("jcmd", strconv.Itoa(pid), "GC.class_histogram").Output()
	if err != nil {
		t.Fatalf("jcmd %d GC.class_histogram: %v\n%s", pid, err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "Total" {
			n, err := strconv.ParseInt(f[2], 10, 64)
			if err == nil {
				return n
			}
		}
	}
	t.Fatalf("jcmd %d GC.class_histogram: no Total line\n%s", pid, out)
	return 0
}

// adminAddr is the admin listener from coordhost's command line.
func (c *coordhost) adminAddr() string {
	for _, a := range c.args {
		if v, ok := strings.CutPrefix(a, "--admin.listen="); ok {
			return v
		}
	}
	return ""
}

// goLiveHeap asks coordhost's admin API for a forced collection and the
// live heap it left (POST /v1/debug/heap, token-protected).
func goLiveHeap(t *testing.T, c *coordhost) int64 {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+c.adminAddr()+"/v1/debug/heap", nil)
	req.Header.Set("Authorization", "Bearer "+benchMemToken)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("debug heap: %v", err)
	}
	defer resp.Body.Close()
	var v struct {
		HeapLiveBytes int64 `json:"heapLiveBytes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 || v.HeapLiveBytes == 0 {
		t.Fatalf("debug heap: %s, %v, %+v", resp.Status, err, v)
	}
	return v.HeapLiveBytes
}

func kafkaMemory(t *testing.T, dir string, run, groups int) memResult {
	b := startBenchBroker(t, dir)
	defer b.proc.kill()
	pid := b.proc.cmd.Process.Pid
	time.Sleep(5 * time.Second)
	var m memResult
	m.base = jvmLiveHeap(t, pid)
	holdGroups(t, dir, fmt.Sprintf("mk%d", run), b.addr, groups, func() { m.loaded = jvmLiveHeap(t, pid) })
	return m
}

func coordhostMemory(t *testing.T, dir string, run, groups int) memResult {
	c := startBenchCoordhost(t, dir, 2, "--admin.token="+benchMemToken)
	defer c.proc.kill()
	time.Sleep(5 * time.Second)
	var m memResult
	m.base = goLiveHeap(t, c)
	holdGroups(t, dir, fmt.Sprintf("mc%d", run), c.addr, groups, func() { m.loaded = goLiveHeap(t, c) })
	return m
}

// replayTopic is the topic whose partitions the replay commits offsets for.
const replayTopic = "replay-src"

// replayOffset is the offset committed for group g, partition p.
func replayOffset(g, p int) int64 { return int64(g)*replayPartitions + int64(p) + 1 }

func replayGroup(run, g int) string { return fmt.Sprintf("replay%d-%05d", run, g) }

// writeReplayKeys creates the topic and commits keys offsets: one
// OffsetCommit of replayPartitions partitions per group (a simple group:
// no member, generation -1), four in flight.
func writeReplayKeys(t *testing.T, addr string, run, keys int) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestTimeoutOverhead(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ct := kmsg.NewPtrCreateTopicsRequest()
	tt := kmsg.NewCreateTopicsRequestTopic()
	tt.Topic, tt.NumPartitions, tt.ReplicationFactor = replayTopic, replayPartitions, 1
	ct.Topics, ct.TimeoutMillis = append(ct.Topics, tt), 60000
	resp, err := ct.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("create %s: %v", replayTopic, err)
	}
	if c := resp.Topics[0].ErrorCode; c != 0 && c != kerr.TopicAlreadyExists.Code {
		t.Fatalf("create %s: %v", replayTopic, kerr.ErrorForCode(c))
	}
	id := waitTopic(t, ctx, cl)
	if err := groupsServed(addr, replayGroup(run, 0), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				if ctx.Err() != nil {
					continue
				}
				if err := commitGroup(ctx, cl, id, run, g); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel() // the first failure ends the writing
				}
			}
		}()
	}
	for g := 0; g < keys/replayPartitions; g++ {
		work <- g
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return time.Since(start)
}

// waitTopic polls Metadata until replayTopic has all its partitions led:
// a commit right after CreateTopics can find the topic id unknown.
// It returns the topic's id: OffsetCommit v10 names topics by id, and
// kgo does not fill it in.
func waitTopic(t *testing.T, ctx context.Context, cl *kgo.Client) [16]byte {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		req := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(replayTopic)
		req.Topics = append(req.Topics, mt)
		resp, err := req.RequestWith(ctx, cl)
		led := 0
		if err == nil && len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 {
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode == 0 && p.Leader >= 0 {
					led++
				}
			}
		}
		if led == replayPartitions {
			return resp.Topics[0].TopicID
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s: %d of %d partitions led after 2m (last error %v)", replayTopic, led, replayPartitions, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// retriableCommit: the coordinator is loading or moving, or the topic is
// not yet known everywhere.
func retriableCommit(code int16) bool {
	e := kerr.ErrorForCode(code)
	return kerr.IsRetriable(e) || e == kerr.UnknownTopicID || e == kerr.UnknownTopicOrPartition
}

func commitGroup(ctx context.Context, cl *kgo.Client, id [16]byte, run, g int) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = replayGroup(run, g), -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = replayTopic, id
	for p := 0; p < replayPartitions; p++ {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = int32(p), replayOffset(g, p), -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	for attempt := 0; ; attempt++ {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			if attempt < 20 && kerr.IsRetriable(err) && ctx.Err() == nil {
				time.Sleep(500 * time.Millisecond)
				continue
			}
			return fmt.Errorf("OffsetCommit %s: %w", req.Group, err)
		}
		var bad error
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil && bad == nil {
					bad = fmt.Errorf("OffsetCommit %s partition %d: %w", req.Group, p.Partition, e)
				}
			}
		}
		if bad == nil || attempt == 20 || !retriableCommit(resp.Topics[0].Partitions[0].ErrorCode) {
			return bad
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// fetchGroup reads group g's offsets back: nil when all replayPartitions
// are there with the committed values; retriable tells a coordinator that
// is still loading from a wrong answer.
func fetchGroup(ctx context.Context, cl *kgo.Client, run, g int) (retriable bool, err error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = replayGroup(run, g)
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = replayTopic
	for p := 0; p < replayPartitions; p++ {
		rt.Partitions = append(rt.Partitions, int32(p))
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return true, err
	}
	if e := kerr.ErrorForCode(resp.ErrorCode); e != nil {
		return kerr.IsRetriable(e), fmt.Errorf("OffsetFetch %s: %w", req.Group, e)
	}
	n := 0
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
				return kerr.IsRetriable(e), fmt.Errorf("OffsetFetch %s partition %d: %w", req.Group, p.Partition, e)
			}
			if want := replayOffset(g, int(p.Partition)); p.Offset != want {
				return false, fmt.Errorf("OffsetFetch %s partition %d: offset %d, want %d", req.Group, p.Partition, p.Offset, want)
			}
			n++
		}
	}
	if n != replayPartitions {
		return false, fmt.Errorf("OffsetFetch %s: %d partitions, want %d", req.Group, n, replayPartitions)
	}
	return false, nil
}

// awaitOffsets polls from start until every group's offsets are
// fetchable (retrying answers that say the coordinator is loading) and
// returns the time since start; it fails the test on a wrong offset.
func awaitOffsets(t *testing.T, addr string, run, keys int, start time.Time) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for g := 0; g < keys/replayPartitions; g++ {
		for {
			retriable, err := fetchGroup(ctx, cl, run, g)
			if err == nil {
				break
			}
			if !retriable || ctx.Err() != nil {
				t.Fatalf("after the restart: %v", err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// loadingLine matches the group coordinator's per-partition load report.
var (
	loadingLine = regexp.MustCompile(`Finished loading.*__consumer_offsets-(\d+).* in (\d+) ?(ms|milliseconds)`)
	loadedCount = regexp.MustCompile(`Loaded (\d+) records`)
)

// brokerLog4j is the suite's broker logging (streams-app's
// log4j2.properties) with the coordinator runtime, which reports each
// partition's loading, at INFO.
func brokerLog4j(t *testing.T, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(appDir, "src", "main", "resources", "log4j2.properties"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "log4j2-replay.properties")
	extra := "\nlogger.coordrt.name = org.apache.kafka.coordinator\nlogger.coordrt.level = info\n"
	if err := os.WriteFile(p, append(raw, extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func kafkaReplay(t *testing.T, dir string, run, keys int) replayResult {
	saved := jvmFlags
	jvmFlags = append(append([]string(nil), kafkaJVMFlags...), "-Dlog4j2.configurationFile="+brokerLog4j(t, dir))
	defer func() { jvmFlags = saved }()
	port := freePort(t)
	b := launchBroker(t, dir, port, map[string]string{
		"listeners":                    fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
		"advertised.listeners":         fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
		"offsets.topic.num.partitions": "50",
	})
	cfg, err := os.ReadFile(filepath.Join(dir, "server.properties"))
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, fmt.Sprintf("server-replay%d.properties", run))
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	var r replayResult
	r.write = writeReplayKeys(t, b.addr, run, keys)
	if err := b.proc.stop(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p := startJavaFrom(t, appDir, "broker-replay", dir, "kafka.Kafka", cfgPath)
	defer p.kill()
	r.serving = awaitOffsets(t, b.addr, run, keys, start)
	seen := map[string]bool{}
	for _, l := range p.grep("Finished loading") {
		m := loadingLine.FindStringSubmatch(l)
		if m == nil || seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		ms, _ := strconv.Atoi(m[2])
		d := time.Duration(ms) * time.Millisecond
		r.loadSum += d
		r.loadMax = max(r.loadMax, d)
		r.loadParts++
		if c := loadedCount.FindStringSubmatch(l); c != nil {
			n, _ := strconv.ParseInt(c[1], 10, 64)
			r.records += n
		}
	}
	if r.loadParts == 0 {
		t.Logf("broker log has no loading report; its Finished loading lines: %q", p.grep("Finished loading"))
	}
	return r
}

var replayedLine = regexp.MustCompile(`coordinator state replayed.*records=(\d+)`)

func coordhostReplay(t *testing.T, dir string, run, keys int) replayResult {
	c := startBenchCoordhost(t, dir, 2, "--admin.token="+benchMemToken)
	defer func() { c.proc.kill() }()
	var r replayResult
	r.write = writeReplayKeys(t, c.addr, run, keys)
	if err := c.proc.stop(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.proc = startProc(t, "coordhost-replay", dir, coordhostBinary(t), c.args...)
	readyDone := make(chan time.Duration, 1)
	go func() {
		hc := &http.Client{Timeout: time.Second}
		for time.Since(start) < 10*time.Minute {
			if resp, err := hc.Get("http://" + c.adminAddr() + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					readyDone <- time.Since(start)
					return
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		readyDone <- 0
	}()
	r.serving = awaitOffsets(t, c.addr, run, keys, start)
	r.ready = <-readyDone
	for _, l := range c.proc.grep("coordinator state replayed") {
		if m := replayedLine.FindStringSubmatch(l); m != nil {
			r.records, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	return r
}
