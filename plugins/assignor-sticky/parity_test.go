package sticky_test

// Parity with Kafka: the committed vectors under testdata/sticky/ hold
// generated inputs (*.in) and the output of Kafka 4.4.0's real
// StickyTaskAssignor on them (*.out), produced by interop/sticky-parity.
// Regenerate both with
//
//	go test ./plugins/assignor-sticky -run TestParityVectors -update
//
// (needs java and mvn). Every run compares the Go port with the committed
// outputs; TestParityLive re-runs a subset, and the 1000 x 10,000 case,
// against Java.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/internal/testtool"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

var update = flag.Bool("update", false, "rewrite testdata/sticky from the generator and Kafka's assignor")

const (
	vectorDir = "../../testdata/sticky"
	javaDir   = "../../interop/sticky-parity"
	javaMain  = "coordhost.parity.StickyParity"
)

// parityShapes are the generated parity inputs: a sweep over group sizes,
// process sharing, topologies, standby counts, histories and offsets.
func parityShapes() []abitest.Shape {
	var out []abitest.Shape
	members := []int{1, 2, 3, 4, 5, 7, 8, 12, 20, 33}
	for i := 0; i < 60; i++ {
		m := members[i%len(members)]
		out = append(out, abitest.Shape{
			Members:       m,
			Processes:     max(1, m/(1+i%3)),
			Subtopologies: 1 + i%5,
			Partitions:    1 + (i*7)%23,
			StatelessEach: (i / 5) % 3,
			Standbys:      (i / 3) % 4,
			History:       []int{0, 50, 90, 100}[(i/2)%4],
			Offsets:       i%3 != 0,
			RandomIDs:     i%2 == 1,
			Seed:          uint64(1000 + i),
		})
	}
	// A group without members: Kafka throws.
	out = append(out, abitest.Shape{Members: 0, Processes: 1, Subtopologies: 1, Partitions: 3, Seed: 2000})
	// Larger groups.
	out = append(out,
		abitest.Shape{Members: 100, Processes: 40, Subtopologies: 8, Partitions: 25, StatelessEach: 4, Standbys: 1, History: 80, Offsets: true, RandomIDs: true, Seed: 3000},
		abitest.Shape{Members: 60, Processes: 60, Subtopologies: 3, Partitions: 64, Standbys: 2, History: 95, Offsets: true, Seed: 3001},
	)
	return out
}

// bigShape is the 1000 members x 10,000 tasks case with standbys; it is
// generated, not committed.
var bigShape = abitest.Shape{Members: 1000, Processes: 500, Subtopologies: 10, Partitions: 1053, StatelessEach: 5,
	Standbys: 1, History: 90, Offsets: true, RandomIDs: true, Seed: 4242}

func formatTasks(req *abi.AssignRequest, space abi.TaskSpace, ts []int32) string {
	if len(ts) == 0 {
		return "-"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		s, p := space.Locate(t)
		parts[i] = fmt.Sprintf("%s:%d", req.Subtopologies[s].ID, p)
	}
	return strings.Join(parts, ",")
}

// formatInput writes the parity input format read by StickyParity.java.
func formatInput(req *abi.AssignRequest) string {
	space := abi.NewTaskSpace(req.Subtopologies)
	var b strings.Builder
	b.WriteString("# coordhost sticky parity input (generated; see plugins/assignor-sticky/parity_test.go)\n")
	fmt.Fprintf(&b, "standbys %d\n", req.Configs.NumStandbyReplicas)
	for _, s := range req.Subtopologies {
		kind := "stateless"
		if s.Stateful {
			kind = "stateful"
		}
		fmt.Fprintf(&b, "subtopology %s %d %s\n", s.ID, s.Partitions, kind)
	}
	for _, m := range req.Members {
		offs := "-"
		if len(m.TaskOffsets) > 0 {
			var parts []string
			for _, o := range m.TaskOffsets {
				parts = append(parts, formatTasks(req, space, []int32{o.Task})+"="+fmt.Sprint(o.Offset))
			}
			offs = strings.Join(parts, ",")
		}
		fmt.Fprintf(&b, "member %s %s active %s standby %s warmup %s offsets %s\n", m.ID, req.Processes[m.Process],
			formatTasks(req, space, m.Active), formatTasks(req, space, m.Standby), formatTasks(req, space, m.Warmup), offs)
	}
	return b.String()
}

// formatOutput writes the result format printed by StickyParity.java.
func formatOutput(req *abi.AssignRequest, resp *abi.AssignResponse, err error) string {
	if err != nil {
		return "error " + err.Error() + "\n"
	}
	space := abi.NewTaskSpace(req.Subtopologies)
	idx := make([]int, len(req.Members))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return req.Members[idx[a]].ID < req.Members[idx[b]].ID })
	var b strings.Builder
	for _, i := range idx {
		fmt.Fprintf(&b, "member %s active %s standby %s\n", req.Members[i].ID,
			formatTasks(req, space, resp.Members[i].Active), formatTasks(req, space, resp.Members[i].Standby))
	}
	return b.String()
}

func goOutput(req *abi.AssignRequest) string {
	resp, err := sticky.Assign(req)
	return formatOutput(req, resp, err)
}

// runJava runs Kafka's assignor on the given input files and returns the
// output per file name.
func runJava(t *testing.T, files []string) map[string]string {
	t.Helper()
	return testtool.JavaMainPerFile(t, javaDir, javaMain, files...)
}

func vectorName(i int) string { return fmt.Sprintf("case%03d", i) }

func TestParityVectors(t *testing.T) {
	shapes := parityShapes()
	if *update {
		writeVectors(t, shapes)
	}
	for i, sh := range shapes {
		name := vectorName(i)
		req := abitest.Generate(sh)
		in, err := os.ReadFile(filepath.Join(vectorDir, name+".in"))
		if err != nil {
			t.Fatalf("%v (regenerate with -update)", err)
		}
		if string(in) != formatInput(req) {
			t.Fatalf("%s.in differs from the generator's output: the generator changed; regenerate with -update", name)
		}
		want, err := os.ReadFile(filepath.Join(vectorDir, name+".out"))
		if err != nil {
			t.Fatal(err)
		}
		if got := goOutput(req); got != string(want) {
			t.Errorf("%s: Go port differs from Kafka's StickyTaskAssignor:\n%s", name, firstDiff(got, string(want)))
		}
	}
}

func writeVectors(t *testing.T, shapes []abitest.Shape) {
	if err := os.MkdirAll(vectorDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var files []string
	for i, sh := range shapes {
		path, _ := filepath.Abs(filepath.Join(vectorDir, vectorName(i)+".in"))
		if err := os.WriteFile(path, []byte(formatInput(abitest.Generate(sh))), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	for name, body := range runJava(t, files) {
		out := filepath.Join(vectorDir, strings.TrimSuffix(name, ".in")+".out")
		if err := os.WriteFile(out, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestParityLive runs Kafka's assignor now on a subset of the vectors (so a
// stale committed output cannot hide a difference) and on the 1000 x
// 10,000 case.
func TestParityLive(t *testing.T) {
	subset := []int{3, 17, 29, 44, 58, 60, 61}
	var files []string
	for _, i := range subset {
		p, _ := filepath.Abs(filepath.Join(vectorDir, vectorName(i)+".in"))
		files = append(files, p)
	}
	var big *abi.AssignRequest
	if !testing.Short() {
		big = abitest.Generate(bigShape)
		p := filepath.Join(t.TempDir(), "big.in")
		if err := os.WriteFile(p, []byte(formatInput(big)), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	java := runJava(t, files)
	shapes := parityShapes()
	for _, i := range subset {
		name := vectorName(i) + ".in"
		if got := goOutput(abitest.Generate(shapes[i])); got != java[name] {
			t.Errorf("%s: Go port differs from Kafka's StickyTaskAssignor:\n%s", name, firstDiff(got, java[name]))
		}
	}
	if big != nil {
		if got := goOutput(big); got != java["big.in"] {
			t.Errorf("1000x10000: Go port differs from Kafka:\n%s", firstDiff(got, java["big.in"]))
		}
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  go:    %s\n  kafka: %s", i+1, gl, wl)
		}
	}
	return "(no difference)"
}
