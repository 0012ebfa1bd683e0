package sim_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/sim"
)

const minimal = `{"duration_s": 10, "subtopologies": [{"id": "0", "partitions": 2}],
 "state": {"restore_records_per_s": 100}, "events": [%s]}`

func withEvents(events string) string { return strings.Replace(minimal, "%s", events, 1) }

// sharedEvents is withEvents with state.shared_restore.
func sharedEvents(events string) string {
	return strings.Replace(withEvents(events), `"restore_records_per_s": 100}`, `"restore_records_per_s": 100, "shared_restore": true}`, 1)
}

// TestBadScenarios: each broken file gives an error naming the field or
// event and the value, never a panic.
func TestBadScenarios(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"empty", "  \n", "empty file"},
		{"not yaml", "a: [1, 2", "yaml"},
		{"yaml list", "- 1\n- 2\n", "yaml"},
		{"json syntax", `{"duration_s": 10,}`, "offset"},
		{"trailing data", `{"duration_s": 10} {}`, "data after the scenario"},
		{"unknown field", "duraton_s: 10\n", `unknown field "duraton_s"`},
		{"wrong type", "duration_s: ten\n", "field duration_s: string is not a valid float64"},
		{"unquoted id", "duration_s: 10\nsubtopologies:\n  - {id: 0, partitions: 1}\n", "field subtopologies.id: number is not a valid string"},
		{"no duration", `{"subtopologies": [{"id": "0", "partitions": 1}]}`, "duration_s: 0 must be in"},
		{"zero tick", `{"duration_s": 10, "tick_ms": 0}`, "tick_ms: 0 must be > 0"},
		{"negative handover", `{"duration_s": 10, "handover_ms": -1}`, "handover_ms: -1 must be in"},
		{"too many ticks", `{"duration_s": 2000000, "tick_ms": 1}`, "exceed the limit"},
		{"no subtopologies", `{"duration_s": 10}`, "subtopologies: none"},
		{"duplicate subtopology", `{"duration_s": 10, "subtopologies": [{"id": "a", "partitions": 1}, {"id": "a", "partitions": 1}]}`, `id "a" appears twice`},
		{"zero partitions", `{"duration_s": 10, "subtopologies": [{"id": "a", "partitions": 0}]}`, "partitions 0 must be > 0"},
		{"negative subtopology changelog", `{"duration_s": 10, "subtopologies": [{"id": "a", "partitions": 1, "stateful": true, "changelog_records": -1}]}`, "changelog_records -1 must be in"},
		{"stateless subtopology changelog", `{"duration_s": 10, "subtopologies": [{"id": "a", "partitions": 1, "changelog_records": 5}]}`, "changelog_records on a stateless subtopology"},
		{"negative record bytes", `{"duration_s": 10, "subtopologies": [{"id": "0", "partitions": 1}], "state": {"restore_records_per_s": 1, "record_bytes": -1}}`, "state.record_bytes: -1 must be in"},
		{"huge record bytes", `{"duration_s": 10, "subtopologies": [{"id": "0", "partitions": 1}], "state": {"restore_records_per_s": 1, "record_bytes": 2147483648}}`, "state.record_bytes: 2147483648 must be in"},
		{"too many tasks", `{"duration_s": 10, "subtopologies": [{"id": "a", "partitions": 2147483647}]}`, "exceed the limit"},
		{"no restore rate", `{"duration_s": 10, "subtopologies": [{"id": "0", "partitions": 1}]}`, "state.restore_records_per_s: 0"},
		{"negative standbys", strings.Replace(withEvents(""), `"state"`, `"assignment": {"num_standby_replicas": -1}, "state"`, 1), "num_standby_replicas: -1"},
		{"zero probing", strings.Replace(withEvents(""), `"state"`, `"assignment": {"probing_interval_ms": 0}, "state"`, 1), "probing_interval_ms: 0 must be > 0"},
		{"event after the end", withEvents(`{"at_s": 11, "join": "a"}`), "events[0] (at_s 11): at_s: 11 must be in [0, duration_s]"},
		{"two kinds", withEvents(`{"at_s": 1, "join": "a", "leave": "a"}`), "exactly one of"},
		{"no kind", withEvents(`{"at_s": 1}`), "exactly one of"},
		{"negative coordhost restart", withEvents(`{"at_s": 1, "coordhost_restart": -1}`), "coordhost_restart: -1 must be in"},
		{"coordhost restart with a leave", withEvents(`{"at_s": 0, "join": "a"}, {"at_s": 1, "leave": "a", "coordhost_restart": 1}`), "exactly one of"},
		{"protocol on a leave", withEvents(`{"at_s": 0, "join": "a"}, {"at_s": 1, "leave": "a", "protocol": "classic"}`), "protocol belongs to a join or a restart"},
		{"unknown protocol", withEvents(`{"at_s": 0, "join": "a", "protocol": "consumer"}`), `protocol: "consumer", want streams or classic`},
		{"process without join", withEvents(`{"at_s": 1, "leave": "a", "process": "p"}`), "belong to a join"},
		{"member id without join", withEvents(`{"at_s": 0, "join": "a"}, {"at_s": 1, "leave": "a", "member_id": "m"}`), "belong to a join"},
		{"member id twice", withEvents(`{"at_s": 0, "join": "a", "member_id": "m"}, {"at_s": 1, "join": "b", "member_id": "m"}`), `join "b": member_id "m" was "a"'s`},
		{"leave unknown", withEvents(`{"at_s": 1, "leave": "a"}`), `leave "a": not a running member`},
		{"join twice", withEvents(`{"at_s": 0, "join": "a"}, {"at_s": 1, "join": "a"}`), `join "a": already a member`},
		{"leave before join in time", withEvents(`{"at_s": 5, "join": "a"}, {"at_s": 1, "leave": "a"}`), `at 1 s: leave "a": not a running member`},
		{"rejoin before fenced", withEvents(`{"at_s": 0, "join": "a"}, {"at_s": 1, "crash": "a"}, {"at_s": 5, "join": "a"}`), "fenced only at 46 s"},
		{"restart unknown", withEvents(`{"at_s": 0, "restart": ["x"]}`), `restart[0]: "x" never joined`},
		{"restart empty", withEvents(`{"at_s": 0, "restart": []}`), "restart: no members"},
		{"restart negative down", withEvents(`{"at_s": 0, "join": "a"}, {"at_s": 1, "restart": ["a"], "down_s": -1}`), "down_s: -1"},
		{"negative append", withEvents(`{"at_s": 1, "append_records_per_s": -5}`), "append_records_per_s: -5"},
		{"restore rate without join", withEvents(`{"at_s": 0, "join": "a"}, {"at_s": 1, "leave": "a", "restore_records_per_s": 100}`), "belong to a join"},
		{"restore quota without join", withEvents(`{"at_s": 0, "join": "a"}, {"at_s": 1, "leave": "a", "restore_quota": {"bytes_per_s": 1000, "fetch_max_bytes": 200, "record_bytes": 1}}`), "belong to a join"},
		{"restore quota without a shared link", withEvents(`{"at_s": 0, "join": "a", "restore_quota": {"bytes_per_s": 1000, "fetch_max_bytes": 200, "record_bytes": 1}}`), "needs state.shared_restore"},
		{"restore quota of no bytes", sharedEvents(`{"at_s": 0, "join": "a", "restore_quota": {"bytes_per_s": 0, "fetch_max_bytes": 200, "record_bytes": 1}}`), "restore_quota.bytes_per_s: 0 must be in"},
		{"restore quota without fetch bytes", sharedEvents(`{"at_s": 0, "join": "a", "restore_quota": {"bytes_per_s": 1000, "record_bytes": 1}}`), "restore_quota.fetch_max_bytes: 0 must be in"},
		{"restore quota without record bytes", sharedEvents(`{"at_s": 0, "join": "a", "restore_quota": {"bytes_per_s": 1000, "fetch_max_bytes": 200}}`), "restore_quota.record_bytes: 0 must be in"},
		{"restore quota head without bytes", sharedEvents(`{"at_s": 0, "join": "a", "restore_quota": {"bytes_per_s": 1000, "fetch_max_bytes": 200, "record_bytes": 1, "head_records": 5}}`), "head_records and head_bytes go together"},
		{"restore quota negative round trip", sharedEvents(`{"at_s": 0, "join": "a", "restore_quota": {"bytes_per_s": 1000, "fetch_max_bytes": 200, "record_bytes": 1, "round_trip_ms": -1}}`), "restore_quota.round_trip_ms: -1 must be in"},
		{"join restore rate zero", withEvents(`{"at_s": 0, "join": "a", "restore_records_per_s": 0}`), "events[0] (at_s 0): restore_records_per_s: 0 must be in (0, "},
		{"zero report interval", strings.Replace(withEvents(""), `"state"`, `"reports": {"end_offsets_refresh_ms": 1000}, "state"`, 1), "reports.task_offset_interval_ms: 0 must be in"},
		{"zero refresh", strings.Replace(withEvents(""), `"state"`, `"reports": {"task_offset_interval_ms": 1000}, "state"`, 1), "reports.end_offsets_refresh_ms: 0 must be in"},
		{"phase beyond the refresh", strings.Replace(withEvents(""), `"state"`, `"reports": {"task_offset_interval_ms": 1000, "end_offsets_refresh_ms": 1000, "end_offsets_phase_ms": 1000}, "state"`, 1), "reports.end_offsets_phase_ms: 1000 must be in"},
		{"report value of no task", strings.Replace(withEvents(`{"at_s": 0, "join": "a"}`), `"state"`, `"reports": {"task_offset_interval_ms": 1000, "end_offsets_refresh_ms": 1000, "values": {"a": [{"at_s": 1, "task_offsets": {"9_0": 5}}]}}, "state"`, 1), `reports.values: "a" at 1: task_offsets: no task "9_0"`},
		{"report value negative", strings.Replace(withEvents(`{"at_s": 0, "join": "a"}`), `"state"`, `"reports": {"task_offset_interval_ms": 1000, "end_offsets_refresh_ms": 1000, "values": {"a": [{"at_s": 1, "task_end_offsets": {"0_0": -2}}]}}, "state"`, 1), `reports.values: "a" at 1: task_end_offsets: 0_0: -2 must be in`},
		{"report value after the end", strings.Replace(withEvents(`{"at_s": 0, "join": "a"}`), `"state"`, `"reports": {"task_offset_interval_ms": 1000, "end_offsets_refresh_ms": 1000, "values": {"a": [{"at_s": 11}]}}, "state"`, 1), `reports.values: "a": 11 must be in [0, duration_s]`},
		{"report times and values", strings.Replace(withEvents(`{"at_s": 0, "join": "a"}`), `"state"`, `"reports": {"task_offset_interval_ms": 1000, "end_offsets_refresh_ms": 1000, "at": {"a": [1]}, "values": {"a": [{"at_s": 2}]}}, "state"`, 1), `reports.values: "a" is in reports.at too`},
		{"host read after the end", strings.Replace(withEvents(`{"at_s": 0, "join": "a"}`), `"state"`, `"reports": {"task_offset_interval_ms": 1000, "end_offsets_refresh_ms": 1000, "host_reads": [{"at_s": 11}]}, "state"`, 1), `reports.host_reads[0]: at_s 11 must be in [0, duration_s]`},
		{"host read of no task", strings.Replace(withEvents(`{"at_s": 0, "join": "a"}`), `"state"`, `"reports": {"task_offset_interval_ms": 1000, "end_offsets_refresh_ms": 1000, "host_reads": [{"at_s": 1, "end_offsets": {"9_0": 5}}]}, "state"`, 1), `reports.host_reads[0]: end_offsets: no task "9_0"`},
		{"host read negative", strings.Replace(withEvents(`{"at_s": 0, "join": "a"}`), `"state"`, `"reports": {"task_offset_interval_ms": 1000, "end_offsets_refresh_ms": 1000, "host_reads": [{"at_s": 1, "end_offsets": {"0_0": -1}}]}, "state"`, 1), `reports.host_reads[0]: end_offsets: 0_0: -1 must be in`},
		{"recorded input after the end", recordedInput(`{"at_s": 11, "end_offsets": {}}`), "recorded_inputs[0]: at_s 11 must be in [0, duration_s]"},
		{"recorded end of no task", recordedInput(`{"at_s": 1, "end_offsets": {"1_0": 5}}`), `recorded_inputs[0]: end_offsets: no task "1_0"`},
		{"recorded negative offset", recordedInput(`{"at_s": 1, "processes": {"p": {"0_1": -1}}}`), `recorded_inputs[0]: processes: "p": 0_1: -1 must be in [0, 2^50]`},
		{"recorded empty process", recordedInput(`{"at_s": 1, "processes": {"": {}}}`), "recorded_inputs[0]: processes: empty process id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := sim.Decode("s.yaml", []byte(c.data), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "s.yaml: ") {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
		})
	}
}

// recordedInput is the minimal scenario with one recorded input.
func recordedInput(in string) string {
	return strings.Replace(withEvents(""), `"events"`, `"recorded_inputs": [`+in+`], "events"`, 1)
}

// roundRobin is a minimal valid assignor for fuzzing the replay: task t
// goes to member t mod n.
func roundRobin(req *abi.AssignRequest) (*abi.AssignResponse, error) {
	resp := &abi.AssignResponse{Members: make([]abi.MemberAssignment, len(req.Members)), NextProbeMs: -1}
	for t := int32(0); t < req.NumTasks(); t++ {
		m := &resp.Members[int(t)%len(req.Members)]
		m.Active = append(m.Active, t)
	}
	return resp, nil
}

// FuzzDecode: no input makes Decode panic, and a small decoded scenario
// replays without panicking.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "sim", "*.yaml"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(withEvents(`{"at_s": 0, "join": "a"}, {"at_s": 1, "crash": "a"}, {"at_s": 2, "join": "b", "process": "p"},
		{"at_s": 3, "lose_state": "p"}, {"at_s": 4, "restart": ["b"], "down_s": 1, "every_s": 1}, {"at_s": 5, "append_records_per_s": 9}`)))
	f.Add([]byte("duration_s: 1\nsubtopologies: [{id: x, partitions: 1}]\nstate: {restore_records_per_s: 1000}\n"))
	f.Add([]byte(strings.Replace(withEvents(`{"at_s": 0, "join": "a", "member_id": "m"}, {"at_s": 0, "join": "b"}`), `"events"`,
		`"grant_ms": 300, "grant_first_ms": 900, "handover_first_ms": 2000, "initial": [{"member": "a", "active": ["0_0", "0_1"], "lags": {"0_1": 5}}], "events"`, 1)))
	f.Add([]byte(strings.Replace(strings.Replace(withEvents(`{"at_s": 0, "join": "a", "restore_records_per_s": 50}, {"at_s": 1, "join": "b"}`), `"events"`,
		`"reports": {"task_offset_interval_ms": 3000, "end_offsets_refresh_ms": 2000, "end_offsets_phase_ms": 500}, "handover_ms": 300, "events"`, 1),
		`"restore_records_per_s": 100}`, `"restore_records_per_s": 100, "shared_restore": true, "append_records_per_s": 7}`, 1)))
	f.Add([]byte(strings.Replace(recordedInput(`{"at_s": 2, "probe": true, "end_offsets": {"0_0": 9}, "processes": {"a": {"0_0": 4, "0_1": 20}}}, {"at_s": 1}`),
		`"events": [`, `"events": [{"at_s": 0, "join": "a"}, {"at_s": 1, "join": "b"}`, 1)))
	f.Add([]byte(strings.Replace(withEvents(`{"at_s": 0, "join": "a"}`), `"state"`, `"reports": {"task_offset_interval_ms": 1000, "end_offsets_refresh_ms": 1000, "values": {"a": [{"at_s": 2, "task_offsets": {"0_0": 4}, "task_end_offsets": {"0_0": 9, "0_1": 3}}, {"at_s": 1}]}}, "state"`, 1)))
	f.Add([]byte(strings.Replace(withEvents(`{"at_s": 0, "join": "a"}`), `"state"`, `"reports": {"task_offset_interval_ms": 1000, "end_offsets_refresh_ms": 1000, "host_reads": [{"at_s": 2, "end_offsets": {"0_0": 9}}, {"at_s": 1, "end_offsets": {"0_0": 7, "0_1": 3}}]}, "state"`, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := sim.Decode("fuzz", data, nil)
		if err != nil || sc.DurationS*1000/float64(sc.TickMs) > 2000 || len(sc.Events) > 50 {
			return
		}
		tasks := 0
		for _, s := range sc.Subtopologies {
			tasks += int(s.Partitions)
		}
		if tasks > 256 {
			return
		}
		r := sim.Run(sc, []sim.Assignor{{Name: "rr", Assign: roundRobin}})
		// A starting point given in the file may be invalid: an error
		// of the replay, not a failure of the assignor.
		if r.Assignors[0].Error != "" && sc.Initial == nil {
			t.Fatalf("round robin failed: %s", r.Assignors[0].Error)
		}
		r.JSON()
		r.HTML()
	})
}

// TestGivenMemberIDs: a join's member_id is the id the assignor sees (in
// id order, as the host sorts members); a join without one gets a drawn id.
func TestGivenMemberIDs(t *testing.T) {
	sc, err := sim.Decode("ids.json", []byte(withEvents(`{"at_s": 0, "join": "a", "member_id": "zz"},
		{"at_s": 0, "join": "b", "member_id": "aa"}, {"at_s": 0, "join": "c"}`)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	sim.Run(sc, []sim.Assignor{{Name: "rr", Assign: func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		if seen == nil {
			for _, m := range req.Members {
				seen = append(seen, m.ID)
			}
		}
		return roundRobin(req)
	}}})
	if !slices.Contains(seen, "aa") || !slices.Contains(seen, "zz") || len(seen) != 3 {
		t.Fatalf("member ids %q, want aa, zz and one drawn id", seen)
	}
	var drawn string
	for _, id := range seen {
		if id != "aa" && id != "zz" {
			drawn = id
		}
	}
	if len(drawn) != 22 {
		t.Fatalf("drawn member id %q, want 22 characters", drawn)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i-1] >= seen[i] {
			t.Fatalf("member ids %q are not in id order", seen)
		}
	}
}

// TestRejoinWithOwnID: a member that left joins again with the id it had
// (a fenced Kafka Streams member rejoins with its id); the assignor sees
// it again under that id, and the run counts the leave and the join.
func TestRejoinWithOwnID(t *testing.T) {
	sc, err := sim.Decode("rejoin.json", []byte(withEvents(`{"at_s": 0, "join": "a", "member_id": "ma"},
		{"at_s": 0, "join": "b", "member_id": "mb"}, {"at_s": 3, "leave": "a"},
		{"at_s": 6, "join": "a", "member_id": "ma"}`)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var last []string
	runs := 0
	sim.Run(sc, []sim.Assignor{{Name: "rr", Assign: func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		runs++
		last = last[:0]
		for _, m := range req.Members {
			last = append(last, m.ID)
		}
		return roundRobin(req)
	}}})
	if !slices.Equal(last, []string{"ma", "mb"}) || runs < 3 {
		t.Fatalf("last assignor run saw %q after %d runs, want ma and mb after at least 3 (join, leave, rejoin)", last, runs)
	}
}
