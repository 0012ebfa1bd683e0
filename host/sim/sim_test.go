package sim_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/sim"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

var update = flag.Bool("update", false, "rewrite the golden reports under testdata/sim/golden")

var builtins = []sim.Assignor{
	{Name: "sticky", Version: "native", Assign: sticky.Assign},
	{Name: "ha", Version: "native", Assign: ha.Assign, Probe: ha.Probe},
}

func decode(t *testing.T, name string, data []byte) *sim.Scenario {
	t.Helper()
	sc, err := sim.Decode(name, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func readScenario(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "sim", file))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// leaveScenario is testdata/sim/leave.yaml with some lines replaced: two
// members, four stateful tasks of 10000 records, 1000 records/s restored,
// member b leaves at 10 s.
func leaveScenario(t *testing.T, replace ...string) *sim.Scenario {
	t.Helper()
	data := string(readScenario(t, "leave.yaml"))
	for i := 0; i < len(replace); i += 2 {
		if !strings.Contains(data, replace[i]) {
			t.Fatalf("leave.yaml has no %q", replace[i])
		}
		data = strings.Replace(data, replace[i], replace[i+1], 1)
	}
	return decode(t, "leave.yaml", []byte(data))
}

// TestLeaveHandChecked: figures worked out by hand from the restore model
// (docs/AB-TESTING.md), for both built-in assignors.
func TestLeaveHandChecked(t *testing.T) {
	cases := []struct {
		name    string
		replace []string
		// want
		moved, warm, cold int
		unavailableS      float64
		points            []sim.Point
		// records restored (the copies' restores, not the actives'
		// own writes); when the group settled and how long after the
		// last event
		restored          int64
		settledAt, settle float64
	}{
		// b's two tasks restore 10000 records at 1000/s on a: 10 s each.
		{name: "cold", moved: 2, cold: 2, unavailableS: 20, restored: 20000, settledAt: 20, settle: 10,
			points: []sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 20, Tasks: 0}}},
		// Half the rate: 20 s each.
		{name: "slower restore", replace: []string{"restore_records_per_s: 1000", "restore_records_per_s: 500"},
			moved: 2, cold: 2, unavailableS: 40, restored: 20000, settledAt: 30, settle: 20,
			points: []sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 30, Tasks: 0}}},
		// The changelog grows 100 records/s while its task runs, so it
		// holds 11000 records at 10 s; nobody writes it while b's tasks
		// wait, so they are restored after 11 s.
		{name: "growing changelog", replace: []string{"restore_records_per_s: 1000", "restore_records_per_s: 1000\n  append_records_per_s: 100"},
			moved: 2, cold: 2, unavailableS: 22, restored: 22000, settledAt: 21, settle: 11,
			points: []sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 21, Tasks: 0}}},
		// One standby per task: a holds caught-up standbys of b's tasks,
		// so both hand-overs are warm and nothing waits.
		{name: "standby", replace: []string{"num_standby_replicas: 0", "num_standby_replicas: 1"},
			moved: 2, warm: 2, unavailableS: 0, restored: 0, settledAt: 0, settle: 0, points: []sim.Point{{AtS: 0, Tasks: 0}}},
		// A hand-over of 2 s: a runs b's tasks from 12 s and restores
		// them from then on, 10 s each.
		{name: "handover", replace: []string{"tick_ms: 1000", "tick_ms: 1000\nhandover_ms: 2000"},
			moved: 2, cold: 2, unavailableS: 24, restored: 20000, settledAt: 22, settle: 12,
			points: []sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 22, Tasks: 0}}},
		// With caught-up standbys only the hand-over itself waits.
		{name: "handover standby", replace: []string{"num_standby_replicas: 0", "num_standby_replicas: 1", "tick_ms: 1000", "tick_ms: 1000\nhandover_ms: 2000"},
			moved: 2, warm: 2, unavailableS: 4, restored: 0, settledAt: 12, settle: 2,
			points: []sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 12, Tasks: 0}}},
		// One restore link for a's process: b's two tasks share its 1000
		// records/s, so both are restored at 30 s.
		{name: "shared restore", replace: []string{"restore_records_per_s: 1000", "restore_records_per_s: 1000\n  shared_restore: true"},
			moved: 2, cold: 2, unavailableS: 40, restored: 20000, settledAt: 30, settle: 20,
			points: []sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 30, Tasks: 0}}},
		// a's join gives its process a link of 4000 records/s: 2000 each,
		// 5 s.
		{name: "shared restore, process rate", replace: []string{"restore_records_per_s: 1000", "restore_records_per_s: 1000\n  shared_restore: true",
			"{at_s: 0, join: a}", "{at_s: 0, join: a, restore_records_per_s: 4000}"},
			moved: 2, cold: 2, unavailableS: 10, restored: 20000, settledAt: 15, settle: 5,
			points: []sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 15, Tasks: 0}}},
		// The same rate for each copy without the shared link: 2.5 s each,
		// done within the third tick.
		{name: "process rate", replace: []string{"{at_s: 0, join: a}", "{at_s: 0, join: a, restore_records_per_s: 4000}"},
			moved: 2, cold: 2, unavailableS: 6, restored: 20000, settledAt: 13, settle: 3,
			points: []sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 13, Tasks: 0}}},
		// A crash instead of a leave: b's tasks wait from 10 s through the
		// 5 s session timeout and then the 10 s restore.
		{name: "crash", replace: []string{"leave: b", "crash: b", "tick_ms: 1000", "tick_ms: 1000\nsession_timeout_s: 5"},
			moved: 2, cold: 2, unavailableS: 30, restored: 20000, settledAt: 25, settle: 15,
			points: []sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 25, Tasks: 0}}},
		// coordhost is down from 9 to 14 s: b's leave reaches it at 14, and
		// a restores b's tasks from then on.
		{name: "coordhost restart", replace: []string{"{at_s: 10, leave: b}", "{at_s: 9, coordhost_restart: 5}\n  - {at_s: 10, leave: b}"},
			moved: 2, cold: 2, unavailableS: 28, restored: 20000, settledAt: 24, settle: 14,
			points: []sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 24, Tasks: 0}}},
		// b crashes at 10 s; coordhost is down from 12 to 20 s and starts
		// b's session timer again when it is back: b is fenced at 25 s,
		// not 15, and its tasks restored at 35 s.
		{name: "crash across a coordhost restart", replace: []string{"{at_s: 10, leave: b}", "{at_s: 10, crash: b}\n  - {at_s: 12, coordhost_restart: 8}",
			"tick_ms: 1000", "tick_ms: 1000\nsession_timeout_s: 5"},
			moved: 2, cold: 2, unavailableS: 50, restored: 20000, settledAt: 35, settle: 23,
			points: []sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 35, Tasks: 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sim.Run(leaveScenario(t, c.replace...), builtins)
			for _, a := range r.Assignors {
				tot := a.Totals
				if a.Error != "" || tot.Rebalances != 1 || tot.TasksMoved != c.moved || tot.Warm != c.warm || tot.Cold != c.cold ||
					a.UnavailableTaskS != c.unavailableS || tot.MaxUnavailable != peak(c.points) {
					t.Errorf("%s: error %q, totals %+v, unavailable %v task-s; want 1 rebalance, %d moved, %d warm, %d cold, %v task-s",
						a.Name, a.Error, tot, a.UnavailableTaskS, c.moved, c.warm, c.cold, c.unavailableS)
				}
				if tot.RecordsRestored != c.restored || tot.BytesRestored != 0 || tot.SettledAtS != c.settledAt || tot.SettleS != c.settle || tot.ProbingRounds != 0 {
					t.Errorf("%s: restored %d (%d bytes), settled at %v s, %v s after the last event, %d probes; want %d, at %v s, %v s after, none",
						a.Name, tot.RecordsRestored, tot.BytesRestored, tot.SettledAtS, tot.SettleS, tot.ProbingRounds, c.restored, c.settledAt, c.settle)
				}
				if got := a.Unavailable; !equalPoints(got, c.points) {
					t.Errorf("%s: unavailable over time %v, want %v", a.Name, got, c.points)
				}
				// Per task: b's two tasks, half each, none when nothing waits.
				byTask := a.UnavailableByTask
				ok := (c.unavailableS == 0 && len(byTask) == 0) || (len(byTask) == 2 && byTask[0].Task != byTask[1].Task)
				for _, x := range byTask {
					ok = ok && x.S == c.unavailableS/2 && strings.HasPrefix(x.Task, "0_")
				}
				if !ok {
					t.Errorf("%s: unavailable by task %+v, want b's two tasks at %v s each", a.Name, byTask, c.unavailableS/2)
				}
				last := a.Rebalances[len(a.Rebalances)-1]
				if last.FromDeparted != 2 || last.Movement.Kept != 2 || last.Members != 1 || last.Reasons[0] == "" {
					t.Errorf("%s: last target %+v", a.Name, last)
				}
			}
		})
	}
}

// TestStateSizesHandChecked: a subtopology's own changelog size replaces
// the scenario's, and record_bytes turns records restored into bytes.
func TestStateSizesHandChecked(t *testing.T) {
	// b's two tasks hold 5000 records each: restored at 1000/s in 5 s.
	own := sim.Run(leaveScenario(t, `{id: "0", partitions: 4, stateful: true}`, `{id: "0", partitions: 4, stateful: true, changelog_records: 5000}`,
		"changelog_records: 10000", "changelog_records: 10000\n  record_bytes: 250"), builtins)
	for _, a := range own.Assignors {
		tot := a.Totals
		if a.Error != "" || a.UnavailableTaskS != 10 || tot.RecordsRestored != 10000 || tot.BytesRestored != 2_500_000 ||
			tot.SettledAtS != 15 || tot.SettleS != 5 {
			t.Errorf("%s: error %q, %v task-s, totals %+v; want 10 task-s, 10000 records (2,500,000 bytes), settled at 15 s, 5 s after the leave",
				a.Name, a.Error, a.UnavailableTaskS, tot)
		}
	}
}

// TestClassicMembersHandChecked: members on the classic protocol take
// b's tasks classic_rejoin_ms later (they rejoin first); a restart with
// the streams protocol converts the group, one back to classic converts
// it back, each conversion a reason of the target it causes.
func TestClassicMembersHandChecked(t *testing.T) {
	classic := sim.Run(leaveScenario(t, "{at_s: 0, join: a}", "{at_s: 0, join: a, protocol: classic}",
		"{at_s: 0, join: b}", "{at_s: 0, join: b, protocol: classic}", "tick_ms: 1000", "tick_ms: 1000\nclassic_rejoin_ms: 2000"), builtins)
	for _, a := range classic.Assignors {
		// a runs b's tasks from 12 s and restores them in 10 s.
		if a.Error != "" || a.UnavailableTaskS != 24 || a.Totals.SettledAtS != 22 || !equalPoints(a.Unavailable,
			[]sim.Point{{AtS: 0, Tasks: 0}, {AtS: 10, Tasks: 2}, {AtS: 22, Tasks: 0}}) {
			t.Errorf("%s: error %q, %v task-s, %v, totals %+v; want 24 task-s, available again at 22 s", a.Name, a.Error,
				a.UnavailableTaskS, a.Unavailable, a.Totals)
		}
		for _, rb := range a.Rebalances {
			for _, r := range rb.Reasons {
				if strings.HasPrefix(r, "group-converted") {
					t.Errorf("%s: a classic group converted: %v", a.Name, rb.Reasons)
				}
			}
		}
	}
	roll := sim.Run(leaveScenario(t, "{at_s: 0, join: a}", "{at_s: 0, join: a, protocol: classic}",
		"{at_s: 0, join: b}", "{at_s: 0, join: b, protocol: classic}", "{at_s: 10, leave: b}",
		"{at_s: 10, restart: [b], protocol: streams}\n  - {at_s: 20, restart: [b], protocol: classic}\n  - {at_s: 30, restart: [a]}"), builtins)
	for _, a := range roll.Assignors {
		var got []string
		for _, rb := range a.Rebalances[1:] {
			got = append(got, strings.Join(rb.Reasons, " "))
		}
		// Back to classic at 23 s without a rebalance of its own: b's
		// process came back at 20 s (not awaited any longer), and the
		// group settled once b's classic member took its tasks, after
		// its rejoin (2 s) and grant (1 s) — as on core.
		want := []string{"member-left:b member-joined:b group-converted:streams", "member-left:b member-joined:b",
			"member-left:a member-joined:a"}
		wantConv := []sim.Conversion{{AtS: 10, To: "streams"}, {AtS: 23, To: "classic"}}
		if a.Error != "" || !slices.Equal(got, want) || !slices.Equal(a.Conversions, wantConv) {
			t.Errorf("%s: error %q, reasons %q, conversions %v; want %q, %v", a.Name, a.Error, got, a.Conversions, want, wantConv)
		}
	}
}

// TestRejoinWhileCoordhostDown: b crashes, and joins again while
// coordhost is down (before its restarted session timer ran out): the new
// b replaces the crashed one, and both changes reach coordhost when it is
// back, in one target.
func TestRejoinWhileCoordhostDown(t *testing.T) {
	r := sim.Run(leaveScenario(t, "{at_s: 10, leave: b}", "{at_s: 10, crash: b}\n  - {at_s: 12, coordhost_restart: 18}\n  - {at_s: 20, join: b}",
		"tick_ms: 1000", "tick_ms: 1000\nsession_timeout_s: 5"), builtins)
	for _, a := range r.Assignors {
		last := a.Rebalances[len(a.Rebalances)-1]
		if a.Error != "" || a.Totals.Rebalances != 1 || last.AtS != 30 || !slices.Equal(last.Reasons, []string{"member-fenced:b", "member-joined:b"}) || last.Members != 2 {
			t.Errorf("%s: error %q, %d rebalances, last at %v s: %q, %d members; want one at 30 s: b fenced and joined, 2 members",
				a.Name, a.Error, a.Totals.Rebalances, last.AtS, last.Reasons, last.Members)
		}
	}
}

// TestProbingRoundsCounted: on the scale-out, HA's probing runs are
// counted whether or not they installed a target; sticky opens no
// warm-up and never probes.
func TestProbingRoundsCounted(t *testing.T) {
	r := sim.Run(decode(t, "scale-out.yaml", readScenario(t, "scale-out.yaml")), builtins)
	for _, a := range r.Assignors {
		probes := 0
		for _, rb := range a.Rebalances {
			if slices.Contains(rb.Reasons, "probe") {
				probes++
			}
		}
		tot := a.Totals
		if tot.ProbingRounds != probes+tot.ProbesUnchanged {
			t.Errorf("%s: %d probing rounds, want %d installed + %d unchanged", a.Name, tot.ProbingRounds, probes, tot.ProbesUnchanged)
		}
		if strings.Contains(a.Name, "sticky") != (tot.ProbingRounds == 0) {
			t.Errorf("%s: %d probing rounds", a.Name, tot.ProbingRounds)
		}
	}
}

func peak(ps []sim.Point) int {
	n := 0
	for _, p := range ps {
		n = max(n, p.Tasks)
	}
	return n
}

func equalPoints(a, b []sim.Point) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReportsAreDeterministic: decoding and running every example twice
// gives byte-identical JSON and HTML, and leave.yaml's match the goldens.
func TestReportsAreDeterministic(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "sim", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			data := readScenario(t, name)
			first := sim.Run(decode(t, name, data), builtins)
			second := sim.Run(decode(t, name, data), builtins)
			for _, a := range first.Assignors {
				if a.Error != "" {
					t.Errorf("%s: %s", a.Name, a.Error)
				}
			}
			j1, j2, h1, h2 := first.JSON(), second.JSON(), first.HTML(), second.HTML()
			if !bytes.Equal(j1, j2) || !bytes.Equal(h1, h2) {
				t.Fatal("two runs of the same scenario and seed differ")
			}
			if name != "leave.yaml" {
				return
			}
			for _, g := range []struct {
				file string
				got  []byte
			}{{"leave.json", j1}, {"leave.html", h1}} {
				path := filepath.Join("..", "..", "testdata", "sim", "golden", g.file)
				if *update {
					if err := os.WriteFile(path, g.got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(g.got, want) {
					t.Errorf("%s differs from the golden (go test ./host/sim -run Deterministic -update rewrites it; review the diff)", g.file)
				}
			}
		})
	}
}

// TestSeedDrawsMemberIDsAndChangelogs: another seed gives other member
// ids (seen by the assignor) and other changelog sizes, so the figures
// differ; the --seed override replaces the file's.
func TestSeedDrawsMemberIDsAndChangelogs(t *testing.T) {
	data := readScenario(t, "rolling-restart.yaml")
	var reports []*sim.Report
	for _, seed := range []uint64{42, 43} {
		sc, err := sim.Decode("rolling-restart.yaml", data, &seed)
		if err != nil {
			t.Fatal(err)
		}
		r := sim.Run(sc, builtins[:1])
		if r.Seed != seed {
			t.Fatalf("seed %d, want %d", r.Seed, seed)
		}
		reports = append(reports, r)
	}
	fileSeed := sim.Run(decode(t, "rolling-restart.yaml", data), builtins[:1]).JSON()
	if !bytes.Equal(fileSeed, reports[0].JSON()) {
		t.Error("--seed equal to the file's seed changed the report")
	}
	a, b := reports[0].Assignors[0], reports[1].Assignors[0]
	if a.UnavailableTaskS == b.UnavailableTaskS {
		t.Errorf("seeds 42 and 43 give the same unavailability, %v task-s", a.UnavailableTaskS)
	}
	idsA, idsB := a.Rebalances[0].Reasons, b.Rebalances[0].Reasons
	if len(idsA) != 3 || strings.Join(idsA, " ") != strings.Join(idsB, " ") {
		t.Errorf("the events differ between seeds: %v, %v", idsA, idsB)
	}
}

// TestCrashThenRejoinAtFence: a member that crashed between ticks may join
// again from its crash time plus the session timeout; it is fenced and
// rejoins in the same tick, as two reasons of one rebalance.
func TestCrashThenRejoinAtFence(t *testing.T) {
	sc := leaveScenario(t, "  - {at_s: 10, leave: b}",
		"  - {at_s: 10.5, crash: b}\n  - {at_s: 15.5, join: b}", "tick_ms: 1000", "tick_ms: 1000\nsession_timeout_s: 5")
	for _, a := range sim.Run(sc, builtins).Assignors {
		if a.Error != "" || len(a.Rebalances) != 2 {
			t.Fatalf("%s: %q, %d targets", a.Name, a.Error, len(a.Rebalances))
		}
		rb := a.Rebalances[1]
		if rb.AtS != 16 || strings.Join(rb.Reasons, " ") != "member-fenced:b member-joined:b" || rb.Members != 2 {
			t.Errorf("%s: %+v", a.Name, rb)
		}
		// b's two tasks wait from 11 s (the crash's tick) to 16 s; b's
		// process kept its state, so it takes them back caught up.
		if a.UnavailableTaskS != 10 || a.Totals.Cold != 0 {
			t.Errorf("%s: %v task-s, totals %+v", a.Name, a.UnavailableTaskS, a.Totals)
		}
	}
}

// TestAssignorFailureIsReported: an assignor that errs, or returns an
// invalid assignment, stops its own replay with the reason; the others
// complete.
func TestAssignorFailureIsReported(t *testing.T) {
	calls := 0
	bad := []sim.Assignor{
		{Name: "fails-second", Version: "test", Assign: func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
			if calls++; calls == 2 {
				return &abi.AssignResponse{Members: make([]abi.MemberAssignment, len(req.Members)+1)}, nil
			}
			return sticky.Assign(req)
		}},
		builtins[0],
	}
	r := sim.Run(leaveScenario(t), bad)
	if got := r.Failed(); len(got) != 1 || got[0] != "fails-second" {
		t.Fatalf("failed %v", got)
	}
	if e := r.Assignors[0].Error; !strings.Contains(e, "at 10 s, epoch 2: fails-second:") || !strings.Contains(e, "member entries") {
		t.Errorf("error %q", e)
	}
	if r.Assignors[1].Error != "" || r.Assignors[1].UnavailableTaskS != 20 {
		t.Errorf("sticky after a failing assignor: %+v", r.Assignors[1])
	}
	if !strings.Contains(string(r.HTML()), "<strong>Stopped:</strong>") {
		t.Error("the HTML report does not show the failure")
	}
}

// TestHTMLIsSelfContained: no scripts, nothing loaded from elsewhere, and
// names are escaped.
func TestHTMLIsSelfContained(t *testing.T) {
	sc := leaveScenario(t, "name: leave", `name: "<b>&x"`)
	page := string(sim.Run(sc, builtins).HTML())
	for _, bad := range []string{"<script", "http://", "https://", "src=", "href=", "<b>&x"} {
		if bad == "http://" {
			page = strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
		}
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if !strings.Contains(page, "&lt;b&gt;&amp;x") || strings.Count(page, "<svg") != 2 {
		t.Error("page lacks the escaped name or its two charts")
	}
}

// TestGrantAndFirstHandOver: with grant_ms a task moved to a new member is
// owned by nobody in the assignor's input until grant_ms later; with
// handover_first_ms a member that runs no task yet starts its tasks later.
func TestGrantAndFirstHandOver(t *testing.T) {
	// Six tasks on a and b; c joins at 10 s and takes two (sticky's quota
	// of ceil(6/3)); d joins at 11 s or 13 s.
	scenario := func(dAt, extra string) *sim.Scenario {
		return leaveScenario(t, "partitions: 4", "partitions: 6", "tick_ms: 1000", "tick_ms: 1000\n"+extra,
			"  - {at_s: 10, leave: b}", "  - {at_s: 10, join: c, member_id: c}\n  - {at_s: "+dAt+", join: d, member_id: d}")
	}
	for _, c := range []struct {
		dAt, extra string
		owned      int // tasks c owns in the input of d's join
	}{
		{dAt: "11", owned: 2},
		{dAt: "11", extra: "grant_ms: 2000", owned: 0},
		{dAt: "13", extra: "grant_ms: 2000", owned: 2},
		// c owns nothing when it gets its tasks: grant_first_ms applies.
		{dAt: "13", extra: "grant_ms: 2000\ngrant_first_ms: 4000", owned: 0},
		{dAt: "11", extra: "grant_ms: 2000\ngrant_first_ms: 500", owned: 2},
	} {
		owned := -1
		capture := sim.Assignor{Name: "sticky", Assign: func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
			if len(req.Members) == 4 && owned < 0 {
				for _, m := range req.Members {
					if m.ID == "c" {
						owned = len(m.Active)
					}
				}
			}
			return sticky.Assign(req)
		}}
		r := sim.Run(scenario(c.dAt, c.extra), []sim.Assignor{capture})
		if a := r.Assignors[0]; a.Error != "" || owned != c.owned || a.Rebalances[1].TasksMoved != 2 {
			t.Errorf("d at %s s, %q: c owns %d tasks at d's join, want %d; error %q, first rebalance %+v",
				c.dAt, c.extra, owned, c.owned, a.Error, a.Rebalances[1])
		}
	}
	// c runs no task when it gets its two: they wait handover_first_ms,
	// then restore 10000 records at 1000/s.
	for _, c := range []struct {
		extra        string
		unavailableS float64
	}{{"handover_ms: 2000", 24}, {"handover_ms: 2000\nhandover_first_ms: 5000", 30}} {
		r := sim.Run(scenario("60", c.extra), builtins[:1]) // d joins at the end: never
		if a := r.Assignors[0]; a.Error != "" || a.UnavailableTaskS != c.unavailableS {
			t.Errorf("%q: %v task-s, want %v (error %q)", c.extra, a.UnavailableTaskS, c.unavailableS, a.Error)
		}
	}
}

// TestInitialTarget: the starting point given in the scenario is the first
// target, with its processes' state as listed; a bad one is an error.
func TestInitialTarget(t *testing.T) {
	for _, c := range []struct {
		lags         string
		unavailableS float64
	}{
		// b's one task goes to a, which has no state for it: 10 s.
		{"", 10},
		// a's process holds 0_3 5000 records behind: 5 s.
		{`, lags: {"0_3": 5000}`, 5},
	} {
		sc := leaveScenario(t, "events:", `initial:
  - {member: a, active: ["0_0", "0_1", "0_2"]`+c.lags+`}
  - {member: b, active: ["0_3"]}
events:`)
		for _, a := range sim.Run(sc, builtins).Assignors {
			first := a.Rebalances[0]
			if a.Error != "" || !first.Baseline || first.Balance.ActivePerMember.Max != 3 || a.UnavailableTaskS != c.unavailableS || a.Totals.TasksMoved != 1 {
				t.Errorf("%s %q: error %q, first target %+v, %v task-s, totals %+v", a.Name, c.lags, a.Error, first, a.UnavailableTaskS, a.Totals)
			}
		}
	}
	for _, bad := range []struct{ initial, want string }{
		{`[{member: x, active: ["0_0"]}]`, `member "x" does not join at 0 s`},
		{`[{member: a, active: ["9_0"]}]`, `no task "9_0"`},
		{`[{member: a, lags: {"0_0": -1}}]`, "must be in"},
	} {
		data := strings.Replace(string(readScenario(t, "leave.yaml")), "events:", "initial: "+bad.initial+"\nevents:", 1)
		if _, err := sim.Decode("leave.yaml", []byte(data), nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("initial %s: error %v, want %q", bad.initial, err, bad.want)
		}
	}
	// Two owners of one task: the assignment check refuses it.
	sc := leaveScenario(t, "events:", "initial: [{member: a, active: [\"0_0\"]}, {member: b, active: [\"0_0\"]}]\nevents:")
	if a := sim.Run(sc, builtins[:1]).Assignors[0]; a.Error == "" {
		t.Error("a starting point with a task on two members was installed")
	}
}
