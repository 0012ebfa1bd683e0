// Package testtool lets tests depend on outside tools (java, mvn, clang, kcat,
// a broker) honestly: a missing tool skips the test on a developer's machine,
// but fails it under CI=true, so CI never passes by skipping.
package testtool

import (
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true in the environment).
func InCI() bool { return os.Getenv("CI") == "true" }

// Require returns the path of the named executable. When it is not on PATH
// the test is skipped, or failed under CI.
func Require(tb testing.TB, name string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(tb, name+" not found on PATH")
	}
	return path
}

// Missing stops the test for a missing prerequisite described by why:
// t.Fatal under CI, t.Skip elsewhere.
func Missing(tb testing.TB, why string) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("required under CI=true: %s (.ci/run must install it)", why)
		return
	}
	tb.Skipf("skipped: %s (required under CI=true)", why)
}
