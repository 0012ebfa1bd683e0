package abi

// AppendAssignResponse appends the encoding of r (SPEC.md 5.2) to dst. Task
// sets must be strictly ascending.
func AppendAssignResponse(dst []byte, r *AssignResponse) ([]byte, error) {
	w := writer{b: dst}
	w.u8(MsgAssignResponse)
	appendAssignments(&w, r.Members)
	w.varint(r.NextProbeMs)
	w.noTags()
	return w.b, w.err
}

func appendAssignments(w *writer, ms []MemberAssignment) {
	w.count(len(ms))
	for i := range ms {
		w.taskset("active", ms[i].Active)
		w.taskset("standby", ms[i].Standby)
		w.taskset("warmup", ms[i].Warmup)
		w.noTags()
	}
}

// DecodeAssignResponse decodes an AssignResponse message into r. It checks
// the encoding only; ValidateAssignment checks the result against its
// request.
func DecodeAssignResponse(b []byte, r *AssignResponse) error {
	rd := reader{b: b}
	*r = AssignResponse{}
	rd.kind(MsgAssignResponse, "kind")
	r.Members = decodeAssignments(&rd)
	r.NextProbeMs = rd.varint("next_probe_ms")
	rd.tags("tags")
	return rd.end("response")
}

func decodeAssignments(rd *reader) []MemberAssignment {
	n := rd.count("members", MaxMembers, 4)
	if n == 0 {
		return nil
	}
	ms := make([]MemberAssignment, n)
	// Every task entry takes at least one byte, and every member at least
	// four more (three counts and its tags): one slab of that bound holds
	// all the sets (the reader still grows it if it were short).
	if rd.slab == nil {
		rd.slab = make([]int32, max(rd.remaining()-4*n, 0))
	}
	for i := 0; i < n && rd.err == nil; i++ {
		// Empty sets stay nil without a store: each store of a slice
		// header into the fresh array costs a write barrier while the
		// host's GC is marking.
		if a := rd.taskset("active"); a != nil {
			ms[i].Active = a
		}
		if s := rd.taskset("standby"); s != nil {
			ms[i].Standby = s
		}
		if w := rd.taskset("warmup"); w != nil {
			ms[i].Warmup = w
		}
		if rd.err == nil && rd.off < len(rd.b) && rd.b[rd.off] == 0 { // no tags
			rd.off++
		} else {
			rd.tags("member.tags")
		}
	}
	return ms
}
