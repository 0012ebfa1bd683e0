package ha_test

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/internal/testtool"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// jmhWarmups is max.warmup.replicas in the JMH inputs: Kafka Streams'
// default. The shapes of BenchmarkRatios leave num_warmup_replicas at 0,
// which Kafka's AssignmentConfigs rejects (at least 1), so both sides run
// with Kafka's default instead.
const jmhWarmups = 2

// jmhShapes are the inputs of BenchmarkRatios (ratioCases, smallest
// first) with max.warmup.replicas set to jmhWarmups.
func jmhShapes() []parityCase {
	var out []parityCase
	for _, c := range ratioCases() {
		req := *c.Req
		req.Configs.NumWarmupReplicas = jmhWarmups
		out = append(out, parityCase{name: c.Name, req: &req})
	}
	return out
}

// TestJMH times Kafka Streams 4.4.0's HighAvailabilityTaskAssignor under
// JMH (interop/ha-parity's HaBench) and the Go port under the testing
// package's benchmark loop, on the same inputs: the shapes of
// BenchmarkRatios written in ha-parity's input format, each checked first
// to give the same assignment on both sides, so both time the same work:
// compareParity on the harness's -plain run (plain ClientState objects, as
// HaBench times them) compares each process's actives, its standbys and
// warm-ups as one set (-plain does not tell them apart), and whether a
// probing rebalance is needed.
// Each side builds its state from the input inside the timed operation:
// HaBench makes fresh ClientState objects and their lags per operation, as
// ha.AssignProcesses builds its state from the request. By default it runs
// the smallest shape briefly (a smoke run: JMH builds, runs and reports);
// COORDHOST_JMH=1 runs every shape with -f 1 -wi 3 -i 5 (JMH's default
// 10 s iterations), as `make bench-jmh` does, and prints the table of
// docs/BENCHMARKS.md; COORDHOST_JMH_SHAPES=name,... keeps only the shapes
// named (Kafka's assignor takes minutes per run on the largest). Java's and Go's times come from the same run, one
// after the other on the same machine.
func TestJMH(t *testing.T) {
	full := os.Getenv("COORDHOST_JMH") == "1"
	shapes := jmhShapes()
	jmhArgs := []string{"-f", "1", "-wi", "1", "-i", "1", "-w", "1s", "-r", "1s"}
	if full {
		jmhArgs = []string{"-f", "1", "-wi", "3", "-i", "5"}
		if only := os.Getenv("COORDHOST_JMH_SHAPES"); only != "" {
			names := strings.Split(only, ",")
			shapes = slices.DeleteFunc(shapes, func(c parityCase) bool { return !slices.Contains(names, c.name) })
			if len(shapes) != len(names) {
				t.Fatalf("COORDHOST_JMH_SHAPES=%s: not all are shapes of ratioCases", only)
			}
		}
	} else {
		shapes = shapes[:1]
	}
	dir := t.TempDir()
	var files []string
	for i := range shapes {
		c, want, path := javaPlain(t, dir, shapes[i].name, shapes[i].req)
		shapes[i] = c
		files = append(files, path)
		// Same work on both sides: Kafka's assignment of the file is the
		// Go port's.
		if compareParity(t, c, want); t.Failed() {
			t.Fatalf("%s: the Go port and Kafka's assignor differ, so their times would not compare", c.name)
		}
	}

	goMs := map[string][2]float64{} // AssignProcesses, Assign
	for _, c := range shapes {
		process := testtool.GoBenchMs(t, c.name, func() error { _, err := ha.AssignProcesses(c.req); return err })
		member := testtool.GoBenchMs(t, c.name, func() error { _, err := ha.Assign(c.req); return err })
		goMs[c.name] = [2]float64{process, member}
	}
	javaMs := testtool.JMH(t, harnessDir, "HaBench", files, jmhArgs)

	var table strings.Builder
	table.WriteString("| shape | Kafka's HighAvailabilityTaskAssignor (JMH), ms/op | Go port, AssignProcesses, ms/op | Java ÷ Go | Go port, Assign (and split over members), ms/op |\n|---|---|---|---|---|\n")
	for _, c := range shapes {
		j, ok := javaMs[c.name]
		if !ok {
			t.Fatalf("JMH gave no result for %s (results: %v)", c.name, javaMs)
		}
		g := goMs[c.name]
		fmt.Fprintf(&table, "| %s | %s | %.3f | %.2f | %.3f |\n", c.name, j.Cell(), g[0], j.Ms/g[0], g[1])
	}
	t.Logf("JMH args %v, max.warmup.replicas %d\n%s", jmhArgs, jmhWarmups, table.String())
}

// javaInput writes req as one case of ha-parity's input format, with the
// meaning the plugin gives the request (see genParity for the same format
// built alongside a request):
//
//   - subtopology i is Kafka's subtopology i (its ID must be "i", which the
//     harness output names tasks by);
//   - a stateful task's end offset sum is the largest any member reported
//     (0 <= offset < MaxInt64), or MaxInt64 when none did;
//   - each process with members is one client, capacity its member count,
//     client tags those of its lowest member id, and the UUID
//     00000000-0000-0000-0000-<index+1> (a process id must be a UUID for
//     Java; this keeps the processes' order, which Kafka's TreeMap of
//     clients follows);
//   - a process's offset sum for a stateful task is -2 (Kafka's "running")
//     when one of its members has the task active, else the largest its
//     members reported; negative reports are left out.
//
// procs maps each UUID to the request's process id.
func javaInput(name string, req *abi.AssignRequest) (text string, procs map[string]string, err error) {
	if req.Configs.NumWarmupReplicas < 1 {
		return "", nil, fmt.Errorf("num_warmup_replicas %d: Kafka's max.warmup.replicas is at least 1", req.Configs.NumWarmupReplicas)
	}
	space := abi.NewTaskSpace(req.Subtopologies)
	stateful := make([]bool, space.Total())
	end := make([]int64, space.Total())
	for i, sub := range req.Subtopologies {
		if sub.ID != strconv.Itoa(i) {
			return "", nil, fmt.Errorf("subtopology %d has id %q: the harness names it %d", i, sub.ID, i)
		}
		for p := int32(0); p < sub.Partitions; p++ {
			stateful[space.Task(int32(i), p)] = sub.Stateful
		}
	}
	for t := range end {
		end[t] = -1
	}
	for _, m := range req.Members {
		for _, o := range m.TaskEndOffsets {
			if o.Offset >= 0 && o.Offset < math.MaxInt64 {
				end[o.Task] = max(end[o.Task], o.Offset)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "case %s\nconfig %d %d %d %s\n", name, req.Configs.AcceptableRecoveryLag, req.Configs.NumWarmupReplicas,
		req.Configs.NumStandbyReplicas, orDash(strings.Join(req.Configs.RackAwareAssignmentTags, ",")))
	for i, sub := range req.Subtopologies {
		for p := int32(0); p < sub.Partitions; p++ {
			if !sub.Stateful {
				fmt.Fprintf(&b, "task %d %d 0\n", i, p)
				continue
			}
			e := end[space.Task(int32(i), p)]
			if e < 0 {
				e = math.MaxInt64
			}
			fmt.Fprintf(&b, "task %d %d 1 %d\n", i, p, e)
		}
	}
	// Clients: the processes with members, in process order.
	members := make([][]int, len(req.Processes))
	for i, m := range req.Members {
		members[m.Process] = append(members[m.Process], i)
	}
	procs = map[string]string{}
	var offsets strings.Builder
	client := 0
	for p, ms := range members {
		if len(ms) == 0 {
			continue
		}
		id := fmt.Sprintf("00000000-0000-0000-0000-%012x", p+1)
		procs[id] = req.Processes[p]
		lowest := slices.MinFunc(ms, func(i, j int) int { return strings.Compare(req.Members[i].ID, req.Members[j].ID) })
		fmt.Fprintf(&b, "process %s %d %s\n", id, len(ms), javaTags(req.Members[lowest].ClientTags))
		sums := map[int32]int64{}
		for _, i := range ms {
			for _, o := range req.Members[i].TaskOffsets {
				if s, ok := sums[o.Task]; stateful[o.Task] && o.Offset >= 0 && (!ok || o.Offset > s) {
					sums[o.Task] = o.Offset
				}
			}
		}
		for _, i := range ms {
			for _, t := range req.Members[i].Active {
				if stateful[t] {
					sums[t] = -2
				}
			}
		}
		for _, t := range slices.Sorted(maps.Keys(sums)) {
			s, part := space.Locate(t)
			fmt.Fprintf(&offsets, "offset %d %d %d %d\n", client, s, part, sums[t])
		}
		client++
	}
	b.WriteString(offsets.String())
	b.WriteString("end\n")
	return b.String(), procs, nil
}

// javaPlain writes req as case name of the harness's input format to
// dir/name.in and runs Kafka's assignor on it with plain ClientState
// objects (-plain). It returns the case, Kafka's result keyed by the
// request's process ids, and the file.
func javaPlain(t *testing.T, dir, name string, req *abi.AssignRequest) (parityCase, javaCase, string) {
	t.Helper()
	text, procs, err := javaInput(name, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	path := filepath.Join(dir, name+".in")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got := parseJava(t, testtool.JavaMain(t, harnessDir, harness, "-plain", path))
	want, ok := got[name]
	if !ok || len(got) != 1 {
		t.Fatalf("%s: the harness gave cases %v", name, got)
	}
	want.procs = byRequestProcess(t, want.procs, procs)
	return parityCase{name: name, req: req, java: text}, want, path
}

// byRequestProcess re-keys the harness's per-process results from the
// UUIDs javaInput gave the processes to the request's process ids.
func byRequestProcess(t *testing.T, byUUID map[string]javaProcess, procs map[string]string) map[string]javaProcess {
	t.Helper()
	out := map[string]javaProcess{}
	for id, p := range byUUID {
		orig, ok := procs[id]
		if !ok {
			t.Fatalf("the harness printed process %s, not in its input", id)
		}
		out[orig] = p
	}
	return out
}
