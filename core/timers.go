package core

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Timers are data: a timer is a key, a deadline (epoch ms) and what to do.
// Setting a key that exists replaces it, as in Kafka's timer. Tick(now)
// fires every due timer in (deadline, key) order. Each group kind registers
// its timer kinds' handlers from its own file (registerTimerKind); streams
// kinds are 1–15, classic kinds take 16–31.
type timerKind uint8

// Streams timer kinds.
const (
	timerStreamsSession      timerKind = 1  // session-timeout-<group>-<member>
	timerStreamsRebalance    timerKind = 2  // rebalance-timeout-<group>-<member>
	timerStreamsInitialDelay timerKind = 3  // initial-rebalance-timeout-<group>
	timerStreamsAssignWait   timerKind = 4  // assignor-wait-<group>: release parked heartbeats
	timerStreamsTargetSlice  timerKind = 5  // target-slice-<group>: write the next members' targets (streams_target_slices.go)
	timerStreamsProbe        timerKind = 9  // probing-rebalance-<group>: re-run the assignor (streams_warmup.go)
	timerStreamsRegroup      timerKind = 10 // regroup-<group>: stop waiting for a restarted (or leaving) process's members (migration_regroup.go)
)

type timer struct {
	key      TimerKey
	deadline int64
	group    string // key.group
	member   string // key.member
	epoch    int32  // the member epoch captured when a rebalance timeout was set
	kind     timerKind
}

// TimerKey names a timer: what it times, the group and, for a member's
// timer, the member. Its String is the key Kafka's timer uses
// ("session-timeout-<group>-<member>"); timers due at the same time fire
// in the order of that text. A key holds the group's and member's own
// strings, and its text is made only when asked for (traces), so a
// timer costs no string of its own.
type TimerKey struct {
	name          keyName
	group, member string
}

type keyName uint8

const (
	keyStreamsSession keyName = iota
	keyStreamsRebalance
	keyStreamsInitialDelay
	keyStreamsAssignWait
	keyStreamsProbe
	keyClassicHeartbeat
	keyClassicJoin
	keyClassicSync
	keyConsumerSession
	keyConsumerRebalance
	keyConsumerJoin
	keyConsumerSync
	keyMigrationJoin
	keyMigrationSync
	keyMigrationPending
	keyStreamsTargetSlice
	keyStreamsRegroup
)

// keyNames are each key name's text and whether the key names a member.
var keyNames = [...]struct {
	prefix string
	member bool
}{
	keyStreamsSession:      {"session-timeout-", true},
	keyStreamsRebalance:    {"rebalance-timeout-", true},
	keyStreamsInitialDelay: {"initial-rebalance-timeout-", false},
	keyStreamsAssignWait:   {"assignor-wait-", false},
	keyStreamsProbe:        {"probing-rebalance-", false},
	keyClassicHeartbeat:    {"heartbeat-", true},
	keyClassicJoin:         {"join-", false},
	keyClassicSync:         {"sync-", false},
	keyConsumerSession:     {"consumer-session-", true},
	keyConsumerRebalance:   {"consumer-rebalance-", true},
	keyConsumerJoin:        {"consumer-join-", true},
	keyConsumerSync:        {"consumer-sync-", true},
	keyMigrationJoin:       {"migration-join-", true},
	keyMigrationSync:       {"migration-sync-", true},
	keyMigrationPending:    {"migration-pending-", true},
	keyStreamsTargetSlice:  {"target-slice-", false},
	keyStreamsRegroup:      {"regroup-", false},
}

func sessionTimerKey(group, member string) TimerKey {
	return TimerKey{keyStreamsSession, group, member}
}
func rebalanceTimerKey(group, member string) TimerKey {
	return TimerKey{keyStreamsRebalance, group, member}
}
func initialDelayKey(group string) TimerKey {
	return TimerKey{name: keyStreamsInitialDelay, group: group}
}
func assignWaitKey(group string) TimerKey { return TimerKey{name: keyStreamsAssignWait, group: group} }
func probeKey(group string) TimerKey      { return TimerKey{name: keyStreamsProbe, group: group} }
func targetSliceKey(group string) TimerKey {
	return TimerKey{name: keyStreamsTargetSlice, group: group}
}
func regroupKey(group string) TimerKey { return TimerKey{name: keyStreamsRegroup, group: group} }
func classicHeartbeatKey(group, member string) TimerKey {
	return TimerKey{keyClassicHeartbeat, group, member}
}
func classicJoinKey(group string) TimerKey { return TimerKey{name: keyClassicJoin, group: group} }
func classicSyncKey(group string) TimerKey { return TimerKey{name: keyClassicSync, group: group} }
func consumerSessionKey(group, member string) TimerKey {
	return TimerKey{keyConsumerSession, group, member}
}
func consumerRebalanceKey(group, member string) TimerKey {
	return TimerKey{keyConsumerRebalance, group, member}
}
func consumerJoinKey(group, member string) TimerKey { return TimerKey{keyConsumerJoin, group, member} }
func consumerSyncKey(group, member string) TimerKey { return TimerKey{keyConsumerSync, group, member} }
func migrationJoinKey(group, member string) TimerKey {
	return TimerKey{keyMigrationJoin, group, member}
}
func migrationSyncKey(group, member string) TimerKey {
	return TimerKey{keyMigrationSync, group, member}
}
func migrationPendingKey(group, member string) TimerKey {
	return TimerKey{keyMigrationPending, group, member}
}

// parts are the pieces of the key's text.
func (k TimerKey) parts() [4]string {
	n := keyNames[k.name]
	if !n.member {
		return [4]string{n.prefix, k.group}
	}
	return [4]string{n.prefix, k.group, "-", k.member}
}

// String is the key's text.
func (k TimerKey) String() string {
	p := k.parts()
	return p[0] + p[1] + p[2] + p[3]
}

// compareKeys compares the texts of a and b without making them.
func compareKeys(a, b TimerKey) int {
	if a == b {
		return 0
	}
	pa, pb := a.parts(), b.parts()
	i, j := 0, 0 // the parts being read
	sa, sb := pa[0], pb[0]
	for {
		for sa == "" && i < 3 {
			i++
			sa = pa[i]
		}
		for sb == "" && j < 3 {
			j++
			sb = pb[j]
		}
		if sa == "" || sb == "" {
			return cmp.Compare(len(sa), len(sb)) // the one that has text left is greater
		}
		n := min(len(sa), len(sb))
		if c := strings.Compare(sa[:n], sb[:n]); c != 0 {
			return c
		}
		sa, sb = sa[n:], sb[n:]
	}
}

// timerState is what the timer map holds for a key.
type timerState struct {
	deadline int64
	epoch    int32
	kind     timerKind
}

func (k TimerKey) timer(s timerState) timer {
	return timer{key: k, deadline: s.deadline, group: k.group, member: k.member, epoch: s.epoch, kind: s.kind}
}

var timerKinds = map[timerKind]func(c *Coordinator, t timer){}

// registerTimerKind installs the handler of a timer kind.
func registerTimerKind(k timerKind, fire func(c *Coordinator, t timer)) {
	if _, dup := timerKinds[k]; dup {
		panic(fmt.Sprintf("core: timer kind %d registered twice", k))
	}
	timerKinds[k] = fire
}

// timerHeap orders timer entries by (deadline, key). Entries are lazy: an
// entry of a key the timer map no longer holds is stale and skipped, so
// replacing, cancelling and undoing timers never searches the heap. Every
// scheduled key has an entry no later than its deadline: a timer moved
// later (a session timer re-armed by each heartbeat) keeps its entry, and
// when that entry comes to the top it is pushed again at the timer's
// deadline, so a steady heartbeat pushes nothing.
type timerHeap []timerEntry

type timerEntry struct {
	deadline int64
	key      TimerKey
}

func (h timerHeap) less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return compareKeys(h[i].key, h[j].key) < 0
}

// The heap works on entries directly (not through container/heap's
// interface), so a push or pop boxes no entry.

func (h *timerHeap) push(e timerEntry) {
	*h = append(*h, e)
	h.up(len(*h) - 1)
}

// pop removes the earliest entry.
func (h *timerHeap) pop() {
	s := *h
	n := len(s) - 1
	s[0] = s[n]
	s[n] = timerEntry{} // drop the strings it holds
	*h = s[:n]
	h.down(0)
}

func (h timerHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h timerHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			return
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (h timerHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		j := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// indexTimer records t in the heap, rebuilding it when stale entries
// reach half the live ones (a session timer re-armed by every heartbeat
// leaves one stale entry each time; a rebuild every n/2 pushes keeps the
// cost per push constant).
func (c *Coordinator) indexTimer(key TimerKey, deadline int64) {
	if c.loading {
		c.timerHeap = append(c.timerHeap, timerEntry{deadline, key}) // ordered by Loaded
	} else {
		c.timerHeap.push(timerEntry{deadline, key})
	}
	if len(c.timerHeap) > len(c.timers)+len(c.timers)/2+64 {
		c.rebuildTimerHeap()
	}
}

// rebuildTimerHeap makes the heap anew from the timer map, without stale
// entries.
func (c *Coordinator) rebuildTimerHeap() {
	h := make(timerHeap, 0, len(c.timers)+len(c.timers)/2+65) // room until the next rebuild
	for k, t := range c.timers {
		h = append(h, timerEntry{t.deadline, k})
	}
	h.init()
	c.timerHeap = h
}

// reserveTimers makes room for n more timers in the timer map, the heap
// and the Output being built, so that arming every loaded member's
// session timer grows none of them step by step. The map is a new one:
// the one before stays as it was, and its undo puts it back (the undo of
// every timer set while loading).
func (c *Coordinator) reserveTimers(n int) {
	before := c.timers
	c.timers = make(map[TimerKey]timerState, len(before)+max(n, 0))
	maps.Copy(c.timers, before)
	c.onUndo(func() {
		c.timers = before
		c.rebuildTimerHeap()
	})
	c.timerHeap = slices.Grow(c.timerHeap, n)
	c.out.Timers = slices.Grow(c.out.Timers, n)
}

// peekTimer returns the earliest scheduled timer, dropping stale entries
// and moving those of timers moved later to their deadlines.
func (c *Coordinator) peekTimer() (timer, bool) {
	for len(c.timerHeap) > 0 {
		e := c.timerHeap[0]
		s, ok := c.timers[e.key]
		if ok && s.deadline == e.deadline {
			return e.key.timer(s), true
		}
		c.timerHeap.pop()
		if ok && s.deadline > e.deadline {
			c.timerHeap.push(timerEntry{s.deadline, e.key})
		}
	}
	return timer{}, false
}

// setTimer schedules t (replacing a timer with the same key), undoably.
func (c *Coordinator) setTimer(t timer) {
	if t.group != t.key.group || t.member != t.key.member {
		panic(fmt.Sprintf("core: timer %s for group %q member %q", t.key, t.group, t.member))
	}
	old, had := c.timers[t.key]
	c.timers[t.key] = timerState{t.deadline, t.epoch, t.kind}
	if !had || t.deadline < old.deadline || c.loading {
		c.indexTimer(t.key, t.deadline) // else its entry is no later (timerHeap)
	}
	c.out.Timers = append(c.out.Timers, TimerChange{Key: t.key, Deadline: t.deadline})
	if !c.loading {
		c.onUndoTimer(t.key, old, had)
	}
}

// setTimerIfAbsent schedules t unless a timer with its key exists.
func (c *Coordinator) setTimerIfAbsent(t timer) {
	if _, ok := c.timers[t.key]; !ok {
		c.setTimer(t)
	}
}

// cancelTimer removes the timer with key, if any, undoably.
func (c *Coordinator) cancelTimer(key TimerKey) {
	old, had := c.timers[key]
	if !had {
		return
	}
	delete(c.timers, key)
	if c.out != nil {
		c.out.Timers = append(c.out.Timers, TimerChange{Key: key, Cancel: true})
	}
	c.onUndoTimer(key, old, had)
}

func (c *Coordinator) restoreTimer(key TimerKey, old timerState, had bool) {
	if had {
		c.timers[key] = old
		c.indexTimer(key, old.deadline)
	} else {
		delete(c.timers, key)
	}
}

// timerDeadline returns the deadline of the timer with key, if scheduled.
func (c *Coordinator) timerDeadline(key TimerKey) (int64, bool) {
	t, ok := c.timers[key]
	return t.deadline, ok
}

// hasTimer reports whether a timer with key is scheduled.
func (c *Coordinator) hasTimer(key TimerKey) bool {
	_, ok := c.timers[key]
	return ok
}

// timerKeysOfGroup lists the keys of a group's timers, in key order.
func (c *Coordinator) timerKeysOfGroup(group string) []TimerKey {
	var keys []TimerKey
	for k := range c.timers {
		if k.group == group {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	return keys
}

// NextDeadline returns the earliest timer deadline, if any timer is set.
func (c *Coordinator) NextDeadline() (int64, bool) {
	t, ok := c.peekTimer()
	return t.deadline, ok
}

// DeadlineBound returns a time no later than NextDeadline's, if a timer is
// set, without the work NextDeadline may do to find the exact deadline: a
// timer moved later keeps its heap entry, which NextDeadline moves when it
// reaches the top (timerHeap), so after a steady heartbeat of the member
// whose timer is earliest it pops and pushes an entry. A host whose pending
// wake-up is no later than the bound needs nothing more.
func (c *Coordinator) DeadlineBound() (int64, bool) {
	if c.loading || len(c.timers) == 0 || len(c.timerHeap) == 0 {
		return c.NextDeadline() // while loading the entries are not yet a heap
	}
	return c.timerHeap[0].deadline, true
}

// tick fires every timer whose deadline is <= now, earliest first (ties by
// key), and returns what they produced.
func (c *Coordinator) tick(now int64) Output {
	c.begin(now)
	for {
		t, ok := c.peekTimer()
		if !ok || t.deadline > now {
			break
		}
		c.cancelTimer(t.key)
		timerKinds[t.kind](c, t)
	}
	return c.end()
}

// tickOne fires only the earliest due timer (ties by key), if any, and
// reports whether one fired. A host that answers assignor runs at once can
// call it in a loop, answering runs between timers, to sequence timers
// exactly as Kafka does (each of its timers is a separate write whose
// target assignment is computed inline). With scratch its Records, Events
// and Timers are in the arrays lent for it (Tick.Scratch).
func (c *Coordinator) tickOne(now int64, scratch bool) (Output, bool) {
	c.begin(now)
	if scratch {
		c.out.Records, c.out.Events, c.out.Timers = c.scratch.Records[:0], c.scratch.Events[:0], c.scratch.Timers[:0]
	}
	t, ok := c.peekTimer()
	if ok && t.deadline <= now {
		c.cancelTimer(t.key)
		timerKinds[t.kind](c, t)
	} else {
		ok = false
	}
	out := c.end()
	if scratch {
		c.keepScratch(out)
	}
	return out, ok
}

// scratchRoom bounds the arrays kept for the next scratch Tick: a fenced
// member's output fits many times over, and a timer that wrote more (a
// group's deletion) leaves its arrays to the garbage collector.
const scratchRoom = 64

// keepScratch keeps out's arrays for the next scratch Tick, those not
// larger than scratchRoom.
func (c *Coordinator) keepScratch(out Output) {
	if cap(out.Records) <= scratchRoom {
		c.scratch.Records = out.Records
	}
	if cap(out.Events) <= scratchRoom {
		c.scratch.Events = out.Events
	}
	if cap(out.Timers) <= scratchRoom {
		c.scratch.Timers = out.Timers
	}
}

// TimerKeys lists scheduled timers as "key@deadline", sorted by key (for
// traces and tests).
func (c *Coordinator) TimerKeys() []string {
	keys := make([]TimerKey, 0, len(c.timers))
	for k := range c.timers {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s@%d", k, c.timers[k].deadline)
	}
	return out
}
