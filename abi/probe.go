package abi

import "fmt"

// AppendProbeRequest appends the encoding of r (SPEC.md 5.3) to dst.
func AppendProbeRequest(dst []byte, r *ProbeRequest) ([]byte, error) {
	group, err := AppendAssignRequest(nil, &r.Group)
	if err != nil {
		return dst, err
	}
	w := writer{b: dst}
	w.u8(MsgProbeRequest)
	w.varint(r.NowMs)
	w.varint(r.LastAssignMs)
	w.count(len(group))
	w.b = append(w.b, group...)
	appendAssignments(&w, r.Target)
	w.noTags()
	return w.b, w.err
}

// DecodeProbeRequest decodes a ProbeRequest message into r.
func DecodeProbeRequest(b []byte, r *ProbeRequest) error {
	rd := reader{b: b}
	*r = ProbeRequest{}
	rd.kind(MsgProbeRequest, "kind")
	r.NowMs = rd.varint("now_ms")
	r.LastAssignMs = rd.varint("last_assign_ms")
	n := rd.count("group", MaxRequestBytes, 1)
	if rd.err == nil {
		if err := DecodeAssignRequest(rd.b[rd.off:rd.off+n], &r.Group); err != nil {
			return fmt.Errorf("abi: probe request group: %w", err)
		}
		rd.off += n
	}
	r.Target = decodeAssignments(&rd)
	rd.tags("tags")
	if err := rd.end("probe request"); err != nil {
		return err
	}
	if len(r.Target) != len(r.Group.Members) {
		return &DecodeError{Field: "target", Err: fmt.Errorf("%d entries for %d members", len(r.Target), len(r.Group.Members))}
	}
	return nil
}

// AppendProbeResponse appends the encoding of r (SPEC.md 5.4) to dst.
func AppendProbeResponse(dst []byte, r *ProbeResponse) []byte {
	w := writer{b: dst}
	w.u8(MsgProbeResponse)
	if r.Rebalance {
		w.u8(1)
	} else {
		w.u8(0)
	}
	w.varint(r.NextProbeMs)
	w.noTags()
	return w.b
}

// DecodeProbeResponse decodes a ProbeResponse message into r.
func DecodeProbeResponse(b []byte, r *ProbeResponse) error {
	rd := reader{b: b}
	rd.kind(MsgProbeResponse, "kind")
	switch v := rd.u8("rebalance"); {
	case rd.err != nil:
	case v > 1:
		rd.fail("rebalance", fmt.Errorf("value %d, want 0 or 1", v))
	default:
		r.Rebalance = v == 1
	}
	r.NextProbeMs = rd.varint("next_probe_ms")
	rd.tags("tags")
	return rd.end("probe response")
}
