package abi

import (
	"fmt"
	"unsafe"
)

// AppendAssignRequest appends the encoding of r (SPEC.md 5.1) to dst. It
// fails if r breaks an ordering or limit rule, e.g. unsorted task sets.
func AppendAssignRequest(dst []byte, r *AssignRequest) ([]byte, error) {
	w := writer{b: dst}
	w.u8(MsgAssignRequest)
	w.string("group_id", r.GroupID)
	w.nonneg("group_epoch", r.GroupEpoch)
	w.u64(r.Seed)
	w.nonneg("num_standby_replicas", r.Configs.NumStandbyReplicas)
	w.nonneg("num_warmup_replicas", r.Configs.NumWarmupReplicas)
	w.varint(r.Configs.AcceptableRecoveryLag)
	w.strings("rack_aware_assignment_tags", r.Configs.RackAwareAssignmentTags, false)
	w.pairs("configs", r.Configs.All)
	w.strings("processes", r.Processes, true)
	w.count(len(r.Subtopologies))
	for i, s := range r.Subtopologies {
		if i > 0 && s.ID <= r.Subtopologies[i-1].ID {
			w.fail("subtopologies", fmt.Errorf("id %q not strictly after %q", s.ID, r.Subtopologies[i-1].ID))
		}
		w.string("subtopology.id", s.ID)
		w.nonneg("subtopology.partitions", s.Partitions)
		var flags byte
		if s.Stateful {
			flags |= 1
		}
		w.u8(flags)
	}
	w.count(len(r.Members))
	b := w.b
	for i := range r.Members {
		ok := memberFastPath
		if ok {
			b, ok = appendMemberFast(b, &r.Members[i])
		}
		if !ok {
			// A rule is broken: the checked writer names it.
			w.b = b
			appendMember(&w, &r.Members[i])
			if w.err != nil {
				return w.b, w.err
			}
			b = w.b
		}
	}
	w.b = b
	w.noTags()
	return w.b, w.err
}

// appendMemberFast appends the encoding of m with the buffer in a local
// passed by value (the checked writer stores its buffer through a pointer
// at every field: with 1,000 members that was a third of the host's
// encoding time, in write barriers). ok is false, with b unchanged, when
// m breaks a rule; appendMember then reports it.
func appendMemberFast(b []byte, m *Member) (_ []byte, ok bool) {
	start := b
	if m.Process < 0 {
		return start, false
	}
	if b, ok = appendStr(b, m.ID); ok {
		if b, ok = appendStr(b, m.InstanceID); ok {
			b = appendUvar(b, uint64(m.Process))
			b, ok = appendStr(b, m.Rack)
		}
	}
	if ok {
		b, ok = appendPairs(b, m.ClientTags)
	}
	for _, set := range [3][]int32{m.Active, m.Standby, m.Warmup} {
		if ok {
			b, ok = appendTaskSet(b, set)
		}
	}
	for _, offs := range [2][]TaskOffset{m.TaskOffsets, m.TaskEndOffsets} {
		if ok {
			b, ok = appendTaskOffsets(b, offs)
		}
	}
	if !ok {
		return start, false
	}
	return append(b, 0), true // no tags
}

func appendStr(b []byte, s string) ([]byte, bool) {
	if len(s) > MaxString {
		return b, false
	}
	return append(appendUvar(b, uint64(len(s))), s...), true
}

func appendPairs(b []byte, kvs []KV) ([]byte, bool) {
	b = appendUvar(b, uint64(len(kvs)))
	ok := true
	for i := 0; i < len(kvs) && ok; i++ {
		if i > 0 && kvs[i].Key <= kvs[i-1].Key {
			return b, false
		}
		if b, ok = appendStr(b, kvs[i].Key); ok {
			b, ok = appendStr(b, kvs[i].Value)
		}
	}
	return b, ok
}

func appendTaskSet(b []byte, ts []int32) ([]byte, bool) {
	b = appendUvar(b, uint64(len(ts)))
	next := int32(0)
	for _, t := range ts {
		if t < next {
			return b, false
		}
		b = appendUvar(b, uint64(t-next))
		next = t + 1
	}
	return b, true
}

func appendTaskOffsets(b []byte, offs []TaskOffset) ([]byte, bool) {
	b = appendUvar(b, uint64(len(offs)))
	next := int32(0)
	for _, o := range offs {
		if o.Task < next {
			return b, false
		}
		b = appendUvar(b, uint64(o.Task-next))
		b = appendUvar(b, uint64(o.Offset<<1)^uint64(o.Offset>>63))
		next = o.Task + 1
	}
	return b, true
}

func appendMember(w *writer, m *Member) {
	w.string("member.member_id", m.ID)
	w.string("member.instance_id", m.InstanceID)
	w.nonneg("member.process", m.Process)
	w.string("member.rack", m.Rack)
	w.pairs("member.client_tags", m.ClientTags)
	w.taskset("member.active", m.Active)
	w.taskset("member.standby", m.Standby)
	w.taskset("member.warmup", m.Warmup)
	w.taskoffsets("member.task_offsets", m.TaskOffsets)
	w.taskoffsets("member.task_end_offsets", m.TaskEndOffsets)
	w.noTags()
}

// DecodeAssignRequest decodes an AssignRequest message into r, replacing its
// contents. Besides the encoding it checks the request's own consistency:
// process indices and task indices in range, table orderings, unique member
// ids, and the size limits of SPEC.md 1.2.
func DecodeAssignRequest(b []byte, r *AssignRequest) error {
	d := Decoder{oneShot: true}
	return d.DecodeAssignRequest(b, r)
}

// Decoder decodes AssignRequests into memory it keeps from one call to the
// next: the member array, the slab behind every task set and offset list,
// and the duplicate-id check. A guest that decodes one request per call
// allocates almost nothing after the first call. A request decoded by a
// Decoder is valid until the Decoder's next decode.
type Decoder struct {
	// AliasInput makes every decoded string a substring of the input
	// bytes themselves instead of one copy of the input per decode: the
	// caller must not modify the input while the request is in use, nor
	// keep any decoded string past that. For a wasm guest whose input
	// buffer lives exactly one call (guest.Options), where the copy and
	// the fresh memory it needs cost more than the rest of the decode of
	// many short members.
	AliasInput bool

	tasks   []int32
	offsets []TaskOffset
	members []Member
	procs   []string
	subs    []Subtopology
	order   []int32  // member indices by id, for the duplicate check
	keys    []uint64 // MemberIDOrder's scratch
	oneShot bool     // not reused: keep nothing for a next decode
}

// DecodeAssignRequest is the package function DecodeAssignRequest, reusing
// d's memory.
func (d *Decoder) DecodeAssignRequest(b []byte, r *AssignRequest) error {
	if len(b) > MaxRequestBytes {
		return &DecodeError{Field: "request", Err: fmt.Errorf("%d bytes exceed limit %d", len(b), MaxRequestBytes)}
	}
	rd := reader{b: b, slab: d.tasks[:cap(d.tasks)], offSlab: d.offsets[:cap(d.offsets)]}
	if d.AliasInput && len(b) > 0 {
		rd.text = unsafe.String(&b[0], len(b))
	}
	defer d.keep(&rd)
	*r = AssignRequest{}
	rd.kind(MsgAssignRequest, "kind")
	r.GroupID = rd.string("group_id")
	r.GroupEpoch = rd.int32("group_epoch", 1<<31-1)
	r.Seed = rd.u64("seed")
	r.Configs.NumStandbyReplicas = rd.int32("num_standby_replicas", 1<<31-1)
	r.Configs.NumWarmupReplicas = rd.int32("num_warmup_replicas", 1<<31-1)
	r.Configs.AcceptableRecoveryLag = rd.varint("acceptable_recovery_lag")
	r.Configs.RackAwareAssignmentTags = rd.strings("rack_aware_assignment_tags", MaxString, false)
	r.Configs.All = rd.pairs("configs")
	r.Processes = rd.stringsInto(d.procs, "processes", MaxProcesses, true)
	decodeSubtopologies(&rd, r, d.subs)
	if !d.oneShot {
		d.procs, d.subs = maxCap(d.procs, r.Processes), maxCap(d.subs, r.Subtopologies)
	}
	total := r.NumTasks()
	n := rd.count("members", MaxMembers, 11)
	if n > 0 {
		if cap(d.members) < n {
			d.members = make([]Member, n)
		}
		r.Members = d.members[:n]
		clear(r.Members)
	}
	if n > 0 && rd.text == "" {
		rd.text = string(rd.b) // member strings are substrings of it
	}
	for i := 0; i < n && rd.err == nil; i++ {
		decodeMember(&rd, &r.Members[i], int32(len(r.Processes)), total)
	}
	rd.tags("tags")
	if err := rd.end("request"); err != nil {
		return err
	}
	return d.checkUniqueMembers(r.Members)
}

// keep remembers the slabs for the next decode: when a decode had to grow
// them, the next one starts with room for everything this one needed.
func (d *Decoder) keep(rd *reader) {
	if d.oneShot {
		return
	}
	if rd.grownTasks > 0 {
		d.tasks = make([]int32, rd.grownTasks)
	}
	if rd.grownOffsets > 0 {
		d.offsets = make([]TaskOffset, rd.grownOffsets)
	}
}

// maxCap returns whichever of a and b has the larger capacity.
func maxCap[T any](a, b []T) []T {
	if cap(b) > cap(a) {
		return b
	}
	return a
}

func decodeSubtopologies(rd *reader, r *AssignRequest, reuse []Subtopology) {
	n := rd.count("subtopologies", MaxSubtopologies, 3)
	if n == 0 {
		return
	}
	if cap(reuse) < n {
		reuse = make([]Subtopology, n)
	}
	r.Subtopologies = reuse[:n]
	var total int64
	for i := range r.Subtopologies {
		s := &r.Subtopologies[i]
		s.ID = rd.string("subtopology.id")
		s.Partitions = rd.int32("subtopology.partitions", MaxTasks)
		s.Stateful = rd.u8("subtopology.flags")&1 != 0
		total += int64(s.Partitions)
		if rd.err != nil {
			return
		}
		if i > 0 && s.ID <= r.Subtopologies[i-1].ID {
			rd.fail("subtopologies", fmt.Errorf("id %q not strictly after %q", s.ID, r.Subtopologies[i-1].ID))
			return
		}
		if total > MaxTasks {
			rd.fail("subtopologies", fmt.Errorf("%d tasks exceed limit %d", total, MaxTasks))
			return
		}
	}
}

func decodeMember(rd *reader, m *Member, processes, tasks int32) {
	start := rd.off
	if !memberFastPath || !decodeMemberFast(rd, m) {
		rd.off = start
		decodeMemberChecked(rd, m)
	}
	if rd.err != nil {
		return
	}
	switch {
	case m.ID == "":
		rd.fail("member.member_id", fmt.Errorf("empty member id"))
	case m.Process >= processes:
		rd.fail("member.process", fmt.Errorf("member %q: process index %d, only %d processes", m.ID, m.Process, processes))
	case !below(m.Active, tasks) || !below(m.Standby, tasks) || !below(m.Warmup, tasks):
		rd.fail("member tasks", fmt.Errorf("member %q: task index out of range (%d tasks)", m.ID, tasks))
	case !offsetsBelow(m.TaskOffsets, tasks) || !offsetsBelow(m.TaskEndOffsets, tasks):
		rd.fail("member task offsets", fmt.Errorf("member %q: offset for a task out of range (%d tasks)", m.ID, tasks))
	}
}

// memberFastPath is switched off by tests comparing the fast member
// encoder and decoder with the checked ones.
var memberFastPath = true

// decodeMemberChecked reads a member record field by field through the
// checked reader: the reference for decodeMemberFast, and the path that
// reports errors.
func decodeMemberChecked(rd *reader, m *Member) {
	m.ID = rd.string("member.member_id")
	m.InstanceID = rd.string("member.instance_id")
	m.Process = rd.int32("member.process", MaxProcesses)
	m.Rack = rd.string("member.rack")
	m.ClientTags = rd.pairs("member.client_tags")
	m.Active = rd.taskset("member.active")
	m.Standby = rd.taskset("member.standby")
	m.Warmup = rd.taskset("member.warmup")
	m.TaskOffsets = rd.taskoffsets("member.task_offsets")
	m.TaskEndOffsets = rd.taskoffsets("member.task_end_offsets")
	rd.tags("member.tags")
}

// decodeMemberFast reads the common member record — short strings, no
// tags — with the read position in a local, the strings
// as substrings of rd.text, and one call per task list instead of about
// forty calls per member (calls are what a Go wasm guest pays most for:
// with 1,000 members the record overhead dominated the decode). Anything
// else (long strings, tags, a truncated record) returns false before any
// error is recorded, and the caller re-reads the record with
// decodeMemberChecked, which reports errors exactly as before. Client tags
// and task lists go through the checked reader: when one fails, its error
// stands (the checked path would have read the same bytes the same way).
func decodeMemberFast(rd *reader, m *Member) bool {
	b, text, off := rd.b, rd.text, rd.off
	var ok bool
	if m.ID, off, ok = shortString(b, text, off); !ok {
		return false
	}
	if m.InstanceID, off, ok = shortString(b, text, off); !ok {
		return false
	}
	p, next := localUvarint(b, off)
	if next == 0 || p > MaxProcesses {
		return false
	}
	m.Process, off = int32(p), next
	if m.Rack, off, ok = shortString(b, text, off); !ok {
		return false
	}
	rd.off = off
	if m.ClientTags = rd.pairs("member.client_tags"); rd.err != nil {
		return true
	}
	m.Active = rd.taskset("member.active")
	m.Standby = rd.taskset("member.standby")
	m.Warmup = rd.taskset("member.warmup")
	m.TaskOffsets = rd.taskoffsets("member.task_offsets")
	m.TaskEndOffsets = rd.taskoffsets("member.task_end_offsets")
	if rd.err != nil {
		return true
	}
	if rd.off >= len(b) || b[rd.off] != 0 { // tags: only none here
		return false
	}
	rd.off++
	return true
}

// shortString reads a string of fewer than 128 bytes (one-byte length) at
// b[off:] as a substring of text (the same bytes); ok is false for
// anything else.
func shortString(b []byte, text string, off int) (s string, next int, ok bool) {
	if off >= len(b) {
		return "", off, false
	}
	n := int(b[off])
	if n >= 0x80 || n > len(b)-off-1 {
		return "", off, false
	}
	return text[off+1 : off+1+n], off + 1 + n, true
}

// below reports whether the last (largest) task of an ascending set is < n.
func below(ts []int32, n int32) bool { return len(ts) == 0 || ts[len(ts)-1] < n }

func offsetsBelow(os []TaskOffset, n int32) bool { return len(os) == 0 || os[len(os)-1].Task < n }

// MemberOrder returns the indices of the last decoded request's members in
// ascending id order (computed for the duplicate-id check; see
// MemberIDOrder), valid until the next decode: a plugin that needs that
// order need not sort again.
func (d *Decoder) MemberOrder() []int32 { return d.order }

// checkUniqueMembers orders the members by id (MemberIDOrder: an integer
// sort, cheaper in a wasm guest than a map of strings) and looks for equal
// neighbours.
func (d *Decoder) checkUniqueMembers(ms []Member) error {
	d.order = MemberIDOrder(d.order, ms, &d.keys)
	for i := 1; i < len(d.order); i++ {
		if id := ms[d.order[i]].ID; id == ms[d.order[i-1]].ID {
			return &DecodeError{Field: "members", Err: fmt.Errorf("member id %q appears twice", id)}
		}
	}
	return nil
}
