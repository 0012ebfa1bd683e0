package abi

import "fmt"

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
	for i := range r.Members {
		appendMember(&w, &r.Members[i])
	}
	w.noTags()
	return w.b, w.err
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
	tasks   []int32
	offsets []TaskOffset
	members []Member
	seen    map[string]struct{}
	oneShot bool // not reused: keep nothing for a next decode
}

// DecodeAssignRequest is the package function DecodeAssignRequest, reusing
// d's memory.
func (d *Decoder) DecodeAssignRequest(b []byte, r *AssignRequest) error {
	if len(b) > MaxRequestBytes {
		return &DecodeError{Field: "request", Err: fmt.Errorf("%d bytes exceed limit %d", len(b), MaxRequestBytes)}
	}
	rd := reader{b: b, slab: d.tasks[:cap(d.tasks)], offSlab: d.offsets[:cap(d.offsets)]}
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
	r.Processes = rd.strings("processes", MaxProcesses, true)
	decodeSubtopologies(&rd, r)
	total := r.NumTasks()
	n := rd.count("members", MaxMembers, 11)
	if n > 0 {
		if cap(d.members) < n {
			d.members = make([]Member, n)
		}
		r.Members = d.members[:n]
		clear(r.Members)
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

func decodeSubtopologies(rd *reader, r *AssignRequest) {
	n := rd.count("subtopologies", MaxSubtopologies, 3)
	if n == 0 {
		return
	}
	r.Subtopologies = make([]Subtopology, n)
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

// below reports whether the last (largest) task of an ascending set is < n.
func below(ts []int32, n int32) bool { return len(ts) == 0 || ts[len(ts)-1] < n }

func offsetsBelow(os []TaskOffset, n int32) bool { return len(os) == 0 || os[len(os)-1].Task < n }

func (d *Decoder) checkUniqueMembers(ms []Member) error {
	if d.seen == nil {
		d.seen = make(map[string]struct{}, len(ms))
	}
	defer clear(d.seen)
	for i := range ms {
		if _, dup := d.seen[ms[i].ID]; dup {
			return &DecodeError{Field: "members", Err: fmt.Errorf("member id %q appears twice", ms[i].ID)}
		}
		d.seen[ms[i].ID] = struct{}{}
	}
	return nil
}
