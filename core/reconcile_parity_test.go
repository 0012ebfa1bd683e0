package core

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// TestReconcileParityWithKafka is a differential test of reconciliation:
// random members (state, epochs, assigned and pending tasks with epochs,
// target, reported owned tasks) in random groups (other members on the same
// or other processes, which fill the ownership indexes) are reconciled by
// core and by Kafka 4.4's own streams CurrentAssignmentBuilder
// (interop/records-golden, ReconcileParity); the outcomes must be equal.
var parityCases = flag.Int("parity.cases", 0, "number of reconciliation parity cases (default 3000)")

func TestReconcileParityWithKafka(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	n := 3000
	if *parityCases > 0 {
		n = *parityCases
	}
	differential(t, rng, n, "coordhost.golden.ReconcileParity", parityCase)
}

var parityTasks = func() []TaskID {
	var out []TaskID
	for _, s := range []string{"0", "1"} {
		for p := int32(0); p < 4; p++ {
			out = append(out, TaskID{s, p})
		}
	}
	return out
}()

// parityCase builds one random case; it returns the line for Kafka and
// core's outcome in the same canonical form.
func parityCase(rng *rand.Rand, id int) (string, string) {
	g := newStreamsGroup("g")
	epoch := int32(1 + rng.IntN(5))
	states := []memberState{memberStable, memberUnrevokedTasks, memberUnreleasedTasks, memberStable, memberUnknown}
	m := newStreamsMember("m")
	m.processID, m.epoch, m.prevEpoch = "pA", epoch, epoch-1
	m.state = states[rng.IntN(len(states))]
	targetEpoch := epoch + int32(rng.IntN(3))
	taken := map[TaskID]bool{}  // active anywhere
	roleAt := map[string]bool{} // process|task|role held
	hold := func(mem *streamsMember, o *ownedTasks, t TaskID, role int) {
		key := fmt.Sprintf("%s|%s|%d", mem.processID, t, role)
		switch {
		case role == 0 && !taken[t]:
			taken[t] = true
			o.active[t] = 1 + int32(rng.IntN(int(epoch)))
		case role == 1 && !roleAt[key]:
			roleAt[key] = true
			o.standby[t] = struct{}{}
		case role == 2 && !roleAt[key]:
			roleAt[key] = true
			o.warmup[t] = struct{}{}
		}
	}
	for _, t := range parityTasks {
		if r := rng.IntN(6); r < 3 {
			hold(m, &m.assigned, t, r)
		}
		if m.state == memberUnrevokedTasks && rng.IntN(5) == 0 {
			hold(m, &m.pending, t, rng.IntN(3))
		}
	}
	g.swapMember(nil, m)
	for i := 0; i < rng.IntN(4); i++ {
		o := newStreamsMember(fmt.Sprintf("o%d", i))
		o.processID = []string{"pA", "pB", "pC"}[rng.IntN(3)]
		for _, t := range parityTasks {
			if r := rng.IntN(8); r < 3 {
				hold(o, &o.assigned, t, r)
			}
		}
		g.swapMember(nil, o)
	}
	target := emptyTuple()
	for _, t := range parityTasks {
		switch rng.IntN(5) {
		case 0:
			target.active[t] = struct{}{}
		case 1:
			target.standby[t] = struct{}{}
		case 2:
			target.warmup[t] = struct{}{}
		}
	}
	g.target["m"] = target
	g.indexWarmupTarget("m")
	g.assignmentEpoch = targetEpoch
	var owned *ownedTasksReport
	ownedField := "null"
	if rng.IntN(5) > 0 {
		owned = &ownedTasksReport{active: taskSet{}, standby: taskSet{}, warmup: taskSet{}}
		pick := func(dst taskSet, src ...taskSet) {
			for _, s := range src {
				for t := range s {
					if rng.IntN(3) > 0 {
						dst[t] = struct{}{}
					}
				}
			}
		}
		pick(owned.active, m.assigned.active.set(), m.pending.active.set())
		pick(owned.standby, m.assigned.standby, m.pending.standby)
		pick(owned.warmup, m.assigned.warmup, m.pending.warmup)
		ownedField = strings.Join([]string{parityList(owned.active), parityList(owned.standby), parityList(owned.warmup)}, ";")
	}
	line := strings.Join([]string{fmt.Sprint(id), fmt.Sprint(int8(m.state)), fmt.Sprint(m.epoch), fmt.Sprint(m.prevEpoch),
		m.processID, fmt.Sprint(targetEpoch),
		parityEpochs(m.assigned.active), parityList(m.assigned.standby), parityList(m.assigned.warmup),
		parityEpochs(m.pending.active), parityList(m.pending.standby), parityList(m.pending.warmup),
		parityList(target.active), parityList(target.standby), parityList(target.warmup), ownedField,
		parityActiveOwners(g.activeOwner), parityOwners(g.standbyOwners), parityOwners(g.warmupOwners)}, "|")
	u, e := g.reconcile(m, owned)
	if e != nil {
		return line, fmt.Sprintf("%d|FENCED", id)
	}
	return line, strings.Join([]string{fmt.Sprint(id), fmt.Sprint(int8(u.state)), fmt.Sprint(u.epoch), fmt.Sprint(u.prevEpoch),
		parityEpochs(u.assigned.active), parityList(u.assigned.standby), parityList(u.assigned.warmup),
		parityEpochs(u.pending.active), parityList(u.pending.standby), parityList(u.pending.warmup)}, "|")
}

func parityList(s taskSet) string {
	if len(s) == 0 {
		return "-"
	}
	return formatTasks(s)
}

func parityEpochs(e taskEpochs) string {
	if len(e) == 0 {
		return "-"
	}
	return formatEpochs(e)
}

func parityActiveOwners(m map[TaskID]string) string {
	var out []string
	for t, p := range m {
		out = append(out, t.String()+"="+p)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}

func parityOwners(idx ownerIndex) string {
	var out []string
	for t, ps := range idx {
		var procs []string
		for _, o := range ps {
			if o.n > 0 {
				procs = append(procs, o.process)
			}
		}
		sort.Strings(procs)
		out = append(out, t.String()+"="+strings.Join(procs, "+"))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}
