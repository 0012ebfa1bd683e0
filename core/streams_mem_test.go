package core

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
)

// memFleet is the shape of the wire memory comparison (docs/BENCHMARKS.md,
// "wire: memory and replay"): groups streams groups of members members,
// one subtopology reading one shared topic of members partitions, one
// standby replica, every member joined and steady. It returns the
// coordinator alone (the harness's log and clients dropped). With stateful
// the subtopology has a changelog, so the standby replica is placed (the
// wire comparison's topology is stateless: no standbys).
func memFleet(tb testing.TB, groups, members int, stateful bool) *Coordinator {
	cfg := DefaultConfig()
	cfg.Streams.NumStandbyReplicas = 1
	h := newHarness(tb, cfg)
	h.lastTopics = []TopicMetadata{{Name: "src", ID: [16]byte{1}, Partitions: int32(members)}}
	topo := "sub 0 sources=src"
	if stateful {
		h.lastTopics = append(h.lastTopics, TopicMetadata{Name: "store-changelog", ID: [16]byte{2}, Partitions: int32(members)})
		topo += " changelogs=store-changelog"
	}
	h.finish(h.c.updateTopics(h.now, h.lastTopics), false)
	h.topologies["default"] = parseTopology(0, topo)
	join := func() int {
		before := len(h.log)
		for g := 0; g < groups; g++ {
			for m := 0; m < members; m++ {
				h.heartbeat(map[string]string{"group": fmt.Sprintf("mem-%04d", g), "member": fmt.Sprintf("mem-%04d-m%02d-0123456789abcdef", g, m),
					"process": fmt.Sprintf("process-%04d-%02d-0123456789abcdef", g, m)})
			}
		}
		for g := 0; g < groups; g++ {
			h.answerRuns(fmt.Sprintf("mem-%04d", g), "ref", false)
		}
		return len(h.log) - before
	}
	stable := func() bool {
		for g := 0; g < groups; g++ {
			if h.c.groups[fmt.Sprintf("mem-%04d", g)].StateName() != "Stable" {
				return false
			}
		}
		return true
	}
	quiet := 0
	for round := 0; quiet < 2; round++ { // two passes that change nothing, as hbload waits for
		if round > 50 {
			tb.Fatal("the fleet did not settle in 50 rounds")
		}
		h.advanceTo(h.now + 1000)
		if join() == 0 && stable() {
			quiet++
		} else {
			quiet = 0
		}
	}
	return h.c
}

func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

var memSink *Coordinator

// BenchmarkStreamsMemberMemory reports the live heap a coordinator holds
// per steady streams member in 1,000 groups × 10 members (the wire
// comparison's shape; run with -benchtime=1x).
func BenchmarkStreamsMemberMemory(b *testing.B) { benchMemberMemory(b, false) }

// BenchmarkStreamsMemberMemoryStateful is the same with a changelog on the
// subtopology: every task has an active and a standby owner.
func BenchmarkStreamsMemberMemoryStateful(b *testing.B) { benchMemberMemory(b, true) }

func benchMemberMemory(b *testing.B, stateful bool) {
	for i := 0; i < b.N; i++ {
		memSink = nil
		base := liveHeap()
		memSink = memFleet(b, 1000, 10, stateful)
		if stateful && len(memSink.groups["mem-0000"].(*streamsGroup).standbyOwners) == 0 {
			b.Fatal("stateful fleet without standbys")
		}
		grown := liveHeap() - base
		b.ReportMetric(float64(grown)/10000, "B/member")
	}
}

// TestTaskInterner: equal small lists give one shared set, anything that
// differs (a partition, an epoch, the fallback of a list without epochs)
// gives its own, empty lists give nil, long lists are never shared, and the
// tables stay bounded.
func TestTaskInterner(t *testing.T) {
	var in taskInterner
	ids := func(sub string, ps ...int32) []records.TaskIDs {
		return []records.TaskIDs{{SubtopologyID: sub, Partitions: ps}}
	}
	same := func(a, b map[TaskID]struct{}) bool { return fmt.Sprintf("%p", a) == fmt.Sprintf("%p", b) }
	a, b := in.fromTaskIDs(ids("0", 3)), in.fromTaskIDs(ids("0", 3))
	if !same(a, b) || len(a) != 1 || !a.has(TaskID{"0", 3}) {
		t.Fatalf("equal lists: %v %v, want one shared set {0_3}", a, b)
	}
	if c := in.fromTaskIDs(ids("0", 4)); same(a, c) || !c.has(TaskID{"0", 4}) {
		t.Fatalf("another partition shares the set: %v", c)
	}
	if c := in.fromTaskIDs(ids("0\x01", 3)); same(a, c) || !c.has(TaskID{"0\x01", 3}) {
		t.Fatalf("another subtopology shares the set: %v", c)
	}
	if s := in.fromTaskIDs(nil); s != nil {
		t.Fatalf("empty list: %v, want nil", s)
	}
	withEpochs := []records.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1, 2}, AssignmentEpochs: []int32{5, 6}}}
	e1, e2 := in.epochsFromTaskIDs(withEpochs, 9), in.epochsFromTaskIDs(withEpochs, 9)
	if fmt.Sprintf("%p", e1) != fmt.Sprintf("%p", e2) || e1[TaskID{"0", 1}] != 5 || e1[TaskID{"0", 2}] != 6 {
		t.Fatalf("equal lists with epochs: %v %v", e1, e2)
	}
	f7, f8 := in.epochsFromTaskIDs(ids("0", 1, 2), 7), in.epochsFromTaskIDs(ids("0", 1, 2), 8)
	if fmt.Sprintf("%p", f7) == fmt.Sprintf("%p", f8) || f7[TaskID{"0", 2}] != 7 || f8[TaskID{"0", 2}] != 8 {
		t.Fatalf("fallback epochs 7 and 8 share: %v %v", f7, f8)
	}
	long := ids("0", 0, 1, 2, 3, 4, 5, 6, 7, 8)
	if l1, l2 := in.fromTaskIDs(long), in.fromTaskIDs(long); same(l1, l2) || len(l1) != 9 {
		t.Fatalf("a list of %d tasks was shared", len(long[0].Partitions))
	}
	for p := int32(0); p < 3*maxInternedSets; p++ {
		in.fromTaskIDs(ids("0", p))
		if len(in.sets) > maxInternedSets {
			t.Fatalf("%d interned sets, bound %d", len(in.sets), maxInternedSets)
		}
	}
}

// TestOwnerIndex: the owner index counts each process's members a task
// is held by, keeps a task's processes sorted, drops a process at its last
// member and a task at its last process, and ignores drops of processes
// it does not hold.
func TestOwnerIndex(t *testing.T) {
	idx := ownerIndex{}
	t1, t2 := TaskID{"0", 1}, TaskID{"0", 2}
	both := taskSet{t1: {}, t2: {}}
	addOwner(idx, both, "p2")
	addOwner(idx, taskSet{t1: {}}, "p1")
	addOwner(idx, taskSet{t1: {}}, "p3")
	addOwner(idx, taskSet{t1: {}}, "p2")
	if got := formatOwners(idx); got != "[0_1:p1*1+p2*2+p3*1 0_2:p2*1]" {
		t.Fatalf("after adds: %s", got)
	}
	if !slices.IsSortedFunc(idx[t1], func(a, b processCount) int { return strings.Compare(a.process, b.process) }) {
		t.Fatalf("owners of %v not sorted: %v", t1, idx[t1])
	}
	if idx[t1].count("p2") != 2 || idx[t1].count("p4") != 0 || idx[TaskID{"9", 9}].count("p1") != 0 {
		t.Fatalf("counts: %v", idx)
	}
	dropOwner(idx, both, "p2")
	dropOwner(idx, taskSet{t1: {}}, "p4") // not an owner: nothing changes
	if got := formatOwners(idx); got != "[0_1:p1*1+p2*1+p3*1]" {
		t.Fatalf("after dropping one p2 member: %s", got)
	}
	for _, p := range []string{"p2", "p1", "p3"} {
		dropOwner(idx, taskSet{t1: {}}, p)
	}
	if len(idx) != 0 {
		t.Fatalf("every owner dropped, index still holds %v", idx)
	}
}
