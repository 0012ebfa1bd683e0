package core

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/internal/testtool"
)

// differential runs n random cases through core and through one of Kafka
// 4.4's own classes (a main class of interop/records-golden that reads one
// case per line and prints one outcome per line) and requires every outcome
// to be equal. newCase returns the case line for Kafka and core's outcome in
// the same canonical form.
func differential(t *testing.T, rng *rand.Rand, n int, mainClass string, newCase func(*rand.Rand, int) (line, outcome string)) {
	t.Helper()
	lines, want := make([]string, n), make([]string, n)
	for i := range n {
		lines[i], want[i] = newCase(rng, i)
	}
	in := filepath.Join(t.TempDir(), "cases.txt")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := testtool.JavaMain(t, "../interop/records-golden", mainClass, in)
	kafka := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(kafka) != n {
		t.Fatalf("%s answered %d of %d cases", mainClass, len(kafka), n)
	}
	bad := 0
	for i := range kafka {
		if kafka[i] == want[i] {
			continue
		}
		if bad++; bad <= 8 {
			t.Errorf("case differs:\n in    %s\n kafka %s\n core  %s", lines[i], kafka[i], want[i])
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d cases differ from Kafka", bad, n)
	}
}

// kafkaReserializes has Kafka 4.4's own record classes (interop/records-golden,
// RecordsGolden decode) read records our encoder wrote — lines of
// "NAME KEYHEX VALUEHEX" ("-" for a tombstone) — and requires Kafka to
// re-serialize each to the same key and value bytes.
func kafkaReserializes(t *testing.T, lines []string) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "ours.txt")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	decoded := testtool.JavaMain(t, "../interop/records-golden", "coordhost.golden.RecordsGolden", "decode", in)
	got := strings.Split(strings.TrimSpace(string(decoded)), "\n")
	if len(got) != len(lines) {
		t.Fatalf("Kafka decoded %d of %d records:\n%s", len(got), len(lines), decoded)
	}
	for i, line := range got {
		f := strings.SplitN(line, " ", 4)
		w := strings.Fields(lines[i])
		if len(f) < 4 || f[0] != w[0] || f[1] != w[1] || f[2] != w[2] {
			t.Errorf("Kafka re-serialized %s differently:\n ours  %s\n kafka %s", w[0], lines[i], line)
		}
	}
}
