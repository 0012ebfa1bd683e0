package loop

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
)

// TestSweepReadsSteppedBySweeper: the end-offset sweep's reads (readAll
// with inline) are stepped on the sweeping goroutine at an idle partition,
// so a sweep wakes no worker and is not woken back; a plain read is
// still stepped by a worker, and both see the same committed state.
func TestSweepReadsSteppedBySweeper(t *testing.T) {
	d := nativeDeps(t, assign.Builtins["sticky"].Native)
	l, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Shutdown(context.Background()) })
	streamsHeartbeat(t, l, "g", "m", 0, nil) // some state to read
	read := func(inline bool) (stack string, groups int) {
		t.Helper()
		err := l.readAll(context.Background(), inline, func(c *core.Coordinator, _ int64) core.Output {
			buf := make([]byte, 64<<10)
			stack = string(buf[:runtime.Stack(buf, false)])
			groups += len(c.GroupIDs())
			return core.Output{}
		})
		if err != nil {
			t.Fatal(err)
		}
		return stack, groups
	}
	// The join's records and its assignor run may still be in flight:
	// until they are committed the partition is not idle and the read
	// waits for a worker, as any read does.
	var sweep string
	var sweepGroups int
	for range 200 {
		if sweep, sweepGroups = read(true); strings.Contains(sweep, "(*Loop).readAll") {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(sweep, "(*Loop).readAll") {
		t.Fatalf("an inline read at an idle partition was not stepped by its caller:\n%s", sweep)
	}
	plain, plainGroups := read(false)
	if strings.Contains(plain, "(*Loop).readAll") {
		t.Fatalf("a plain read was stepped by its caller:\n%s", plain)
	}
	if sweepGroups != plainGroups || sweepGroups == 0 {
		t.Fatalf("inline read saw %d groups, plain read %d", sweepGroups, plainGroups)
	}
}
