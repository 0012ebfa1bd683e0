package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
)

// stickyWasm returns the sticky plugin built for this test binary, as
// assignor-sticky.wasm (the name `make plugins` gives it).
func stickyWasm(t *testing.T) string {
	t.Helper()
	wasm := plugintest.GoPlugin(t, "plugins/assignor-sticky/wasm")
	path := filepath.Join(t.TempDir(), "assignor-sticky.wasm")
	if err := os.WriteFile(path, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// docExample returns the `coordhost assign` command of docs/PLUGINS.md
// (its arguments after "assign") and the output block after it.
func docExample(t *testing.T, root string) (args []string, output string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "PLUGINS.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\ngo run ./cmd/coordhost assign ([^\n]*)\n```\n\n```text\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/PLUGINS.md: no `go run ./cmd/coordhost assign` command followed by a text block")
	}
	return strings.Fields(string(m[1])), string(m[2])
}

// TestAssignDocExample runs the documented command on the documented
// input and requires the documented output, all but the compute time.
func TestAssignDocExample(t *testing.T) {
	root := plugintest.Root(t)
	args, want := docExample(t, root)
	for i := range args {
		switch {
		case i > 0 && args[i-1] == "--plugin":
			if args[i] != "build/plugins/assignor-sticky.wasm" {
				t.Fatalf("doc runs %s; the test builds only the sticky plugin", args[i])
			}
			args[i] = stickyWasm(t)
		case i > 0 && args[i-1] == "--input":
			args[i] = filepath.Join(root, args[i])
		}
	}
	var out, errb bytes.Buffer
	if code := assignCommand(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	compute := regexp.MustCompile(`(?m)^compute: +\S+$`)
	got := compute.ReplaceAllString(out.String(), "compute: T")
	if want = compute.ReplaceAllString(want, "compute: T"); got != want {
		t.Fatalf("output differs from docs/PLUGINS.md:\n%s\nwant:\n%s", got, want)
	}
}

func runAssignJSON(t *testing.T, pluginArg string) assignOutput {
	t.Helper()
	input := filepath.Join(plugintest.Root(t), "testdata", "assign", "example.json")
	var out, errb bytes.Buffer
	if code := assignCommand([]string{"--plugin", pluginArg, "--input", input, "--json"}, &out, &errb); code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", pluginArg, code, out.String(), errb.String())
	}
	var o assignOutput
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("%s: %v", pluginArg, err)
	}
	if o.Metrics.ComputeTime <= 0 {
		t.Errorf("%s: compute time %v", pluginArg, o.Metrics.ComputeTime)
	}
	o.Metrics.ComputeTime = 0
	return o
}

// TestAssignJSON: --json carries the assignment, the metrics and the
// hand-overs; the native sticky build gives the plugin's result; the HA
// assignor hands over only to caught-up processes where sticky makes one
// cold hand-over.
func TestAssignJSON(t *testing.T) {
	wasm := runAssignJSON(t, stickyWasm(t))
	if wasm.Assignor != "assignor-sticky" || wasm.GroupID != "orders-app" || wasm.GroupEpoch != 12 || len(wasm.Members) != 4 {
		t.Fatalf("header %+v", wasm)
	}
	wantH := []assignedHandOver{{Task: "0_4", From: "proc-b", To: "proc-c", Lag: 30000, Cold: true},
		{Task: "0_5", From: "proc-b", To: "proc-c", Lag: 500}}
	if !reflect.DeepEqual(wasm.HandOvers, wantH) {
		t.Fatalf("hand-overs %+v, want %+v", wasm.HandOvers, wantH)
	}
	mv := wasm.Metrics.Movement
	if mv.Kept != 7 || mv.Moved != 2 || mv.Warm != 1 || mv.Cold != 1 || wasm.Metrics.Standbys.Placed != 6 {
		t.Fatalf("metrics %+v", wasm.Metrics)
	}
	native := runAssignJSON(t, "builtin:sticky")
	native.Assignor = wasm.Assignor
	if !reflect.DeepEqual(native, wasm) {
		t.Fatalf("builtin:sticky %+v\nwasm %+v", native, wasm)
	}
	ha := runAssignJSON(t, "builtin:ha")
	if m := ha.Metrics; m.Movement.Cold != 0 || m.Movement.Warm != 3 || m.Warmups.Open != 2 || ha.NextProbeMs != 600000 {
		t.Fatalf("builtin:ha: metrics %+v, next probe %d", m, ha.NextProbeMs)
	}
}

// TestAssignBadInput: every bad input is an exit status and a message
// naming the file and the field, never a panic.
func TestAssignBadInput(t *testing.T) {
	dir := t.TempDir()
	ok := `{"subtopologies": [{"id": "0", "partitions": 2, "stateful": true}],
 "members": [{"member_id": "m", "process": "p", "active": ["0_0"]}]}`
	cases := []struct{ name, spec, plugin, want string }{
		{"missing", "", "builtin:sticky", "no such file"},
		{"empty", " ", "builtin:sticky", "empty file"},
		{"syntax", "{\n \"group_id\": \"g\",\n}", "builtin:sticky", "syntax.json: line 3 column 1: invalid character '}'"},
		{"type", `{"group_epoch": "x"}`, "builtin:sticky", "type.json: line 1 column 19: field group_epoch: string is not a valid int32"},
		{"unknown", `{"membrs": []}`, "builtin:sticky", `unknown.json: json: unknown field "membrs"`},
		{"trailing", ok + " {}", "builtin:sticky", "trailing.json: line 2 column 70: data after the spec object"},
		{"badtask", strings.Replace(ok, `"0_0"`, `"0_2"`, 1), "builtin:sticky",
			`badtask.json: members[0]: member "m": active[0]: task "0_2": partition "2" not in [0, 2) of subtopology "0"`},
		{"nosub", strings.Replace(ok, `"0_0"`, `"x_0"`, 1), "builtin:sticky", `task "x_0": no subtopology "x"`},
		{"noname", strings.Replace(ok, `"0_0"`, `"00"`, 1), "builtin:sticky", `task "00": want <subtopology>_<partition>`},
		{"twice", strings.Replace(ok, `"0_0"`, `"0_0", "0_00"`, 1), "builtin:sticky", "active: a task appears twice"},
		{"dupmember", strings.Replace(ok, `]}]}`, `]}, {"member_id": "m", "process": "q"}]}`, 1), "builtin:sticky",
			`members[1]: member_id "m" appears twice`},
		{"noprocess", strings.Replace(ok, `"process": "p"`, `"process": ""`, 1), "builtin:sticky", `member "m": process is empty`},
		{"dupsub", strings.Replace(ok, `"stateful": true}`, `"stateful": true}, {"id": "0"}`, 1), "builtin:sticky",
			`subtopologies[1]: id "0" appears twice`},
		{"negative", `{"num_standby_replicas": -1}`, "builtin:sticky", "negative.json: num_standby_replicas: -1 must be >= 0"},
		{"config", `{"configs": {"num.standby.replicas": "1"}}`, "builtin:sticky", `configs: key "num.standby.replicas" is set by its own field`},
		{"offsets", strings.Replace(ok, `"active"`, `"task_offsets": {"1_0": 5}, "active"`, 1), "builtin:sticky",
			`member "m": task_offsets: task "1_0": no subtopology "1"`},
		{"builtin", ok, "builtin:nope", "--plugin builtin:nope: no such built-in (have builtin:ha, builtin:sticky)"},
		{"nowasm", ok, filepath.Join(dir, "none.wasm"), "none.wasm: no such file"},
		{"probeonly", ok, plugintest.GoPluginPath(t, "testdata/plugins/goprobe"), "exports no task assignor (operations: probe)"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name+".json")
		if c.name != "missing" {
			if err := os.WriteFile(path, []byte(c.spec), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var out, errb bytes.Buffer
		code := assignCommand([]string{"--plugin", c.plugin, "--input", path}, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), c.want) || out.Len() != 0 {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit 1 and %q", c.name, code, errb.String(), out.String(), c.want)
		}
	}
	var out, errb bytes.Buffer
	if code := assignCommand([]string{"--input", "x.json"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage: coordhost assign") {
		t.Errorf("no --plugin: exit %d, %q", code, errb.String())
	}
}

// FuzzDecodeSpec: decoding any bytes as an assign spec returns an error or
// a request the plugin ABI's own decoder accepts, never a panic.
func FuzzDecodeSpec(f *testing.F) {
	example, err := os.ReadFile(filepath.Join(plugintest.Root(f), "testdata", "assign", "example.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte(`{"subtopologies": [{"id": "a_b", "partitions": 3}], "members": [{"member_id": "m", "process": "p", "active": ["a_b_2"]}]}`))
	f.Add([]byte(`{"configs": {"x": "y"}, "num_warmup_replicas": 0, "acceptable_recovery_lag": 9223372036854775807}`))
	f.Add([]byte(`{"subtopologies": [{"id": "0", "partitions": 4194305}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := decodeSpec("fuzz.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		b, err := abi.AppendAssignRequest(nil, req)
		if err != nil {
			t.Fatal(err)
		}
		var back abi.AssignRequest
		if err := abi.DecodeAssignRequest(b, &back); err != nil {
			t.Fatalf("the ABI decoder refuses the spec's request: %v", err)
		}
	})
}

// TestAssignTablesCapHandOvers: a large group's tables list the first
// hand-overs and count the rest; --json lists them all.
func TestAssignTablesCapHandOvers(t *testing.T) {
	spec := assignSpec{Subtopologies: []specSubtopology{{ID: "0", Partitions: 30, Stateful: true}}}
	for _, id := range []string{"a", "b"} {
		spec.Members = append(spec.Members, specMember{MemberID: id, Process: id})
	}
	for p := 0; p < 30; p++ { // a ran everything; b joins without state
		spec.Members[0].Active = append(spec.Members[0].Active, fmt.Sprintf("0_%d", p))
	}
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := assignCommand([]string{"--plugin", "builtin:sticky", "--input", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	// Sticky gives b half the tasks: 15 cold hand-overs, 20 lines at most.
	if !strings.Contains(out.String(), "hand-overs: 15 stateful (0 warm, 15 cold, 15 of them with unknown lag)") ||
		strings.Count(out.String(), " -> b ") != 15 || strings.Contains(out.String(), "more (--json lists all)") {
		t.Fatalf("15 hand-overs:\n%s", out.String())
	}
	spec.Members[0].Active = nil // now 30 new tasks: 20 listed
	if data, err = json.Marshal(spec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := assignCommand([]string{"--plugin", "builtin:sticky", "--input", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if n := strings.Count(out.String(), "lag unknown"); n != maxHandOverLines || !strings.Contains(out.String(), "... and 10 more (--json lists all)") {
		t.Fatalf("%d hand-over lines:\n%s", n, out.String())
	}
}
