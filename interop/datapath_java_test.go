package interop

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestInteropJavaDataPath runs the Java client's phases of make
// bench-gateway (DataPathBench) at a small size through coordhost's
// embedded data plane: Kafka's own producer writes records through
// coordhost, its consumer reads every one back with its bytes, and the
// latency phase gets each of its records; the bench's Java side and its
// parsing stay working. No timing is asserted.
func TestInteropJavaDataPath(t *testing.T) {
	needInterop(t)
	dir := logDir(t)
	c := startCoordhost(t, dir, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic, records = "datapath-java", 5000
	createBenchTopic(ctx, t, c.addr, topic)
	createBenchTopic(ctx, t, c.addr, topic+"-lat")
	j := startJavaClients(t, dir)

	res := j.timed(t, fmt.Sprintf("produce %s %s %d %d", c.addr, topic, records, benchGWRecSize), nil, 2*time.Minute)
	if res["records"] != records || res["errors"] != 0 || res["nanos"] <= 0 {
		t.Fatalf("produce: %v, want %d records, no error", res, records)
	}

	res = j.timed(t, fmt.Sprintf("fetch %s %s %d", c.addr, topic, records), nil, 2*time.Minute)
	if res["records"] != records || res["bytes"] != records*benchGWRecSize {
		t.Fatalf("fetch: %v, want %d records of %d B", res, records, benchGWRecSize)
	}

	const warm, total = 100, 400
	j.send(t, "latency %s %s-lat %d %d %d %d", c.addr, topic, 200, warm, total, benchGWRecSize)
	res = j.result(t, "latency", 2*time.Minute)
	if res["records"] != total || res["p50us"] <= 0 || res["p99us"] < res["p50us"] {
		t.Fatalf("latency: %v, want %d records, 0 < p50 <= p99", res, total)
	}
	j.stop(t)
	t.Logf("latency through coordhost's embedded data plane at 200 records/s: p50 %d µs, p99 %d µs", res["p50us"], res["p99us"])
}
