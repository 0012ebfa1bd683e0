package testtool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// JMHScore is one JMH result in average-time mode: the mean and its
// error (0 after a single iteration, where JMH gives none), in ms/op.
type JMHScore struct{ Ms, Error float64 }

// JMH builds the Maven project in dir (as MavenClasspath) and runs JMH's
// main on benchmark, once per input file (-p input=FILE), with args (the
// run's forks and iterations). It returns the scores by file name without
// its extension. JMH's machine-wide lock is ignored: go test runs packages
// in parallel, and a smoke run must not fail because another JMH run
// holds it (a full run's figures want the machine to itself all the same).
// A missing java or mvn skips the test, or fails it under CI=true; a
// failed run, or a result not in ms/op, fails it.
func JMH(tb testing.TB, dir, benchmark string, files, args []string) map[string]JMHScore {
	tb.Helper()
	java := Require(tb, "java")
	cp := MavenClasspath(tb, dir)
	out := filepath.Join(tb.TempDir(), "jmh.json")
	cmd := exec.Command(java, append([]string{"-Djmh.ignoreLock=true", "-cp", cp, "org.openjdk.jmh.Main", benchmark, "-rf", "json", "-rff", out,
		"-p", "input=" + strings.Join(files, ",")}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if log, err := cmd.Output(); err != nil {
		tb.Fatalf("JMH %s: %v\n%s\n%s", benchmark, err, tail(string(log), 3000), tail(stderr.String(), 3000))
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	var results []struct {
		Params        map[string]string `json:"params"`
		PrimaryMetric struct {
			Score      float64 `json:"score"`
			ScoreError any     `json:"scoreError"` // "NaN" after one iteration
			ScoreUnit  string  `json:"scoreUnit"`
		} `json:"primaryMetric"`
	}
	if err := json.Unmarshal(raw, &results); err != nil {
		tb.Fatalf("JMH's JSON result: %v", err)
	}
	scores := map[string]JMHScore{}
	for _, r := range results {
		if r.PrimaryMetric.ScoreUnit != "ms/op" || r.PrimaryMetric.Score <= 0 {
			tb.Fatalf("JMH result %+v: want a positive score in ms/op", r)
		}
		e, _ := r.PrimaryMetric.ScoreError.(float64)
		name := filepath.Base(r.Params["input"])
		scores[strings.TrimSuffix(name, filepath.Ext(name))] = JMHScore{r.PrimaryMetric.Score, e}
	}
	return scores
}

// Cell renders the score for a table: the mean with its error, or the
// mean alone after a single iteration.
func (s JMHScore) Cell() string {
	if s.Error == 0 {
		return fmt.Sprintf("%.3f (one iteration)", s.Ms)
	}
	return fmt.Sprintf("%.3f ± %.3f", s.Ms, s.Error)
}

// GoBenchMs runs op in the testing package's benchmark loop and returns
// its time in ms/op; an error from op fails the benchmark.
func GoBenchMs(tb testing.TB, name string, op func() error) float64 {
	tb.Helper()
	res := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			if err := op(); err != nil {
				b.Fatal(err)
			}
		}
	})
	if res.N == 0 {
		tb.Fatalf("%s: the Go benchmark did not run", name)
	}
	return float64(res.NsPerOp()) / 1e6
}
