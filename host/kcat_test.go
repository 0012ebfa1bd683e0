package host_test

import (
	"context"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coordhost/coordhost/internal/testtool"
)

// runKcatGroup runs kcat as a balanced consumer (-G, librdkafka's classic
// group protocol) in group until it has read n records, and returns them
// as "partition:offset:value" lines.
func runKcatGroup(t *testing.T, kcat, addr, group, topic string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-b", addr, "-G", group, "-c", strconv.Itoa(n), "-X", "auto.offset.reset=earliest",
		"-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500",
		"-q", "-f", "%p:%o:%s\n", topic)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("kcat -G: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	lines := strings.Fields(strings.TrimSpace(string(out)))
	sort.Strings(lines)
	return lines
}

// TestKcatBalancedConsumer: kcat (librdkafka) joins a classic group through
// coordhost with -G, consumes every record of a 3-partition topic and
// commits; a second kcat run in the same group resumes after the
// committed offsets and reads only the new records.
func TestKcatBalancedConsumer(t *testing.T) {
	kcat := testtool.Require(t, "kcat")
	srv := startLoopHost(t, "")
	addr := srv.KafkaAddr()
	ctx := timeout(t)
	if err := createTopic(ctx, newClient(t, addr), "kc-in", 3); err != nil {
		t.Fatal(err)
	}
	produceSpread(t, addr, "kc-in", 3, 2, "a")
	got := runKcatGroup(t, kcat, addr, "kg", "kc-in", 6)
	want := []string{"0:0:a-0-0", "0:1:a-0-1", "1:0:a-1-0", "1:1:a-1-1", "2:0:a-2-0", "2:1:a-2-1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("kcat read %v, want %v", got, want)
	}
	produceSpread(t, addr, "kc-in", 3, 1, "b")
	got = runKcatGroup(t, kcat, addr, "kg", "kc-in", 3)
	want = []string{"0:2:b-0-0", "1:2:b-1-0", "2:2:b-2-0"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("second kcat run read %v, want only the new records %v (resume from committed offsets)", got, want)
	}
}
