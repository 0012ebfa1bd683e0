package interop

import (
	"os"
	"testing"
)

// needInterop skips the test unless COORDHOST_INTEROP=1: the suite starts
// several JVMs and runs for minutes, so it is a separate serial CI step, not
// part of the parallel `go test ./...`.
func needInterop(t *testing.T) {
	t.Helper()
	if os.Getenv("COORDHOST_INTEROP") != "1" {
		t.Skip("interop suite: set COORDHOST_INTEROP=1 to run (see docs/INTEROP.md)")
	}
}

// logDir is where the suite keeps process logs: $COORDHOST_INTEROP_LOGS when
// set (CI keeps them as artifacts), else the test's temporary directory.
func logDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("COORDHOST_INTEROP_LOGS"); d != "" {
		d = d + "/" + t.Name()
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}
