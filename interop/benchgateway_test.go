package interop

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/interop/proccpu"
)

const (
	benchGWOutEnv  = "COORDHOST_INTEROP_BENCH_GW_OUT"
	benchGWBaseEnv = "COORDHOST_INTEROP_BENCH_GW_BASE" // a coordhost binary of another commit, run as a third side
	// benchGWClientsEnv names the clients whose phases a run measures,
	// comma-separated: "kgo" (franz-go, in this process), "java" (Kafka's
	// own Java client, interop/streams-app's DataPathBench) and "app" (the
	// interop app, Kafka Streams with exactly-once); all three by default.
	benchGWClientsEnv = "COORDHOST_INTEROP_BENCH_GW_CLIENTS"
	// benchGWRecords is the records of a throughput phase: 488 MiB of
	// 1 KiB records, about a second at either side's rate, so that the
	// consumer's start and a single slow round trip do not decide it.
	benchGWRecords = 500000
	benchGWRate    = 2000 // records/s of the latency phase
	benchGWLatency = 15 * time.Second
	// benchGWLatencyWarm is sent at the same rate before the latency
	// phase and not measured: it covers the consumer's start (metadata,
	// offsets, first fetch), 100–150 ms on a busy broker, which would
	// otherwise be the top 1 % of the phase and set its p99.
	benchGWLatencyWarm = time.Second
	benchGWRecSize     = 1024
	benchGWWarmRounds  = 2 // unmeasured runs of each side first
	benchGWParts       = 6
	// benchGWTouchMiB is the memory the harness touches and frees before
	// each throughput phase (warmFreeMemory): four times a phase's bytes.
	benchGWTouchMiB = 2048
)

// gwResult is one side's figures in one run.
type gwResult struct {
	produce, fetch float64 // MiB/s
	p50, p99       time.Duration
	// CPU-seconds per GiB of the broker and of coordhost (gateway side
	// only) in the produce and the fetch phase: robust on a loaded machine.
	brokerProduce, brokerFetch, gwProduce, gwFetch float64
	// brokerProduceSys is the system part of brokerProduce: the kernel's
	// copy of the records into the page cache, with its page faults.
	brokerProduceSys float64
	// CPU-seconds per GiB of the test process in the produce and the
	// fetch phase: the clients' own (the producer, then the consumer),
	// which the hop changes too (docs/BENCHMARKS.md).
	clientProduce, clientFetch float64
	// CPU-seconds of coordhost (gateway side only) per 10,000 records of
	// the latency phase, where each record is a request of its own: what
	// a forwarded request costs besides its bytes.
	gwLatency float64
}

// TestBenchGateway measures the data path through coordhost's gateway
// against the same Kafka 4.4 broker directly: produce and fetch throughput
// and end-to-end latency at a fixed rate, direct and gateway runs
// alternated after two unmeasured runs of each (make bench-gateway,
// docs/BENCHMARKS.md). It asserts no timing, only that every record was
// produced and consumed.
func TestBenchGateway(t *testing.T) {
	needInterop(t)
	out := os.Getenv(benchGWOutEnv)
	if out == "" {
		t.Skipf("set %s (make bench-gateway) to run the comparison", benchGWOutEnv)
	}
	runs := envRuns(t, benchRunsEnv, 3)
	dir := logDir(t)
	started, loadBefore, commit := time.Now().UTC(), loadAverage(), gitCommit()
	// A run's topics are deleted at its end (gatewayRun); their files go
	// at once instead of a minute later, during another side's run.
	// Pinned, the broker and this process (the clients) share the first
	// half of the CPUs and every gateway has the rest to itself, as a
	// gateway on hosts of its own would: what it adds is then its hops,
	// not its CPU taken from the broker and the clients.
	mainCPUs, gwCPUs := benchPinning(t)
	pinning := "not pinned: broker, clients and gateway share every CPU"
	if mainCPUs != "" {
		pinSelf(t, mainCPUs)
		t.Cleanup(func() { pinSelf(t, mainCPUs+","+gwCPUs) })
		pinning = fmt.Sprintf("broker and clients pinned to CPUs %s, the gateway to CPUs %s (taskset)", mainCPUs, gwCPUs)
	}
	b := pinnedTo(mainCPUs, func() *broker { return startBenchBroker(t, dir, map[string]string{"file.delete.delay.ms": "0"}) })
	// The gateways coordinate the app's group with the broker's group
	// settings (benchCoordhostFlags).
	saved := coordhostFlags
	coordhostFlags = benchCoordhostFlags()
	startGateway := func() *coordhost { return startCoordhost(t, dir, b.addr) }
	c := pinnedTo(gwCPUs, startGateway)
	sides := map[string]string{"direct": b.addr, "gateway": c.addr}
	pids := map[string]int{"direct": 0, "gateway": c.proc.cmd.Process.Pid}
	metrics := map[string]string{"direct": "", "gateway": c.metricsURL()}
	all := []string{"direct", "gateway"}
	if base := os.Getenv(benchGWBaseEnv); base != "" {
		own := coordhostBuild.bin
		coordhostBuild.bin = base
		bc := pinnedTo(gwCPUs, startGateway)
		coordhostBuild.bin = own
		sides["base"], pids["base"], metrics["base"], all = bc.addr, bc.proc.cmd.Process.Pid, bc.metricsURL(), append(all, "base")
	}
	coordhostFlags = saved
	bpid := b.proc.cmd.Process.Pid
	// Each client gets a series of its own, one after the other: its
	// warm-up rounds, then its runs, every side in turn. In one series
	// of all three interleaved (each side's kgo, Java and app phases one
	// after the other), kgo's consumer cost the test process about a
	// third more CPU per GiB direct than in a series of its own, and its
	// direct fetch rate fell from 825–890 to 670–724 MiB/s
	// (docs/BENCHMARKS.md).
	clients := benchGWClients(t)
	res := map[string]map[string][]gwResult{} // client, side
	appRes := map[string][]appResult{}
	for _, cl := range clients {
		res[cl] = map[string][]gwResult{}
		var jc *javaClients
		if cl == "java" {
			jc = pinnedTo(mainCPUs, func() *javaClients { return startJavaClients(t, dir) })
		}
		// The broker's JIT and heap sizing, and every side's connections,
		// before anything is measured: after one unmeasured run of each
		// side, the first measured run (direct's, first in run 1) still
		// had the broker spend two to three times the CPU per GiB of
		// produce of the runs after it, and run 1's ratio favoured the
		// gateway. For the app, whose runs take about a minute each, one
		// round starts the broker's transaction paths and the gateway's
		// group coordination.
		warm := benchGWWarmRounds
		if cl == "app" {
			warm = 1
		}
		for i := -warm + 1; i <= runs; i++ {
			order := slices.Clone(all)
			if i%2 == 0 {
				slices.Reverse(order)
			}
			for _, side := range order {
				name := fmt.Sprintf("%s-%d", side, i)
				if i <= 0 {
					name = fmt.Sprintf("warm-%s-%d", side, -i)
				}
				switch cl {
				case "app":
					r := appRun(t, dir, sides[side], metrics[side], name, bpid, pids[side])
					t.Logf("%s, app: p50 %v, p99 %v, max %v", name, r.p50, r.p99, r.max)
					if i > 0 {
						appRes[side] = append(appRes[side], r)
					}
				default:
					r := gatewayRun(t, cl, jc, sides[side], b.addr, "gw-"+name+"-"+cl, bpid, pids[side])
					t.Logf("%s, %s: produce %.1f MiB/s, fetch %.1f MiB/s, p50 %v, p99 %v", name, cl, r.produce, r.fetch, r.p50, r.p99)
					if i > 0 {
						res[cl][side] = append(res[cl][side], r)
					}
				}
			}
		}
		if jc != nil {
			jc.stop(t)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# bench-gateway\n\ncommit %s, started %s, load average before %s, after %s; %d runs per side, alternated; %d records of %d B (incompressible, sent uncompressed) per throughput phase, acks=all, %d partitions; latency at %d records/s for %v after %v unmeasured (producer linger 0); %s\n",
		commit, started.Format(time.RFC3339), loadBefore, loadAverage(), runs, benchGWRecords, benchGWRecSize, benchGWParts, benchGWRate, benchGWLatency, benchGWLatencyWarm, pinning)
	for _, cl := range clients {
		if cl == "app" {
			writeAppReport(&sb, appRes)
		} else {
			writeGWReport(&sb, cl, res[cl])
		}
	}
	if err := os.WriteFile(out, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + sb.String())
}

// benchGWClientNames are the clients a run can measure, each with the
// heading of its part of the report.
var benchGWClientNames = map[string]string{
	"kgo":  "kgo (franz-go), in the test process: batches up to 1 MB, linger 10 ms (0 in the latency phase)",
	"app":  fmt.Sprintf("the interop app (App.java: Kafka Streams 4.4.0, exactly-once v2, commit.interval.ms 100, group.protocol %s, %d instances of one thread, one standby; the suite's JVM flags), LoadGen producing %d records/s over %d partitions; measured for %v once its output caught up: the time from a record's produce to its output's read (read_committed), in ms", benchAppProtocol, benchAppInstances, recordsPerSec, inputPartitions, benchAppMeasure),
	"java": "Kafka's Java client (kafka-clients 4.4.0), one JVM for every side (DataPathBench): its defaults (batch.size 16 KiB, linger.ms 5; 0 in the latency phase), acks=all, compression none",
}

// benchGWClients is the clients of benchGWClientsEnv, in the report's
// order.
func benchGWClients(t *testing.T) []string {
	t.Helper()
	all := []string{"kgo", "java", "app"}
	v := os.Getenv(benchGWClientsEnv)
	if v == "" {
		return all
	}
	asked := strings.Split(v, ",")
	for _, cl := range asked {
		if !slices.Contains(all, cl) {
			t.Fatalf("%s=%q: %q is not a client (kgo, java, app)", benchGWClientsEnv, v, cl)
		}
	}
	return slices.DeleteFunc(all, func(cl string) bool { return !slices.Contains(asked, cl) })
}

// writeGWReport writes one client's tables: every run's rates and
// latencies per side, the CPU-seconds per GiB, the third side's figures,
// and the medians.
func writeGWReport(sb *strings.Builder, client string, res map[string][]gwResult) {
	fmt.Fprintf(sb, "\n## %s\n\n", benchGWClientNames[client])
	sb.WriteString("| run | produce direct MiB/s | produce gateway | ratio | fetch direct MiB/s | fetch gateway | ratio | p50 direct | p50 gateway | p99 direct | p99 gateway | added p99 |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i := range res["direct"] {
		d, g := res["direct"][i], res["gateway"][i]
		fmt.Fprintf(sb, "| %d | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %v | %v | %v | %v | %v |\n", i+1, d.produce, g.produce, g.produce/d.produce,
			d.fetch, g.fetch, g.fetch/d.fetch, d.p50.Round(10*time.Microsecond), g.p50.Round(10*time.Microsecond), d.p99.Round(10*time.Microsecond), g.p99.Round(10*time.Microsecond), (g.p99 - d.p99).Round(10*time.Microsecond))
	}
	sb.WriteString("\nCPU-seconds per GiB (user+system from /proc; the gateway's own process, the broker on each side, with the system part of the broker's produce in brackets, and the client's process, whose clients are the producer and then the consumer), and the gateway's CPU-seconds per 10,000 records of the latency phase (warm-up included):\n\n| run | broker produce direct | via gateway | gateway produce | producer direct | via gateway | broker fetch direct | via gateway | gateway fetch | consumer direct | via gateway | gateway latency phase |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i := range res["direct"] {
		d, g := res["direct"][i], res["gateway"][i]
		fmt.Fprintf(sb, "| %d | %.2f (%.2f) | %.2f (%.2f) | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.3f |\n", i+1, d.brokerProduce, d.brokerProduceSys, g.brokerProduce, g.brokerProduceSys, g.gwProduce, d.clientProduce, g.clientProduce,
			d.brokerFetch, g.brokerFetch, g.gwFetch, d.clientFetch, g.clientFetch, g.gwLatency)
	}
	if base := res["base"]; len(base) > 0 {
		fmt.Fprintf(sb, "\nThe same runs through the gateway of %s (base):\n\n| run | produce base MiB/s | ratio to direct | fetch base MiB/s | ratio to direct | p99 base | added p99 | gateway CPU-s/GiB produce | fetch | broker CPU-s/GiB produce (system), fetch | producer, consumer CPU-s/GiB | CPU-s per 10k records of the latency phase |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n", os.Getenv(benchGWBaseEnv))
		for i := range base {
			d, g := res["direct"][i], base[i]
			fmt.Fprintf(sb, "| %d | %.1f | %.2f | %.1f | %.2f | %v | %v | %.2f | %.2f | %.2f (%.2f), %.2f | %.2f, %.2f | %.3f |\n", i+1, g.produce, g.produce/d.produce, g.fetch, g.fetch/d.fetch,
				g.p99.Round(10*time.Microsecond), (g.p99 - d.p99).Round(10*time.Microsecond), g.gwProduce, g.gwFetch, g.brokerProduce, g.brokerProduceSys, g.brokerFetch, g.clientProduce, g.clientFetch, g.gwLatency)
		}
	}
	var prod, fetch []float64
	var added []time.Duration
	for i := range res["direct"] {
		d, g := res["direct"][i], res["gateway"][i]
		prod, fetch, added = append(prod, g.produce/d.produce), append(fetch, g.fetch/d.fetch), append(added, g.p99-d.p99)
	}
	fmt.Fprintf(sb, "\nmedian of the runs: produce %.2f× direct, fetch %.2f× direct, added p99 %v\n", medianF(prod), medianF(fetch), median(added).Round(10*time.Microsecond))
	// A run's ratio moves with direct's own rate, which moved almost
	// threefold between runs of one set (the broker's CPU per GiB
	// produced with it): each side's median rate over the runs, and
	// their ratio, say the same with one slow direct run weighing less.
	rate := func(side string, of func(gwResult) float64) float64 {
		var v []float64
		for _, r := range res[side] {
			v = append(v, of(r))
		}
		return medianF(v)
	}
	dp, gp := rate("direct", func(r gwResult) float64 { return r.produce }), rate("gateway", func(r gwResult) float64 { return r.produce })
	df, gf := rate("direct", func(r gwResult) float64 { return r.fetch }), rate("gateway", func(r gwResult) float64 { return r.fetch })
	fmt.Fprintf(sb, "median rates over the runs: produce direct %.1f MiB/s, gateway %.1f (%.2f×); fetch direct %.1f MiB/s, gateway %.1f (%.2f×)\n", dp, gp, gp/dp, df, gf, gf/df)
}

// gatewayRun runs client's phases through addr (kgoRun or javaClients.run).
func gatewayRun(t *testing.T, client string, jc *javaClients, addr, brokerAddr, topic string, brokerPid, gwPid int) gwResult {
	t.Helper()
	if client == "java" {
		return jc.run(t, addr, brokerAddr, topic, brokerPid, gwPid)
	}
	return kgoRun(t, addr, brokerAddr, topic, brokerPid, gwPid)
}

// benchTopics creates topic and topic-lat through addr, for a run's
// throughput and latency phases, and returns what deletes them on the
// broker at brokerAddr: half a GiB a run would otherwise pile up in the
// page cache and the broker's disk over the runs.
func benchTopics(ctx context.Context, t *testing.T, addr, brokerAddr, topic string) (remove func()) {
	t.Helper()
	topics := []string{topic, topic + "-lat"}
	for _, tp := range topics {
		createBenchTopic(ctx, t, addr, tp)
	}
	return func() { deleteBenchTopics(ctx, t, brokerAddr, topics) }
}

// kgoRun produces benchGWRecords records (acks=all) to topic through addr
// with kgo and fetches them back, each timed, then runs the fixed-rate
// latency phase on topic-lat.
func kgoRun(t *testing.T, addr, brokerAddr, topic string, brokerPid, gwPid int) gwResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	defer benchTopics(ctx, t, addr, brokerAddr, topic)()
	var r gwResult
	mib := float64(benchGWRecords*benchGWRecSize) / (1 << 20)
	p := benchClient(t, addr, kgo.DefaultProduceTopic(topic))
	value := benchValue()
	gib := float64(benchGWRecords*benchGWRecSize) / (1 << 30)
	warmFreeMemory(t, benchGWTouchMiB)
	bu0, bs0 := proccpu.Times(brokerPid)
	g0, c0 := proccpu.Seconds(gwPid), proccpu.Seconds(os.Getpid())
	start := time.Now()
	for i := 0; i < benchGWRecords; i++ {
		p.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r.produce = mib / time.Since(start).Seconds()
	bu, bs := proccpu.Times(brokerPid)
	r.brokerProduce, r.brokerProduceSys, r.gwProduce = (bu+bs-bu0-bs0)/gib, (bs-bs0)/gib, (proccpu.Seconds(gwPid)-g0)/gib
	r.clientProduce = (proccpu.Seconds(os.Getpid()) - c0) / gib
	p.Close()
	cons := benchClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	warmFreeMemory(t, benchGWTouchMiB)
	b0, g0, c0 := proccpu.Seconds(brokerPid), proccpu.Seconds(gwPid), proccpu.Seconds(os.Getpid())
	start = time.Now()
	for n := 0; n < benchGWRecords; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	r.fetch = mib / time.Since(start).Seconds()
	r.brokerFetch, r.gwFetch = (proccpu.Seconds(brokerPid)-b0)/gib, (proccpu.Seconds(gwPid)-g0)/gib
	r.clientFetch = (proccpu.Seconds(os.Getpid()) - c0) / gib
	cons.Close()
	g0 = proccpu.Seconds(gwPid)
	r.p50, r.p99 = latencyPhase(ctx, t, addr, topic+"-lat")
	r.gwLatency = (proccpu.Seconds(gwPid) - g0) / ((benchGWLatency + benchGWLatencyWarm).Seconds() * benchGWRate / 1e4)
	return r
}

// warmFreeMemory touches mib MiB of fresh anonymous memory and unmaps it
// again, so that the kernel's free lists hold that many pages the host
// has backed. This machine is a virtual machine whose kernel reports
// freed memory to its host (free page reporting, 2 MiB blocks at a
// time), and the host takes those pages back: the first touch of each
// again costs a fault in the host, which the guest sees only as a slow
// copy. A Produce phase puts half a GiB into the broker's page cache;
// without this, whether its pages came from memory freed a moment before
// (the last run's deleted topics) or from memory the host had taken
// back decided the broker's CPU per GiB produced (its system time
// two to five times over, from one run to the next, whichever side was
// measured). Every side's phase gets the same, before it is timed.
func warmFreeMemory(t *testing.T, mib int) {
	t.Helper()
	m, err := syscall.Mmap(-1, 0, mib<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("map %d MiB to touch: %v", mib, err)
	}
	start := time.Now()
	for i := 0; i < len(m); i += os.Getpagesize() {
		m[i] = 1
	}
	t.Logf("touched %d MiB of free memory in %v", mib, time.Since(start).Round(time.Millisecond))
	if err := syscall.Munmap(m); err != nil {
		t.Fatalf("unmap the %d MiB touched: %v", mib, err)
	}
}

// latencyPhase produces benchGWRate records/s for benchGWLatencyWarm and
// then benchGWLatency, each stamped with its send time and number, and
// returns the p50 and p99 of the time until a consumer of the same addr
// received the records after the warm-up.
func latencyPhase(ctx context.Context, t *testing.T, addr, topic string) (p50, p99 time.Duration) {
	t.Helper()
	warm := int(benchGWLatencyWarm.Seconds() * benchGWRate)
	value := benchValue()
	total := int(benchGWLatency.Seconds() * benchGWRate)
	cons := benchClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	defer cons.Close()
	// No linger: kgo's default (10 ms) would hide what the gateway adds.
	p := benchClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	defer p.Close()
	got := make(chan []time.Duration, 1)
	go func() {
		lat := make([]time.Duration, 0, total)
		for len(lat) < total && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) >= 16 && int(binary.BigEndian.Uint64(r.Value[8:])) >= warm {
					lat = append(lat, now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(r.Value)))))
				}
			})
		}
		got <- lat
	}()
	start := time.Now()
	interval := time.Second / benchGWRate
	for i := 0; i < warm+total; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		v := slices.Clone(value)
		binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
		binary.BigEndian.PutUint64(v[8:], uint64(i))
		p.Produce(ctx, &kgo.Record{Value: v}, nil)
	}
	lat := <-got
	if len(lat) < total {
		t.Fatalf("latency phase: %d of %d records consumed", len(lat), total)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

// pinSelf pins every thread of this process to cpus (taskset -a -p);
// threads started later inherit it from the thread that starts them.
func pinSelf(t *testing.T, cpus string) {
	t.Helper()
	if out, err := exec.Command("taskset", "-a", "-p", "-c", cpus, strconv.Itoa(os.Getpid())).CombinedOutput(); err != nil {
		t.Fatalf("pinning this process to CPUs %s: %v: %s", cpus, err, out)
	}
}

// benchValue is a record value of benchGWRecSize bytes that does not
// compress: the same pseudo-random bytes in every run.
func benchValue() []byte {
	v := make([]byte, benchGWRecSize)
	rand.NewChaCha8([32]byte{'g', 'w'}).Read(v)
	return v
}

// benchClient is a client of addr that sends its batches uncompressed
// (kgo's default is snappy): with benchValue's bytes, the bytes on the
// wire are the records' own, so a phase's MiB/s is what crossed the data
// path.
func benchClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func createBenchTopic(ctx context.Context, t *testing.T, addr, topic string) {
	t.Helper()
	cl := benchClient(t, addr)
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, benchGWParts, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating %s: %v %+v", topic, err, resp)
	}
}

func deleteBenchTopics(ctx context.Context, t *testing.T, addr string, topics []string) {
	t.Helper()
	cl := benchClient(t, addr)
	defer cl.Close()
	req := kmsg.NewPtrDeleteTopicsRequest()
	for _, tp := range topics {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(tp)
		req.Topics = append(req.Topics, rt)
		req.TopicNames = append(req.TopicNames, tp)
	}
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("deleting %v: %v", topics, err)
	}
	for _, r := range resp.Topics {
		if r.ErrorCode != 0 {
			t.Fatalf("deleting %v: %v", topics, kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

// envRuns is the positive number of runs in environment variable env, or
// def when it is unset.
func envRuns(t *testing.T, env string, def int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", env, v)
	}
	return n
}
