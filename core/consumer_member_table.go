package core

// Kafka's coordinator keeps a consumer group's members in a TimelineHashMap
// and, computing a target, hands them to the assignor in that map's
// iteration order, the member the running request adds coming after it
// (GroupMetadataManager's UpdatedMembersAndTargetAssignmentView, copied by
// TargetAssignmentBuilder.build into the GroupSpec's HashMap). The uniform
// assignor breaks the ties of an uneven split in the resulting order, so
// which member keeps or takes the extra partition depends on the map's
// history: its capacity (it grows with the most members held and never
// shrinks) and the order of insertion (within a slot). memberTable records
// that history; the assignor turns it into Kafka's order
// (plugins/assignor-uniform MemberMap). A member's records of one request
// reach Kafka's map only after the request, so members inserted by the
// running entry point are its additions and do not count towards the peak.

// memberTable is the history of a consumer group's member map.
type memberTable struct {
	seq  map[string]tableEntry
	next int64
	// peak is the most members held; peakBefore what it was before entry
	// point last inserted.
	peak, peakBefore int
	last             uint64
}

// tableEntry is a member's insertion number and the entry point that
// inserted it (0: a replayed record).
type tableEntry struct {
	seq   int64
	entry uint64
}

// entry identifies the running entry point (0 while replaying the log).
func (c *Coordinator) entry() uint64 {
	if c.out == nil {
		return 0
	}
	return c.entries
}

func (t *memberTable) put(id string, entry uint64) {
	if _, ok := t.seq[id]; ok {
		return
	}
	if t.seq == nil {
		t.seq = map[string]tableEntry{}
	}
	if entry == 0 || entry != t.last {
		t.last, t.peakBefore = entry, t.peak
	}
	t.seq[id] = tableEntry{seq: t.next, entry: entry}
	t.next++
	t.peak = max(t.peak, len(t.seq))
}

func (t *memberTable) remove(id string) { delete(t.seq, id) }

// seqAt is id's insertion number as entry point entry sees Kafka's map: -1
// when entry inserted it.
func (t *memberTable) seqAt(id string, entry uint64) int64 {
	e := t.seq[id]
	if entry != 0 && e.entry == entry {
		return -1
	}
	return e.seq
}

// peakAt is the peak entry point entry sees: before its own insertions.
func (t *memberTable) peakAt(entry uint64) int {
	if entry != 0 && t.last == entry {
		return t.peakBefore
	}
	return t.peak
}
