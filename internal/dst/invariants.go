package dst

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// invariants is what the sim remembers to check the coordinator against:
// what it acknowledged, what it handed out, and the epochs it committed.
type invariants struct {
	// claims: per streams group and member, the active tasks the
	// coordinator handed the member and the member has not since given up
	// (by a heartbeat that no longer reports them, by leaving, or by being
	// removed from the group). No task may be in two members' claims.
	claims map[string]map[string]taskSet
	// ackedEpoch: per streams group and member, the highest member epoch
	// an acknowledged heartbeat response carried.
	ackedEpoch map[string]map[string]int32
	// ackedGen: per classic group, the highest generation a successful
	// SyncGroup response acknowledged (its GroupMetadata record is durable).
	ackedGen map[string]int32
	// handed: per classic group and generation, the partitions SyncGroup
	// responses handed each member.
	handed map[string]map[int32]map[string][]int32
	// last: each group's committed epochs after the previous round.
	last map[string]groupState
}

func newInvariants() invariants {
	return invariants{claims: map[string]map[string]taskSet{}, ackedEpoch: map[string]map[string]int32{},
		ackedGen: map[string]int32{}, handed: map[string]map[int32]map[string][]int32{}, last: map[string]groupState{}}
}

// streamsResponse checks a released streams heartbeat response: a task it
// grants must not be claimed by another member of the group.
func (inv *invariants) streamsResponse(s *sim, group, member string, reported taskSet, resp *kmsg.StreamsGroupHeartbeatResponse) {
	if resp.ErrorCode != 0 {
		return
	}
	claims := inv.claims[group]
	if claims == nil {
		claims = map[string]taskSet{}
		inv.claims[group] = claims
	}
	if resp.MemberEpoch < 0 {
		delete(claims, member)
		return
	}
	if acked := inv.ackedEpoch[group]; acked == nil {
		inv.ackedEpoch[group] = map[string]int32{member: resp.MemberEpoch}
	} else if resp.MemberEpoch > acked[member] {
		acked[member] = resp.MemberEpoch
	}
	mine := claims[member]
	if mine == nil {
		mine = taskSet{}
		claims[member] = mine
	}
	if reported != nil {
		for t := range mine {
			if !reported[t] {
				delete(mine, t)
			}
		}
	}
	if resp.ActiveTasks == nil {
		return
	}
	s.stats.Grants++
	granted := fromKmsg(resp.ActiveTasks)
	for _, t := range granted.sorted() {
		for _, other := range sortedKeys(claims) {
			if other != member && claims[other][t] {
				s.fail(fmt.Errorf("group %s: the coordinator granted active task %s to %s (epoch %d) while %s may still own it (claims %s)",
					group, t, member, resp.MemberEpoch, other, claims[other]))
				return
			}
		}
		mine[t] = true
	}
}

// classicSync checks a released SyncGroup response: partitions handed out
// in one generation must not overlap between members.
func (inv *invariants) classicSync(s *sim, group, member string, gen int32, resp *kmsg.SyncGroupResponse) {
	if resp.ErrorCode != 0 {
		return
	}
	s.stats.Grants++
	inv.ackedGen[group] = max(inv.ackedGen[group], gen)
	byGen := inv.handed[group]
	if byGen == nil {
		byGen = map[int32]map[string][]int32{}
		inv.handed[group] = byGen
	}
	members := byGen[gen]
	if members == nil {
		members = map[string][]int32{}
		byGen[gen] = members
	}
	parts := decodeAssignment(resp.MemberAssignment)
	for _, other := range sortedKeys(members) {
		if other == member {
			continue
		}
		for _, p := range parts {
			for _, q := range members[other] {
				if p == q {
					s.fail(fmt.Errorf("group %s generation %d: partition t-%d handed to %s and to %s", group, gen, p, member, other))
					return
				}
			}
		}
	}
	members[member] = parts
}

// afterCommit checks partition p's committed state after a round: epochs
// never go backwards, and members no longer in a group give up their claims.
func (inv *invariants) afterCommit(s *sim, p int) {
	live := s.shards[p].c.Dump()
	now := parseDump(live)
	renewed := s.shards[p].renewed
	s.shards[p].renewed = nil
	if s.shards[p].converted {
		// Replay equals live state after a conversion's records.
		s.shards[p].converted = false
		if err := s.checkCompactedReplay(p, live); err != nil {
			s.fail(fmt.Errorf("after an online conversion: %w", err))
			return
		}
	}
	for _, g := range allGroups() {
		if partitionOf(g) != p {
			continue
		}
		st, ok := now[g]
		if !ok {
			delete(inv.last, g)
			delete(inv.claims, g)
			continue
		}
		if renewed[g] {
			delete(inv.last, g) // a new group: its epochs start again
		}
		if err := st.notBehind(g, inv.last[g], "the previous round"); err != nil {
			s.fail(err)
			return
		}
		inv.last[g] = st
		inv.forgetGone(g, st)
	}
}

// forgetGone drops what members no longer in group g had: their claims,
// and their acknowledged epochs (one that rejoins under the same id starts
// from epoch 0).
func (inv *invariants) forgetGone(g string, st groupState) {
	for m := range inv.claims[g] {
		if _, ok := st.members[m]; !ok {
			delete(inv.claims[g], m)
		}
	}
	for m := range inv.ackedEpoch[g] {
		if _, ok := st.members[m]; !ok {
			delete(inv.ackedEpoch[g], m)
		}
	}
}

// afterRestart checks the restarted coordinator against the durable state
// before the crash and against every acknowledgement.
func (inv *invariants) afterRestart(s *sim, durable map[int]string) {
	if s.failure() != nil {
		return
	}
	before, after := map[string]groupState{}, map[string]groupState{}
	for p := 0; p < partitions; p++ {
		for g, st := range parseDump(durable[p]) {
			before[g] = st
		}
		for g, st := range parseDump(s.shards[p].c.Dump()) {
			after[g] = st
		}
	}
	for _, g := range sortedKeys(before) {
		st, ok := after[g]
		if !ok {
			s.fail(fmt.Errorf("group %s lost by the restart", g))
			return
		}
		if err := st.notBehind(g, before[g], "before the crash"); err != nil {
			s.fail(err)
			return
		}
		for _, m := range sortedKeys(before[g].members) {
			if _, ok := st.members[m]; !ok {
				s.fail(fmt.Errorf("group %s: member %s lost by the restart", g, m))
				return
			}
		}
	}
	for _, g := range sortedKeys(inv.ackedEpoch) {
		for _, m := range sortedKeys(inv.ackedEpoch[g]) {
			if e, ok := after[g].members[m]; ok && e < inv.ackedEpoch[g][m] {
				s.fail(fmt.Errorf("group %s: member %s has epoch %d after the restart, below the acknowledged %d", g, m, e, inv.ackedEpoch[g][m]))
				return
			}
		}
	}
	for _, g := range sortedKeys(inv.ackedGen) {
		if st, ok := after[g]; !ok || st.epoch < inv.ackedGen[g] {
			s.fail(fmt.Errorf("group %s: generation %d acknowledged by SyncGroup is not durable (after the restart: %d)", g, inv.ackedGen[g], st.epoch))
			return
		}
	}
	// A batch that became durable in the append the process died in may
	// have removed members (a session expiry): they are gone now.
	for g, st := range after {
		inv.last[g] = st
		inv.forgetGone(g, st)
	}
	for _, g := range sortedKeys(inv.claims) {
		if _, ok := after[g]; !ok {
			delete(inv.claims, g)
			delete(inv.ackedEpoch, g)
		}
	}
}

// groupState is one group's epochs as core's Dump (its canonical durable
// state) writes them: the streams group and assignment epochs and member
// epochs, or the classic durable generation and members (epoch 0).
type groupState struct {
	kind          string
	epoch, assign int32
	members       map[string]int32
}

func (st groupState) notBehind(g string, old groupState, when string) error {
	if old.members == nil {
		return nil
	}
	if old.kind != st.kind {
		// An online conversion: the new group's epoch continues from the
		// old one's (a streams group's epoch, a classic generation).
		if st.epoch < old.epoch {
			return fmt.Errorf("group %s: epoch went backwards converting from %s to %s: %d, %d %s", g, old.kind, st.kind, st.epoch, old.epoch, when)
		}
		return nil
	}
	if st.epoch < old.epoch || st.assign < old.assign {
		return fmt.Errorf("group %s: epochs went backwards: %d/%d, %d/%d %s", g, st.epoch, st.assign, old.epoch, old.assign, when)
	}
	for m, e := range st.members {
		if o, ok := old.members[m]; ok && e < o {
			return fmt.Errorf("group %s: member %s epoch went backwards: %d, %d %s", g, m, e, o, when)
		}
	}
	return nil
}

// parseDump reads the epochs out of core's Dump.
func parseDump(d string) map[string]groupState {
	out := map[string]groupState{}
	var cur string
	for _, line := range strings.Split(d, "\n") {
		switch {
		case strings.HasPrefix(line, "group "):
			id, rest, _ := strings.Cut(strings.TrimPrefix(line, "group "), " kind=")
			cur, _ = strconv.Unquote(id)
			kind, _, _ := strings.Cut(rest, " ")
			out[cur] = groupState{kind: kind, members: map[string]int32{}}
		case strings.HasPrefix(line, "  epoch="):
			st := out[cur]
			st.epoch, st.assign = field(line, "epoch="), field(line, "assignment-epoch=")
			out[cur] = st
		case strings.HasPrefix(line, "  generation="):
			st := out[cur]
			st.epoch = field(line, "generation=")
			out[cur] = st
		case strings.HasPrefix(line, "  member "):
			id, rest, _ := strings.Cut(strings.TrimPrefix(line, "  member "), " ")
			m, _ := strconv.Unquote(id)
			out[cur].members[m] = field(" "+rest, "epoch=")
		}
	}
	return out
}

// field returns the integer after " name" in line (0 if absent).
func field(line, name string) int32 {
	i := strings.Index(line, " "+name)
	if i < 0 {
		return 0
	}
	v := line[i+1+len(name):]
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	n, _ := strconv.ParseInt(v, 10, 32)
	return int32(n)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
