package ha_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/internal/testtool"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

var update = flag.Bool("update", false, "regenerate testdata/ha from the Go generator and Java (needs java and mvn)")

const (
	vectorDir  = "../../testdata/ha"
	harnessDir = "../../interop/ha-parity"
	harness    = "org.apache.kafka.streams.processor.internals.assignment.HaParity"
	// parityCases is how many generated inputs the vectors hold.
	parityCases = 48
	// Cases after heavyFrom are "tag-heavy": two standbys over skewed
	// cluster and zone tags, so rack-aware placement leaves replicas to the
	// least-loaded fallback
	// (Kafka's HashMap order of pending tasks matters there).
	heavyFrom = 40
)

// parityCase is one generated input: the request the plugin sees and the
// same group in the Java harness's text format.
type parityCase struct {
	name string
	req  *abi.AssignRequest
	java string
}

// genParity builds case seed deterministically: 2-7 processes of 1-3
// members, 1-4 subtopologies (some stateless), running actives, local
// state (some beyond the end offset: corrupt), unknown end offsets,
// acceptable lags from 0 to MaxInt64, 0-2 standbys, 1-3 warm-ups, and
// zone/cluster client tags. Seeds above heavyFrom are tag-heavy.
func genParity(seed int) parityCase {
	heavy := seed > heavyFrom
	rng := rand.New(rand.NewPCG(uint64(seed), 0x4a41))
	name := fmt.Sprintf("seed-%02d", seed)
	req := &abi.AssignRequest{GroupID: name, Seed: uint64(seed)}
	acceptable := []int64{0, 10, 100, 500, 1000, math.MaxInt64}[rng.IntN(6)]
	req.Configs = abi.Configs{AcceptableRecoveryLag: acceptable, NumWarmupReplicas: int32(1 + rng.IntN(3)),
		NumStandbyReplicas: int32(rng.IntN(3))}
	switch rng.IntN(3) {
	case 1:
		req.Configs.RackAwareAssignmentTags = []string{"zone"}
	case 2:
		req.Configs.RackAwareAssignmentTags = []string{"cluster", "zone"}
	}
	subs, parts, procs, zones := 1+rng.IntN(4), 6, 2+rng.IntN(6), 3
	if heavy {
		req.Configs.NumStandbyReplicas, req.Configs.RackAwareAssignmentTags = 2, []string{"cluster", "zone"}
		subs, parts, procs = 2+rng.IntN(2), 12, 4+rng.IntN(3)
	}
	for s := 0; s < subs; s++ {
		req.Subtopologies = append(req.Subtopologies, abi.Subtopology{ID: fmt.Sprint(s),
			Partitions: int32(1 + rng.IntN(parts)), Stateful: heavy || rng.IntN(10) < 7})
	}
	var procTags [][]abi.KV
	for p := 0; p < procs; p++ {
		req.Processes = append(req.Processes, fmt.Sprintf("00000000-0000-0000-0000-%012x", p+1))
		tags := []abi.KV{{Key: "cluster", Value: fmt.Sprint("k", rng.IntN(2)*rng.IntN(2))}, {Key: "zone", Value: fmt.Sprint("z", rng.IntN(zones))}}
		procTags = append(procTags, tags)
		for k := 0; k < 1+rng.IntN(3); k++ {
			req.Members = append(req.Members, abi.Member{ID: fmt.Sprintf("m%d-%d", p, k), Process: int32(p), ClientTags: tags})
		}
	}
	membersOf := func(p int) []int {
		var out []int
		for i, m := range req.Members {
			if int(m.Process) == p {
				out = append(out, i)
			}
		}
		return out
	}
	var java strings.Builder
	fmt.Fprintf(&java, "case %s\nconfig %d %d %d %s\n", name, acceptable, req.Configs.NumWarmupReplicas,
		req.Configs.NumStandbyReplicas, orDash(strings.Join(req.Configs.RackAwareAssignmentTags, ",")))
	offsets := make([][]string, procs)
	space := abi.NewTaskSpace(req.Subtopologies)
	for s, sub := range req.Subtopologies {
		for part := int32(0); part < sub.Partitions; part++ {
			t := space.Task(int32(s), part)
			if !sub.Stateful {
				fmt.Fprintf(&java, "task %d %d 0\n", s, part)
				if rng.IntN(2) == 0 {
					m := &req.Members[rng.IntN(len(req.Members))]
					m.Active = append(m.Active, t)
				}
				continue
			}
			end, known := int64(rng.IntN(2000)), rng.IntN(10) != 0
			javaEnd := end
			if known {
				m := &req.Members[rng.IntN(len(req.Members))]
				m.TaskEndOffsets = append(m.TaskEndOffsets, abi.TaskOffset{Task: t, Offset: end})
			} else {
				javaEnd = math.MaxInt64
			}
			fmt.Fprintf(&java, "task %d %d 1 %d\n", s, part, javaEnd)
			runner := -1
			if rng.IntN(10) < 6 {
				runner = rng.IntN(procs)
				ms := membersOf(runner)
				m := &req.Members[ms[rng.IntN(len(ms))]]
				m.Active = append(m.Active, t)
				offsets[runner] = append(offsets[runner], fmt.Sprintf("offset %d %d %d -2", runner, s, part))
			}
			for p := 0; p < procs; p++ {
				if p == runner || rng.IntN(10) >= 4 {
					continue
				}
				off := int64(rng.IntN(int(end) + 60))
				ms := membersOf(p)
				m := &req.Members[ms[rng.IntN(len(ms))]]
				m.TaskOffsets = append(m.TaskOffsets, abi.TaskOffset{Task: t, Offset: off})
				offsets[p] = append(offsets[p], fmt.Sprintf("offset %d %d %d %d", p, s, part, off))
			}
		}
	}
	for p := 0; p < procs; p++ {
		fmt.Fprintf(&java, "process %s %d %s\n", req.Processes[p], len(membersOf(p)), javaTags(procTags[p]))
	}
	for _, os := range offsets {
		for _, l := range os {
			java.WriteString(l + "\n")
		}
	}
	java.WriteString("end\n")
	leaderEnds(req)
	return parityCase{name: name, req: req, java: java.String()}
}

// leaderEnds moves each end offset that landed on a member reporting an
// offset for the same task to the first member reporting neither. The
// harness's end offsets are the leader's (fetched for the whole group), so
// no member's offset may be measured against one as the end offset it
// reported itself (ComputeLags); where every member reports an offset for
// the task, the end offset stays where it is.
func leaderEnds(req *abi.AssignRequest) {
	has := func(os []abi.TaskOffset, t int32) bool {
		return slices.ContainsFunc(os, func(o abi.TaskOffset) bool { return o.Task == t })
	}
	for i := range req.Members {
		m := &req.Members[i]
		for k := 0; k < len(m.TaskEndOffsets); k++ {
			e := m.TaskEndOffsets[k]
			if !has(m.TaskOffsets, e.Task) {
				continue
			}
			for j := range req.Members {
				if o := &req.Members[j]; !has(o.TaskOffsets, e.Task) && !has(o.TaskEndOffsets, e.Task) {
					at := sort.Search(len(o.TaskEndOffsets), func(x int) bool { return o.TaskEndOffsets[x].Task > e.Task })
					o.TaskEndOffsets = slices.Insert(o.TaskEndOffsets, at, e)
					m.TaskEndOffsets = slices.Delete(m.TaskEndOffsets, k, k+1)
					k--
					break
				}
			}
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func javaTags(kvs []abi.KV) string {
	var parts []string
	for _, kv := range kvs {
		parts = append(parts, kv.Key+"="+kv.Value)
	}
	return orDash(strings.Join(parts, ";"))
}

func parityInputs() ([]parityCase, string) {
	var all strings.Builder
	all.WriteString("# Generated by: go test ./plugins/assignor-ha -run TestParityVectors -update\n")
	all.WriteString("# Format: interop/ha-parity/README.md and plugins/assignor-ha/parity_test.go (genParity).\n")
	cases := make([]parityCase, parityCases)
	for i := range cases {
		cases[i] = genParity(i + 1)
		all.WriteString(cases[i].java)
	}
	return cases, all.String()
}

// javaProcess is one process line of the harness output.
type javaProcess struct {
	exact                   bool
	active, standby, warmup []string
}

type javaCase struct {
	probing bool
	procs   map[string]javaProcess
}

func parseJava(t *testing.T, out []byte) map[string]javaCase {
	t.Helper()
	cases := map[string]javaCase{}
	var name string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 4 && f[0] == "case":
			name = f[1]
			cases[name] = javaCase{probing: f[3] == "true", procs: map[string]javaProcess{}}
		case len(f) == 10 && f[0] == "process":
			cases[name].procs[f[1]] = javaProcess{exact: f[3] == "1", active: splitList(f[5]), standby: splitList(f[7]), warmup: splitList(f[9])}
		case len(f) == 1 && f[0] == "end":
		default:
			t.Fatalf("harness output line %q", sc.Text())
		}
	}
	return cases
}

func splitList(s string) []string {
	if s == "-" {
		return nil
	}
	return strings.Split(s, ",")
}

// goTasks names task indices as the harness does: subtopology_partition.
func goTasks(req *abi.AssignRequest, ts []int32) []string {
	space := abi.NewTaskSpace(req.Subtopologies)
	var out []string
	for _, t := range ts {
		s, p := space.Locate(t)
		out = append(out, fmt.Sprintf("%s_%d", req.Subtopologies[s].ID, p))
	}
	return out
}

// compareParity checks the plugin's per-process result against Java's.
// Where the harness could not tell which standbys were warm-ups (exact 0),
// standbys and warm-ups are compared together.
func compareParity(t *testing.T, c parityCase, want javaCase) (inexact int) {
	t.Helper()
	r, err := ha.AssignProcesses(c.req)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	if r.ProbingNeeded != want.probing {
		t.Errorf("%s: probing needed %v, Java %v", c.name, r.ProbingNeeded, want.probing)
	}
	if len(r.Processes) != len(want.procs) {
		t.Fatalf("%s: %d processes, Java %d", c.name, len(r.Processes), len(want.procs))
	}
	for _, pa := range r.Processes {
		id := c.req.Processes[pa.Process]
		w, ok := want.procs[id]
		if !ok {
			t.Fatalf("%s: Java has no process %s", c.name, id)
		}
		eq := func(kind string, got, want []string) {
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: process %s %s = %v, Java %v", c.name, id, kind, got, want)
			}
		}
		eq("active", goTasks(c.req, pa.Active), w.active)
		if w.exact {
			eq("standby", goTasks(c.req, pa.Standby), w.standby)
			eq("warmup", goTasks(c.req, pa.Warmup), w.warmup)
		} else {
			inexact++
			all := goTasks(c.req, append(append([]int32(nil), pa.Standby...), pa.Warmup...))
			sort.Strings(all)
			javaAll := append(append([]string(nil), w.standby...), w.warmup...)
			sort.Strings(javaAll)
			eq("standby+warmup", all, javaAll)
		}
	}
	return inexact
}

// TestParityVectors compares the plugin with Kafka's HighAvailabilityTaskAssignor
// on the committed vectors (no Java needed). With -update it regenerates
// them: inputs from genParity, expected outputs from the Java harness.
func TestParityVectors(t *testing.T) {
	cases, inputs := parityInputs()
	inPath, outPath := filepath.Join(vectorDir, "inputs.txt"), filepath.Join(vectorDir, "expected.txt")
	if *update {
		if err := os.MkdirAll(vectorDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(inPath, []byte(inputs), 0o644); err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(inPath)
		out := testtool.JavaMain(t, harnessDir, harness, abs)
		if err := os.WriteFile(outPath, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(inPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != inputs {
		t.Fatal("testdata/ha/inputs.txt is not what the generator makes: run with -update")
	}
	expected, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	want := parseJava(t, expected)
	if len(want) != len(cases) {
		t.Fatalf("expected.txt has %d cases, want %d", len(want), len(cases))
	}
	inexact, warmups := 0, 0
	for _, c := range cases {
		inexact += compareParity(t, c, want[c.name])
		for _, p := range want[c.name].procs {
			warmups += len(p.warmup)
		}
	}
	t.Logf("%d cases, %d Java warm-ups, %d process results compared as standby+warm-up union", len(cases), warmups, inexact)
}

// TestParityJava re-runs a subset of the vectors through Kafka's jar and
// checks Java still gives the committed outputs, and the plugin agrees.
func TestParityJava(t *testing.T) {
	cases, _ := parityInputs()
	subset := []string{"seed-01", "seed-07", "seed-13", "seed-22", "seed-31", "seed-43", "seed-47"}
	abs, err := filepath.Abs(filepath.Join(vectorDir, "inputs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	live := parseJava(t, testtool.JavaMain(t, harnessDir, harness, append([]string{abs}, subset...)...))
	expected, err := os.ReadFile(filepath.Join(vectorDir, "expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	committed := parseJava(t, expected)
	for _, c := range cases {
		w, ok := live[c.name]
		if !ok {
			continue
		}
		if !reflect.DeepEqual(w, committed[c.name]) {
			t.Errorf("%s: Java now gives %+v, committed %+v", c.name, w, committed[c.name])
		}
		compareParity(t, c, w)
	}
	if len(live) != len(subset) {
		t.Fatalf("Java ran %d of %d cases", len(live), len(subset))
	}
}

// uuidProcesses are process ids in string order whose order as Java UUIDs
// (signed: 8 to f first) differs: Kafka walks them 8c, c1, e9, f0, 0a,
// 3b, 7f.
var uuidProcesses = []string{
	"0a0c3f1e-5b6d-4e8f-9a1b-2c3d4e5f6a7b", "3b2a1c0d-9e8f-4a7b-8c6d-5e4f3a2b1c0d",
	"7f6e5d4c-3b2a-4198-a7b6-c5d4e3f2a1b0", "8c9588c7-ba55-4d9f-9a62-a317ccb1d498",
	"c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f", "e99ecda3-4b66-44a4-a457-e6782a403752",
	"f0e1d2c3-b4a5-4968-b7a6-958473625140",
}

// TestParityJavaUUIDOrder runs generated inputs whose process ids are
// UUIDs like Kafka Streams' random ones through Kafka's
// HighAvailabilityTaskAssignor and the plugin: Kafka orders its clients
// by UUID.compareTo, not by the ids as strings, and the plugin must deal,
// balance and break ties in that order too.
func TestParityJavaUUIDOrder(t *testing.T) {
	var cases []parityCase
	var input strings.Builder
	for seed := 1; seed <= parityCases; seed += 3 {
		c := genParity(seed)
		for p, id := range c.req.Processes {
			c.java = strings.Replace(c.java, "process "+id+" ", "process "+uuidProcesses[p]+" ", 1)
			c.req.Processes[p] = uuidProcesses[p]
		}
		cases = append(cases, c)
		input.WriteString(c.java)
	}
	file := filepath.Join(t.TempDir(), "inputs.txt")
	if err := os.WriteFile(file, []byte(input.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
	}
	live := parseJava(t, testtool.JavaMain(t, harnessDir, harness, append([]string{file}, names...)...))
	if len(live) != len(cases) {
		t.Fatalf("Java ran %d of %d cases", len(live), len(cases))
	}
	for _, c := range cases {
		compareParity(t, c, live[c.name])
	}
}

// TestProcessOrder: the plugin orders process ids as java.util.UUID's
// compareTo does (signed halves), and ids that are not UUIDs after them in
// string order.
func TestProcessOrder(t *testing.T) {
	ids := append([]string{"p1", "p0", "00000000-0000-0000-8000-000000000000", "00000000-0000-0000-7fff-ffffffffffff",
		"FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"}, uuidProcesses...)
	got := ha.SortProcesses(ids)
	want := []string{"8c9588c7-ba55-4d9f-9a62-a317ccb1d498", "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f",
		"e99ecda3-4b66-44a4-a457-e6782a403752", "f0e1d2c3-b4a5-4968-b7a6-958473625140", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
		"00000000-0000-0000-8000-000000000000", "00000000-0000-0000-7fff-ffffffffffff",
		"0a0c3f1e-5b6d-4e8f-9a1b-2c3d4e5f6a7b", "3b2a1c0d-9e8f-4a7b-8c6d-5e4f3a2b1c0d", "7f6e5d4c-3b2a-4198-a7b6-c5d4e3f2a1b0",
		"p0", "p1"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v\nwant  %v", got, want)
	}
}
