package interop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coordhost/coordhost/interop/proccpu"
)

// javaClientJVMFlags are the JVM options Kafka's own perf-test scripts
// give a client (kafka-producer-perf-test.sh's heap, kafka-run-class.sh's
// defaults): full JIT and G1, as an application's client runs.
var javaClientJVMFlags = []string{"-Xmx512M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true"}

const dataPathBenchMain = "io.coordhost.interop.bench.DataPathBench"

// javaClients is the JVM that runs the Java client's phases of the
// data-path comparison (DataPathBench in interop/streams-app), one for
// every side, driven over its stdin.
type javaClients struct {
	p    *proc
	next int // the index of its next output line to read
}

func startJavaClients(t *testing.T, dir string) *javaClients {
	t.Helper()
	saved := jvmFlags
	jvmFlags = javaClientJVMFlags
	p := startJavaFrom(t, appDir, "datapath-java", dir, dataPathBenchMain)
	jvmFlags = saved
	j := &javaClients{p: p}
	j.await(t, "STARTED", time.Minute)
	return j
}

// stop ends the process (bounded), its clients closed.
func (j *javaClients) stop(t *testing.T) {
	t.Helper()
	j.send(t, "quit")
	select {
	case <-j.p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("Java clients: still running 30 s after quit\n%s", j.p.tail(20))
	}
}

// await waits for the process's next line that starts with want and
// returns it; an ERROR line first fails the test with it and what the
// process printed after it.
func (j *javaClients) await(t *testing.T, want string, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		line, next, err := j.p.waitLine("", j.next, time.Until(deadline))
		if err != nil {
			t.Fatalf("Java clients: waiting for %s: %v\n%s", want, err, j.p.tail(20))
		}
		j.next = next
		switch {
		case strings.HasPrefix(line, want):
			return line
		case strings.HasPrefix(line, "ERROR"):
			time.Sleep(100 * time.Millisecond) // the stack trace after it
			t.Fatalf("Java clients: %s\n%s", line, j.p.tail(20))
		}
	}
}

// send writes one command line to the process.
func (j *javaClients) send(t *testing.T, format string, args ...any) {
	t.Helper()
	if _, err := fmt.Fprintf(j.p.in, format+"\n", args...); err != nil {
		t.Fatalf("Java clients: %v\n%s", err, j.p.tail(20))
	}
}

// result is the key=value fields of a RESULT line.
func (j *javaClients) result(t *testing.T, phase string, d time.Duration) map[string]int64 {
	t.Helper()
	line := j.await(t, "RESULT "+phase, d)
	out := map[string]int64{}
	for _, f := range strings.Fields(line)[2:] {
		k, v, ok := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			t.Fatalf("Java clients: %q: field %q is not key=number", line, f)
		}
		out[k] = n
	}
	return out
}

// timed runs one of the client's timed phases, cmd a produce or fetch
// command: once the client is ready (its clients have the topic's
// metadata), before runs (the machine's memory touched, CPU counters
// read), then the go is given. It returns the phase's RESULT fields,
// waiting up to d for them.
func (j *javaClients) timed(t *testing.T, cmd string, before func(), d time.Duration) map[string]int64 {
	t.Helper()
	j.send(t, "%s", cmd)
	j.await(t, "READY", time.Minute)
	if before != nil {
		before()
	}
	j.send(t, "go")
	return j.result(t, strings.Fields(cmd)[0], d)
}

// run is kgoRun's phases with Kafka's Java client: produce and fetch
// timed by the client itself from the driver's "go" (given once the
// client has the topic's metadata and the machine's memory is touched,
// as for kgo), then the latency phase.
func (j *javaClients) run(t *testing.T, addr, brokerAddr, topic string, brokerPid, gwPid int) gwResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	defer benchTopics(ctx, t, addr, brokerAddr, topic)()
	var r gwResult
	jpid := j.p.cmd.Process.Pid
	mib := float64(benchGWRecords*benchGWRecSize) / (1 << 20)
	gib := mib / 1024

	var bu0, bs0, g0, c0 float64
	res := j.timed(t, fmt.Sprintf("produce %s %s %d %d", addr, topic, benchGWRecords, benchGWRecSize), func() {
		warmFreeMemory(t, benchGWTouchMiB)
		bu0, bs0 = proccpu.Times(brokerPid)
		g0, c0 = proccpu.Seconds(gwPid), proccpu.Seconds(jpid)
	}, 4*time.Minute)
	if res["errors"] != 0 || res["records"] != benchGWRecords {
		t.Fatalf("Java producer: %d records, %d failed", res["records"], res["errors"])
	}
	bu, bs := proccpu.Times(brokerPid)
	r.produce = mib / (float64(res["nanos"]) / 1e9)
	r.brokerProduce, r.brokerProduceSys, r.gwProduce = (bu+bs-bu0-bs0)/gib, (bs-bs0)/gib, (proccpu.Seconds(gwPid)-g0)/gib
	r.clientProduce = (proccpu.Seconds(jpid) - c0) / gib

	var b0 float64
	res = j.timed(t, fmt.Sprintf("fetch %s %s %d", addr, topic, benchGWRecords), func() {
		warmFreeMemory(t, benchGWTouchMiB)
		b0, g0, c0 = proccpu.Seconds(brokerPid), proccpu.Seconds(gwPid), proccpu.Seconds(jpid)
	}, 4*time.Minute)
	if res["records"] != benchGWRecords || res["bytes"] != benchGWRecords*benchGWRecSize {
		t.Fatalf("Java consumer: %d records of %d bytes in all, want %d of %d B", res["records"], res["bytes"], benchGWRecords, benchGWRecSize)
	}
	r.fetch = mib / (float64(res["nanos"]) / 1e9)
	r.brokerFetch, r.gwFetch = (proccpu.Seconds(brokerPid)-b0)/gib, (proccpu.Seconds(gwPid)-g0)/gib
	r.clientFetch = (proccpu.Seconds(jpid) - c0) / gib

	warm := int(benchGWLatencyWarm.Seconds() * benchGWRate)
	total := int(benchGWLatency.Seconds() * benchGWRate)
	g0 = proccpu.Seconds(gwPid)
	j.send(t, "latency %s %s-lat %d %d %d %d", addr, topic, benchGWRate, warm, total, benchGWRecSize)
	res = j.result(t, "latency", 4*time.Minute)
	if res["records"] != int64(total) {
		t.Fatalf("Java latency phase: %d of %d records", res["records"], total)
	}
	r.p50, r.p99 = time.Duration(res["p50us"])*time.Microsecond, time.Duration(res["p99us"])*time.Microsecond
	r.gwLatency = (proccpu.Seconds(gwPid) - g0) / ((benchGWLatency + benchGWLatencyWarm).Seconds() * benchGWRate / 1e4)
	return r
}
