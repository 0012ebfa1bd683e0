package loop

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
)

// TestNoteFallback: a run the fallback answered is shown for its group
// until a run the plugin answers itself clears it; other groups are not
// touched.
func TestNoteFallback(t *testing.T) {
	l := &Loop{log: slog.New(slog.DiscardHandler), history: newHistory()}
	run := core.AssignorRun{Group: "g", Epoch: 3, Assignor: "ha"}
	l.NoteFallback(run, &assign.FellBack{Fallback: "sticky", Err: errors.New("memory_limit")})
	fb := l.fallbacks.get("g")
	if fb == nil || fb.Assignor != "ha" || fb.Fallback != "sticky" || fb.Epoch != 3 || fb.Error != "memory_limit" || fb.At.IsZero() {
		t.Fatalf("fallback not recorded: %+v", fb)
	}
	if ev := l.history.get("g"); len(ev) != 1 {
		t.Fatalf("group events %v, want the fallback noted", ev)
	}
	if l.fallbacks.get("other") != nil {
		t.Fatal("another group shows a fallback")
	}
	run.Epoch = 4
	l.NoteFallback(run, nil)
	if fb := l.fallbacks.get("g"); fb != nil {
		t.Fatalf("a run the plugin answered did not clear the fallback: %+v", fb)
	}
}
