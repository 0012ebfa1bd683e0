package sim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/userdata"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

// rollOnCore replays testdata/scenarios/migration-roll.yaml on core with
// assignor a, cut at 500 s before the roll back when half, and returns the
// engine after its last tick.
func rollOnCore(t *testing.T, half bool, a Assignor) *coreWorld {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "scenarios", "migration-roll.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if half {
		text = strings.Replace(text, "duration_s: 1200", "duration_s: 500", 1)
		text = text[:strings.Index(text, "  - {at_s: 600")]
	}
	sc, err := Decode("migration-roll.yaml", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	cw, err := newCoreWorld(sc, a)
	if err != nil {
		t.Fatal(err)
	}
	if r := cw.run(); r.Error != "" {
		t.Fatalf("%s: %s", a.Name, r.Error)
	}
	return cw
}

var coreAssignors = []Assignor{{Name: "sticky", Assign: sticky.Assign}, {Name: "ha", Assign: ha.Assign}}

// TestCoreMigrationRollState reads core's own state of the migration
// roll: at 500 s, after every instance moved to the streams protocol and
// coordhost restarted on its log, a streams group whose twelve members
// are no longer classic and hold every task once at the group's epoch;
// at the end, after the roll back, a stable classic group whose members'
// stored assignments hold every task once — what each simulated client
// took from its SyncGroup.
func TestCoreMigrationRollState(t *testing.T) {
	for _, a := range coreAssignors {
		cw := rollOnCore(t, true, a)
		if cw.loads != 1 {
			t.Errorf("%s: coordhost loaded %d times, want 1", a.Name, cw.loads)
		}
		resp, err := cw.c.Read(&kmsg.StreamsGroupDescribeRequest{Groups: []string{coreGroup}})
		if err != nil {
			t.Fatal(err)
		}
		g := resp.(*kmsg.StreamsGroupDescribeResponse).Groups[0]
		active := map[string]int{}
		for _, m := range g.Members {
			if m.IsClassic || m.MemberEpoch != g.AssignmentEpoch {
				t.Errorf("%s at 500 s: member %s classic %v at epoch %d, group at %d", a.Name, m.MemberID, m.IsClassic, m.MemberEpoch, g.AssignmentEpoch)
			}
			for _, ts := range m.Assignment.ActiveTasks {
				for _, p := range ts.Partitions {
					active[userdata.TaskID{Partition: p}.String()+"/"+ts.SubtopologyID]++
				}
			}
		}
		if g.ErrorCode != 0 || len(g.Members) != 12 || len(active) != 36 || slices.Max(mapValues(active)) != 1 || g.State != "Stable" {
			t.Errorf("%s at 500 s: error %d, state %s, %d members, %d tasks active %v", a.Name, g.ErrorCode, g.State, len(g.Members), len(active), active)
		}

		cw = rollOnCore(t, false, a)
		if kind := mustGroup(t, cw.c).Kind(); kind != core.GroupKindClassic {
			t.Fatalf("%s: the group is a %s group at the end", a.Name, kind)
		}
		dresp, err := cw.c.Read(&kmsg.DescribeGroupsRequest{Groups: []string{coreGroup}})
		if err != nil {
			t.Fatal(err)
		}
		dg := dresp.(*kmsg.DescribeGroupsResponse).Groups[0]
		owner := map[int32]string{}
		for _, m := range dg.Members {
			asg, err := userdata.DecodeAssignment(m.MemberAssignment)
			if err != nil {
				t.Fatal(err)
			}
			info, err := userdata.DecodeAssignmentInfo(asg.UserData)
			if err != nil {
				t.Fatal(err)
			}
			var tasks []int32
			for _, ut := range info.ActiveTasks {
				tk := cw.classicTask(ut)
				if o, ok := owner[tk]; ok && o != m.MemberID {
					t.Errorf("%s: task %d active on %s and %s", a.Name, tk, o, m.MemberID)
				}
				owner[tk] = m.MemberID
				tasks = append(tasks, tk)
			}
			slices.Sort(tasks)
			if sm := cw.memberOrNil(m.MemberID); sm == nil || !slices.Equal(slices.Compact(tasks), sm.target.Active) {
				t.Errorf("%s: core stores %v for %s, the client holds %v", a.Name, tasks, m.MemberID, sm)
			}
		}
		if dg.State != "Stable" || len(dg.Members) != 12 || len(owner) != 36 {
			t.Errorf("%s at the end: state %s, %d members, %d tasks active", a.Name, dg.State, len(dg.Members), len(owner))
		}
	}
}

func mustGroup(t *testing.T, c *core.Coordinator) core.Group {
	t.Helper()
	g, ok := c.Group(coreGroup)
	if !ok {
		t.Fatal("no group")
	}
	return g
}

func mapValues(m map[string]int) []int {
	out := []int{0}
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestCoreRestartChecksReplay: coordhost stops at 100 s of
// coordhost-restart.yaml (b fenced before) and is back after the run's
// end; bringing it back replays the store into a new coordinator whose
// state equals the old one's, and a store that lost its last write is
// refused, naming the difference.
func TestCoreRestartChecksReplay(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "sim", "coordhost-restart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "{at_s: 12, coordhost_restart: 28}", "{at_s: 100, coordhost_restart: 100}", 1)
	for _, lose := range []bool{false, true} {
		sc, err := Decode("coordhost-restart.yaml", []byte(text), nil)
		if err != nil {
			t.Fatal(err)
		}
		cw, err := newCoreWorld(sc, coreAssignors[0])
		if err != nil {
			t.Fatal(err)
		}
		if r := cw.run(); r.Error != "" || !cw.stopped || len(r.Rebalances) != 2 {
			t.Fatalf("run: error %q, stopped %v, %d targets", r.Error, cw.stopped, len(r.Rebalances))
		}
		if lose {
			var last string
			for k, v := range cw.coreRestart.store {
				if last == "" || v.seq > cw.coreRestart.store[last].seq {
					last = k
				}
			}
			delete(cw.coreRestart.store, last)
		}
		old := cw.c
		cw.now = cw.downUntil
		cw.maybeRestart()
		switch {
		case !lose && (cw.err != nil || cw.loads != 1 || cw.c == old || cw.c.Dump() != old.Dump()):
			t.Errorf("restart: error %v, %d loads", cw.err, cw.loads)
		case lose && (cw.err == nil || !strings.Contains(cw.err.Error(), "the replayed state differs") || cw.loads != 0):
			t.Errorf("restart on a store that lost a write: error %v, %d loads", cw.err, cw.loads)
		}
	}
}

// TestCoreCheckOwned: a task active on members of two processes stops the
// replay; on two members of one process (threads of one instance) it
// does not.
func TestCoreCheckOwned(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "sim", "leave.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sameProcess := range []bool{true, false} {
		sc, err := Decode("leave.yaml", data, nil)
		if err != nil {
			t.Fatal(err)
		}
		cw, err := newCoreWorld(sc, coreAssignors[0])
		if err != nil {
			t.Fatal(err)
		}
		a := &member{label: "a", process: "p", target: abi.MemberAssignment{Active: []int32{0, 1}}}
		b := &member{label: "b", process: "q", target: abi.MemberAssignment{Active: []int32{1}}}
		if sameProcess {
			b.process = "p"
		}
		cw.members = []*member{a, b}
		cw.checkOwned()
		if (cw.err == nil) != sameProcess {
			t.Errorf("same process %v: %v", sameProcess, cw.err)
		}
	}
}
