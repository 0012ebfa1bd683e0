package ha_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/sim"
	"github.com/coordhost/coordhost/internal/testtool"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// errCaptured stops a replay once the rebalances wanted are captured.
var errCaptured = errors.New("captured")

// captureRequests replays the scenario file with the Go port and returns
// the assignor's inputs at the given group epochs (the replay stops after
// the last of them).
func captureRequests(t *testing.T, file string, epochs []int32) []*abi.AssignRequest {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.Decode(filepath.Base(file), data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []*abi.AssignRequest
	last := slices.Max(epochs)
	rep := sim.Run(sc, []sim.Assignor{{Name: "ha", Assign: func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		if slices.Contains(epochs, req.GroupEpoch) {
			got = append(got, cloneRequest(req))
		}
		if req.GroupEpoch >= last {
			return nil, errCaptured
		}
		return ha.Assign(req)
	}}})
	if len(got) != len(epochs) {
		t.Fatalf("%s: captured %d of the epochs %v (replay: %q)", file, len(got), epochs, rep.Assignors[0].Error)
	}
	return got
}

// cloneRequest copies what the replay goes on changing after a run: the
// members and their task lists.
func cloneRequest(req *abi.AssignRequest) *abi.AssignRequest {
	c := *req
	c.Members = slices.Clone(req.Members)
	for i := range c.Members {
		m := &c.Members[i]
		m.Active, m.Standby, m.Warmup = slices.Clone(m.Active), slices.Clone(m.Standby), slices.Clone(m.Warmup)
		m.TaskOffsets, m.TaskEndOffsets = slices.Clone(m.TaskOffsets), slices.Clone(m.TaskEndOffsets)
	}
	return &c
}

// processMoves counts the tasks whose active process in r differs from
// the process whose member owns the task in req (tasks nobody owns are
// not counted), stateful and stateless apart.
func processMoves(req *abi.AssignRequest, actives map[string][]string) (stateful, stateless int) {
	owner := map[string]string{}
	for _, m := range req.Members {
		for _, task := range goTasks(req, m.Active) {
			owner[task] = req.Processes[m.Process]
		}
	}
	for p, tasks := range actives {
		for _, task := range tasks {
			o, ok := owner[task]
			if !ok || o == p {
				continue
			}
			sub, _, _ := strings.Cut(task, "_")
			if i, _ := strconv.Atoi(sub); req.Subtopologies[i].Stateful {
				stateful++
			} else {
				stateless++
			}
		}
	}
	return stateful, stateless
}

// TestLargeGroupJava runs the inputs of the large-group scenario's
// rebalances (an instance of 50 members crashed, back, and the first
// redeployed instance down and back) through Kafka Streams 4.4.0's
// HighAvailabilityTaskAssignor (interop/ha-parity, -plain) and checks the
// Go port gives the same processes' actives and standby+warm-up sets, and
// so moves as many tasks between processes. It takes minutes (the replay
// and Kafka's assignor on 1,000 members and 10,000 tasks), so it runs
// only with COORDHOST_HA_LARGE=1 (docs/AB-TESTING.md quotes its log).
func TestLargeGroupJava(t *testing.T) {
	if os.Getenv("COORDHOST_HA_LARGE") != "1" {
		t.Skip("set COORDHOST_HA_LARGE=1: minutes of replay and Java")
	}
	epochs := []int32{2, 3, 4, 5}
	reqs := captureRequests(t, filepath.Join("..", "..", "testdata", "scenarios", "large-group.yaml"), epochs)
	dir := t.TempDir()
	cases := make([]parityCase, len(reqs))
	procs := make([]map[string]string, len(reqs))
	var files []string
	for i, req := range reqs {
		name := fmt.Sprintf("epoch-%d", req.GroupEpoch)
		text, byUUID, err := javaInput(name, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cases[i], procs[i] = parityCase{name: name, req: req, java: text}, byUUID
		path := filepath.Join(dir, name+".in")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	for i, c := range cases {
		got := parseJava(t, testtool.JavaMain(t, harnessDir, harness, "-plain", files[i]))
		want, ok := got[c.name]
		if !ok {
			t.Fatalf("%s: the harness gave cases %v", c.name, got)
		}
		want.procs = byRequestProcess(t, want.procs, procs[i])
		compareParity(t, c, want)
		javaActives := map[string][]string{}
		for p, jp := range want.procs {
			javaActives[p] = jp.active
		}
		r, err := ha.AssignProcesses(c.req)
		if err != nil {
			t.Fatal(err)
		}
		goActives := map[string][]string{}
		for _, pa := range r.Processes {
			goActives[c.req.Processes[pa.Process]] = goTasks(c.req, pa.Active)
		}
		js, jl := processMoves(c.req, javaActives)
		gs, gl := processMoves(c.req, goActives)
		t.Logf("%s: %d members on %d processes; actives moved between processes: Kafka %d stateful + %d stateless, Go port %d + %d; probing %v",
			c.name, len(c.req.Members), len(want.procs), js, jl, gs, gl, want.probing)
	}
}
