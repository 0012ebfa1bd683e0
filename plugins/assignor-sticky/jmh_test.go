package sticky_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/internal/testtool"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

// TestJMH times Kafka 4.4.0's StickyTaskAssignor under JMH
// (interop/sticky-parity's StickyBench) and the Go port under the testing
// package's benchmark loop, on the same inputs: the benchmark shapes
// written as parity files, each checked first to give the same assignment
// on both sides, so both time the same work. By default it runs the
// smallest shape briefly (a smoke run: JMH builds, runs and reports);
// COORDHOST_JMH=1 runs every shape with -f 1 -wi 3 -i 5 (JMH's default
// 10 s iterations; about 12 minutes), as `make bench-jmh` does, and prints
// the table of docs/BENCHMARKS.md. Java's and Go's times come from the
// same run, one after the other on the same machine.
func TestJMH(t *testing.T) {
	full := os.Getenv("COORDHOST_JMH") == "1"
	shapes := benchShapes()
	jmhArgs := []string{"-f", "1", "-wi", "1", "-i", "1", "-w", "1s", "-r", "1s"}
	if full {
		jmhArgs = []string{"-f", "1", "-wi", "3", "-i", "5"}
	} else {
		shapes = shapes[:1]
	}
	testtool.Require(t, "java")
	testtool.MavenClasspath(t, javaDir)

	dir := t.TempDir()
	var files []string
	goMs := map[string]float64{}
	for _, c := range shapes {
		req := abitest.Generate(c.s)
		path := filepath.Join(dir, c.name+".in")
		if err := os.WriteFile(path, []byte(formatInput(req)), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
		goMs[c.name] = testtool.GoBenchMs(t, c.name, func() error { _, err := sticky.Assign(req); return err })
	}
	// Same work on both sides: Kafka's assignment of each file is the
	// Go port's.
	java1 := runJava(t, files)
	for _, c := range shapes {
		if got, want := goOutput(abitest.Generate(c.s)), java1[c.name+".in"]; got != want {
			t.Fatalf("%s: the Go port and Kafka's assignor differ, so their times would not compare:\n%s", c.name, firstDiff(got, want))
		}
	}

	javaMs := testtool.JMH(t, javaDir, "StickyBench", files, jmhArgs)
	var table strings.Builder
	table.WriteString("| shape | Kafka's StickyTaskAssignor (JMH), ms/op | Go port (native), ms/op | Java ÷ Go |\n|---|---|---|---|\n")
	for _, c := range shapes {
		j, ok := javaMs[c.name]
		if !ok {
			t.Fatalf("JMH gave no result for %s (results: %v)", c.name, javaMs)
		}
		fmt.Fprintf(&table, "| %s | %s | %.3f | %.2f |\n", c.name, j.Cell(), goMs[c.name], j.Ms/goMs[c.name])
	}
	t.Logf("JMH args %v\n%s", jmhArgs, table.String())
}
