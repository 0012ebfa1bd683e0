package uniform_test

// Parity with Kafka: the committed vectors under testdata/partition-assignors/
// hold generated inputs (*.in) and the output of Kafka 4.4.0's real
// server-side UniformAssignor and RangeAssignor on them (*.out), produced by
// interop/partition-parity. This test checks both Go ports (range lives in
// plugins/assignor-range; the harness runs both assignors on every input).
// Regenerate with
//
//	go test ./plugins/assignor-uniform -run TestParityVectors -update
//
// (needs java and mvn). TestParityLive re-runs a subset against Java.

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/internal/testtool"
	rangeassignor "github.com/coordhost/coordhost/plugins/assignor-range"
	uniform "github.com/coordhost/coordhost/plugins/assignor-uniform"
)

var update = flag.Bool("update", false, "rewrite testdata/partition-assignors from the generator and Kafka's assignors")

const (
	vectorDir = "../../testdata/partition-assignors"
	javaDir   = "../../interop/partition-parity"
	javaMain  = "coordhost.parity.PartitionParity"
)

// parityShapes sweeps group sizes, topic counts, partition counts (0
// included), subscription types, members without subscriptions, racks,
// static members and sticky histories.
func parityShapes() []abitest.PartitionShape {
	var out []abitest.PartitionShape
	members := []int{1, 2, 3, 4, 5, 7, 9, 12, 20, 31}
	for i := 0; i < 60; i++ {
		het := i%2 == 1
		sh := abitest.PartitionShape{
			Members:       members[i%len(members)],
			Topics:        1 + (i*3)%7,
			MaxPartitions: []int{0, 3, 8, 17, 40}[(i/2)%5],
			Heterogeneous: het,
			History:       []int{0, 40, 80, 100}[(i/3)%4],
			Racks:         []int{0, 0, 3}[i%3],
			Static:        []int{0, 50}[(i/4)%2],
			Seed:          uint64(7000 + i),
		}
		if sh.MaxPartitions == 0 {
			sh.MaxPartitions = 2 // some topics still get 0 partitions
		}
		if het && i%5 == 1 {
			sh.Unsubscribed = 1
		}
		out = append(out, sh)
	}
	out = append(out,
		abitest.PartitionShape{Members: 80, Topics: 25, MaxPartitions: 60, Heterogeneous: true, History: 90, Unsubscribed: 4, Racks: 3, Static: 30, Seed: 9001},
		abitest.PartitionShape{Members: 64, Topics: 12, MaxPartitions: 100, History: 95, Seed: 9002},
	)
	return out
}

func formatTopicParts(tps []abi.TopicPartitions) string {
	if len(tps) == 0 {
		return "-"
	}
	parts := make([]string, len(tps))
	for i, tp := range tps {
		parts[i] = fmt.Sprintf("%d:%s", tp.Topic, joinInts(tp.Partitions, ","))
	}
	return strings.Join(parts, ";")
}

func joinInts(xs []int32, sep string) string {
	if len(xs) == 0 {
		return "-"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatInput writes the parity input format read by PartitionParity.java.
func formatInput(req *abi.PartitionAssignRequest) string {
	var b strings.Builder
	b.WriteString("# coordhost partition-assignor parity input (generated; see plugins/assignor-uniform/parity_test.go)\n")
	typ := "homogeneous"
	if req.Heterogeneous {
		typ = "heterogeneous"
	}
	fmt.Fprintf(&b, "type %s\n", typ)
	if len(req.Racks) > 0 {
		fmt.Fprintf(&b, "racks %s\n", strings.Join(req.Racks, " "))
	}
	for _, t := range req.Topics {
		racks := "-"
		if len(t.PartitionRacks) > 0 {
			parts := make([]string, len(t.PartitionRacks))
			for i, rs := range t.PartitionRacks {
				parts[i] = strings.TrimSuffix(joinInts(rs, ","), "-")
			}
			racks = strings.Join(parts, ";")
		}
		fmt.Fprintf(&b, "topic %x %d racks %s\n", t.ID[:], t.Partitions, racks)
	}
	for _, m := range req.Members {
		fmt.Fprintf(&b, "member %s instance %s rack %s subscribed %s assigned %s\n", m.ID, orDash(m.InstanceID),
			orDash(m.Rack), joinInts(m.Subscribed, ","), formatTopicParts(m.Assigned))
	}
	return b.String()
}

// formatOutput writes the result format printed by PartitionParity.java for
// both assignors.
func formatOutput(req *abi.PartitionAssignRequest) string {
	var b strings.Builder
	for _, a := range []struct {
		name   string
		assign func(*abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error)
	}{{"uniform", uniform.Assign}, {"range", rangeassignor.Assign}} {
		b.WriteString(a.name + "\n")
		resp, err := a.assign(req)
		if err != nil {
			b.WriteString("error " + javaError(err) + "\n")
			continue
		}
		b.WriteString(formatMembers(req, resp))
	}
	return b.String()
}

func formatMembers(req *abi.PartitionAssignRequest, resp *abi.PartitionAssignResponse) string {
	idx := make([]int, len(req.Members))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(req.Members[a].ID, req.Members[b].ID) })
	var b strings.Builder
	for _, i := range idx {
		fmt.Fprintf(&b, "member %s %s\n", req.Members[i].ID, formatTopicParts(resp.Members[i]))
	}
	return b.String()
}

func javaError(err error) string {
	if errors.Is(err, uniform.ErrUnassigned) {
		return "PartitionAssignorException"
	}
	return err.Error()
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
		req := abitest.GeneratePartitions(sh)
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
		compareOutputs(t, name, sh, formatOutput(req), string(want))
	}
}

// compareOutputs reports each assignor whose Go output differs from Kafka's.
func compareOutputs(t *testing.T, name string, sh abitest.PartitionShape, got, want string) {
	t.Helper()
	gotBy, wantBy := sections(got), sections(want)
	for _, a := range []string{"uniform", "range"} {
		if gotBy[a] != wantBy[a] {
			t.Errorf("%s (%s): the Go %s assignor differs from Kafka's:\n%s", name, shapeKind(sh), a, firstDiff(gotBy[a], wantBy[a]))
		}
	}
}

// sections splits an output into its per-assignor parts.
func sections(out string) map[string]string {
	res := map[string]string{}
	name := ""
	for _, line := range strings.SplitAfter(out, "\n") {
		if line == "uniform\n" || line == "range\n" {
			name = strings.TrimSpace(line)
			continue
		}
		res[name] += line
	}
	return res
}

func shapeKind(sh abitest.PartitionShape) string {
	if sh.Heterogeneous {
		return "heterogeneous"
	}
	return "homogeneous"
}

func writeVectors(t *testing.T, shapes []abitest.PartitionShape) {
	if err := os.MkdirAll(vectorDir, 0o755); err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{}
	for i, sh := range shapes {
		inputs[vectorName(i)] = formatInput(abitest.GeneratePartitions(sh))
	}
	writeOutputs(t, inputs)
}

// writeOutputs writes each named input to the vector directory and Kafka's
// output on it next to it.
func writeOutputs(t *testing.T, inputs map[string]string) {
	var files []string
	for name, in := range inputs {
		path, _ := filepath.Abs(filepath.Join(vectorDir, name+".in"))
		if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
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

// TestParityLive runs Kafka's assignors now on a subset of the vectors, so
// that a stale committed output cannot hide a difference.
func TestParityLive(t *testing.T) {
	if os.Getenv("CI") != "true" && testing.Short() {
		t.Skip("runs java; CI=true always runs it")
	}
	subset := []int{0, 7, 13, 22, 31, 46, 55, 60, 61}
	shapes := parityShapes()
	dir := t.TempDir()
	var files []string
	for _, i := range subset {
		path := filepath.Join(dir, vectorName(i)+".in")
		if err := os.WriteFile(path, []byte(formatInput(abitest.GeneratePartitions(shapes[i]))), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	got := runJava(t, files)
	for _, i := range subset {
		compareOutputs(t, vectorName(i), shapes[i], formatOutput(abitest.GeneratePartitions(shapes[i])), got[vectorName(i)+".in"])
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
