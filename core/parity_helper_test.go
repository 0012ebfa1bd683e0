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
