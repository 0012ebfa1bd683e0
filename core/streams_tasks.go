package core

import (
	"cmp"
	"encoding/binary"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/coordhost/coordhost/core/records"
)

// TaskID is a streams task: a partition of a subtopology.
type TaskID struct {
	Subtopology string
	Partition   int32
}

// String renders a task as Kafka Streams does, "subtopology_partition".
func (t TaskID) String() string { return t.Subtopology + "_" + strconv.Itoa(int(t.Partition)) }

// taskSet is a set of tasks.
type taskSet map[TaskID]struct{}

// taskEpochs maps active tasks to the epoch at which they were assigned.
type taskEpochs map[TaskID]int32

// tasksTuple is a target assignment: active, standby and warm-up tasks.
type tasksTuple struct {
	active, standby, warmup taskSet
}

// ownedTasks is a member's assigned or pending-revocation tasks; active
// tasks carry their assignment epochs.
type ownedTasks struct {
	active          taskEpochs
	standby, warmup taskSet
}

func emptyTuple() tasksTuple {
	return tasksTuple{active: taskSet{}, standby: taskSet{}, warmup: taskSet{}}
}

func emptyOwned() ownedTasks {
	return ownedTasks{active: taskEpochs{}, standby: taskSet{}, warmup: taskSet{}}
}

func (s taskSet) has(t TaskID) bool { _, ok := s[t]; return ok }

func (s taskSet) sorted() []TaskID {
	out := make([]TaskID, 0, len(s))
	for t := range s {
		out = append(out, t)
	}
	sortTasks(out)
	return out
}

func (e taskEpochs) set() taskSet {
	s := make(taskSet, len(e))
	for t := range e {
		s[t] = struct{}{}
	}
	return s
}

// sortTasks orders ts by subtopology, then partition. slices.SortFunc,
// not sort.Slice, whose closure and swapper were three allocations of
// every target record (a mass expiry writes one for each fenced member).
func sortTasks(ts []TaskID) {
	slices.SortFunc(ts, compareTasks)
}

func compareTasks(a, b TaskID) int {
	if c := strings.Compare(a.Subtopology, b.Subtopology); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

func (o ownedTasks) isEmpty() bool {
	return len(o.active) == 0 && len(o.standby) == 0 && len(o.warmup) == 0
}

func setsEqual(a, b taskSet) bool {
	if len(a) != len(b) {
		return false
	}
	for t := range a {
		if !b.has(t) {
			return false
		}
	}
	return true
}

func (t tasksTuple) equal(u tasksTuple) bool {
	return setsEqual(t.active, u.active) && setsEqual(t.standby, u.standby) && setsEqual(t.warmup, u.warmup)
}

// toTaskIDs groups a set by subtopology, sorted, for records and responses.
func toTaskIDs(s taskSet) []records.TaskIDs {
	return groupTasks(s.sorted(), nil)
}

// epochsToTaskIDs is toTaskIDs for active tasks with assignment epochs.
func epochsToTaskIDs(e taskEpochs) []records.TaskIDs {
	return groupTasks(e.set().sorted(), e)
}

// groupTasks lists sorted (with each task's epoch from epochs, if set)
// by subtopology. The lists are sized before they are filled, and the
// partitions (and epochs) of every subtopology share one array, each
// list capped at its own end: a large group's target writes one record
// per member, and growing each list append by append was most of that
// record's garbage.
func groupTasks(sorted []TaskID, epochs taskEpochs) []records.TaskIDs {
	subs := 0
	for i, t := range sorted {
		if i == 0 || sorted[i-1].Subtopology != t.Subtopology {
			subs++
		}
	}
	out := make([]records.TaskIDs, 0, subs)
	parts := make([]int32, len(sorted))
	var eps []int32
	if epochs != nil {
		eps = make([]int32, len(sorted))
	}
	for start := 0; start < len(sorted); {
		end := start + 1
		for end < len(sorted) && sorted[end].Subtopology == sorted[start].Subtopology {
			end++
		}
		ids := records.TaskIDs{SubtopologyID: sorted[start].Subtopology, Partitions: parts[start:end:end]}
		for i, t := range sorted[start:end] {
			ids.Partitions[i] = t.Partition
		}
		if epochs != nil {
			ids.AssignmentEpochs = eps[start:end:end]
			for i, t := range sorted[start:end] {
				ids.AssignmentEpochs[i] = epochs[t]
			}
		}
		out = append(out, ids)
		start = end
	}
	return out
}

// fromTaskIDs builds a set from record task lists, for a group's state.
// A set stored in a group is never written afterwards (changes store new
// sets), so an empty list gives nil, which reads as an empty set and costs
// no allocation; a small one comes from the coordinator's interned sets.
func (in *taskInterner) fromTaskIDs(ids []records.TaskIDs) taskSet {
	n := countTaskIDs(ids)
	if n == 0 {
		return nil
	}
	ok := in.key(ids, n, false, 0)
	if s, hit := in.sets[string(in.buf)]; ok && hit { // the index does not copy the bytes
		return s
	}
	s := make(taskSet, n)
	for _, id := range ids {
		for _, p := range id.Partitions {
			s[TaskID{id.SubtopologyID, p}] = struct{}{}
		}
	}
	if ok {
		if len(in.sets) >= maxInternedSets {
			clear(in.sets) // sets handed out stay valid; only later sharing starts over
		}
		in.sets[string(in.buf)] = s
	}
	return s
}

// epochsFromTaskIDs reads active tasks with epochs; a list without (or with
// mismatched) AssignmentEpochs gets fallback for every task, as Kafka does
// for records written before 4.2. Like fromTaskIDs, an empty list gives
// nil and a small one an interned map.
func (in *taskInterner) epochsFromTaskIDs(ids []records.TaskIDs, fallback int32) taskEpochs {
	n := countTaskIDs(ids)
	if n == 0 {
		return nil
	}
	ok := in.key(ids, n, true, fallback)
	if e, hit := in.epochs[string(in.buf)]; ok && hit {
		return e
	}
	e := make(taskEpochs, n)
	for _, id := range ids {
		withEpochs := len(id.AssignmentEpochs) == len(id.Partitions)
		for i, p := range id.Partitions {
			if withEpochs {
				e[TaskID{id.SubtopologyID, p}] = id.AssignmentEpochs[i]
			} else {
				e[TaskID{id.SubtopologyID, p}] = fallback
			}
		}
	}
	if ok {
		if len(in.epochs) >= maxInternedSets {
			clear(in.epochs)
		}
		in.epochs[string(in.buf)] = e
	}
	return e
}

// taskInterner shares equal task sets among a coordinator's groups and
// members: the same few small sets ("0_3", "0_3@7") recur across members
// and groups, and a stored set is never written, so one map serves every
// holder. Only sets of up to maxInternedTasks tasks are shared, and each
// table is emptied when it reaches maxInternedSets entries, so the tables
// stay bounded however many distinct sets pass through.
type taskInterner struct {
	sets   map[string]taskSet
	epochs map[string]taskEpochs
	strs   map[string]string // str's table, bounded the same way
	buf    []byte
}

// str returns the copy of s the interner holds, holding s if none: for
// strings many members repeat (client hosts). A plain bounded map,
// not package unique: its weak handles cost more than a replay's decoding.
func (in *taskInterner) str(s string) string {
	if v, ok := in.strs[s]; ok {
		return v
	}
	if in.strs == nil || len(in.strs) >= maxInternedSets {
		in.strs = make(map[string]string)
	}
	in.strs[s] = s
	return s
}

const (
	maxInternedTasks = 8
	maxInternedSets  = 4096
)

// key encodes the lists exactly (each subtopology id length-prefixed, then
// partitions, with epochs if asked, as varints) into in.buf; it reports
// false for lists too long to intern. Equal keys mean equal sets; equal
// sets listed in another order only miss the sharing.
func (in *taskInterner) key(ids []records.TaskIDs, n int, epochs bool, fallback int32) bool {
	if n > maxInternedTasks {
		return false
	}
	if in.sets == nil {
		in.sets, in.epochs = map[string]taskSet{}, map[string]taskEpochs{}
	}
	b := in.buf[:0]
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(len(id.SubtopologyID)))
		b = append(b, id.SubtopologyID...)
		b = binary.AppendUvarint(b, uint64(len(id.Partitions)))
		withEpochs := len(id.AssignmentEpochs) == len(id.Partitions)
		for i, p := range id.Partitions {
			b = binary.AppendVarint(b, int64(p))
			switch {
			case !epochs:
			case withEpochs:
				b = binary.AppendVarint(b, int64(id.AssignmentEpochs[i]))
			default:
				b = binary.AppendVarint(b, int64(fallback))
			}
		}
	}
	in.buf = b
	return true
}

func countTaskIDs(ids []records.TaskIDs) int {
	n := 0
	for _, id := range ids {
		n += len(id.Partitions)
	}
	return n
}

// shareSet returns other when it holds exactly the tasks of s, else s:
// a member's current assignment and its target are mostly the same sets
// once it has reconciled, and stored sets are never written, so one map
// can serve both.
func shareSet(s, other taskSet) taskSet {
	if len(s) != len(other) || len(s) == 0 {
		return s
	}
	for t := range s {
		if !other.has(t) {
			return s
		}
	}
	return other
}

// formatTasks renders a set as "0_1,0_2" for traces.
func formatTasks(s taskSet) string {
	ts := s.sorted()
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String()
	}
	return strings.Join(parts, ",")
}

// formatEpochs renders active tasks with epochs as "0_1@2,0_2@3".
func formatEpochs(e taskEpochs) string {
	ts := e.set().sorted()
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.String() + "@" + strconv.Itoa(int(e[t]))
	}
	return strings.Join(parts, ",")
}

func epochsEqual(a, b taskEpochs) bool {
	if len(a) != len(b) {
		return false
	}
	for t, e := range a {
		if f, ok := b[t]; !ok || f != e {
			return false
		}
	}
	return true
}

// sameTasks reports whether o and p hold the same tasks in each role,
// whatever the active tasks' assignment epochs (what a heartbeat response
// carries).
func (o ownedTasks) sameTasks(p ownedTasks) bool {
	anyEpoch := func(int32, int32) bool { return true }
	return maps.EqualFunc(o.active, p.active, anyEpoch) && setsEqual(o.standby, p.standby) && setsEqual(o.warmup, p.warmup)
}

func (o ownedTasks) equal(p ownedTasks) bool {
	return epochsEqual(o.active, p.active) && setsEqual(o.standby, p.standby) && setsEqual(o.warmup, p.warmup)
}

// sameAssignment reports whether two members have equal assignment state
// (what record type 22 holds).
func sameAssignment(a, b *streamsMember) bool {
	if a == b { // a stored member is never written: the steady heartbeat's case
		return true
	}
	return a.epoch == b.epoch && a.prevEpoch == b.prevEpoch && a.state == b.state &&
		a.assigned.equal(b.assigned) && a.pending.equal(b.pending)
}

func sortStrings(s []string) { sort.Strings(s) }
