package testtool

import (
	"testing"
)

// fakeTB records how a helper ended the test without ending the real one.
type fakeTB struct {
	testing.TB
	fatal, skip bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Fatalf(string, ...any) { f.fatal = true }
func (f *fakeTB) Skipf(string, ...any)  { f.skip = true }

func TestMissingToolFailsUnderCI(t *testing.T) {
	for _, ci := range []string{"true", ""} {
		t.Setenv("CI", ci)
		tb := &fakeTB{TB: t}
		Require(tb, "coordhost-no-such-tool-xyz")
		if ci == "true" && (!tb.fatal || tb.skip) {
			t.Errorf("CI=true: fatal=%v skip=%v, want a failure", tb.fatal, tb.skip)
		}
		if ci == "" && (tb.fatal || !tb.skip) {
			t.Errorf("CI unset: fatal=%v skip=%v, want a skip", tb.fatal, tb.skip)
		}
	}
}

func TestPresentToolIsFound(t *testing.T) {
	t.Setenv("CI", "true")
	tb := &fakeTB{TB: t}
	if p := Require(tb, "go"); p == "" || tb.fatal || tb.skip {
		t.Errorf("go: path %q fatal=%v skip=%v", p, tb.fatal, tb.skip)
	}
}
