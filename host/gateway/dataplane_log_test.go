package gateway

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestKfakeLoggerDemotesRoutineSlowEndTxn: kfake warns about any EndTxn
// over 5 ms, which every fsync'd commit is; below slowEndTxn the warning
// becomes DEBUG, above it (and every other warning) stays a warning.
func TestKfakeLoggerDemotesRoutineSlowEndTxn(t *testing.T) {
	var out bytes.Buffer
	k := kfakeLogger{slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	const slow = "txn: EndTxn slow pid=%d epoch=%d elapsed=%dms batches=%d groups=%d"
	k.Logf(kfake.LogLevelWarn, slow, int64(1), int16(2), int64(7), 3, 1)
	if out.Len() != 0 {
		t.Fatalf("routine EndTxn (7 ms) logged as a warning: %s", out.String())
	}
	k.Logf(kfake.LogLevelWarn, slow, int64(1), int16(2), int64(slowEndTxn), 3, 1)
	k.Logf(kfake.LogLevelWarn, "something else %d", 1)
	got := out.String()
	if !strings.Contains(got, "elapsed=100ms") || !strings.Contains(got, "something else 1") {
		t.Fatalf("warnings lost:\n%s", got)
	}
}
