package abi

import (
	"bytes"
	"fmt"
	"slices"
)

// MaxTopics is the limit on topics per PartitionAssignRequest; the total of
// their partitions is limited by MaxTasks (SPEC.md section 1.2).
const MaxTopics = 65536

// AppendPartitionAssignRequest appends the encoding of r (SPEC.md 5.5) to
// dst. It fails if r breaks an ordering or limit rule.
func AppendPartitionAssignRequest(dst []byte, r *PartitionAssignRequest) ([]byte, error) {
	w := writer{b: dst}
	w.u8(MsgPartitionAssignRequest)
	w.string("group_id", r.GroupID)
	w.nonneg("group_epoch", r.GroupEpoch)
	w.u64(r.Seed)
	if r.Heterogeneous {
		w.u8(1)
	} else {
		w.u8(0)
	}
	w.pairs("configs", r.Configs)
	w.strings("racks", r.Racks, true)
	w.count(len(r.Topics))
	for i := range r.Topics {
		t := &r.Topics[i]
		if i > 0 && bytes.Compare(t.ID[:], r.Topics[i-1].ID[:]) <= 0 {
			w.fail("topics", fmt.Errorf("id %x not strictly after %x", t.ID, r.Topics[i-1].ID))
		}
		w.b = append(w.b, t.ID[:]...)
		w.string("topic.name", t.Name)
		w.nonneg("topic.partitions", t.Partitions)
		if len(t.PartitionRacks) != 0 && len(t.PartitionRacks) != int(t.Partitions) {
			w.fail("topic.partition_racks", fmt.Errorf("topic %q: %d rack sets for %d partitions", t.Name, len(t.PartitionRacks), t.Partitions))
		}
		w.count(len(t.PartitionRacks))
		for _, rs := range t.PartitionRacks {
			w.taskset("topic.partition_racks", rs)
		}
	}
	w.count(len(r.Members))
	for i := range r.Members {
		m := &r.Members[i]
		w.string("member.member_id", m.ID)
		w.string("member.instance_id", m.InstanceID)
		w.string("member.rack", m.Rack)
		w.taskset("member.subscribed", m.Subscribed)
		appendTopicPartitions(&w, "member.assigned", m.Assigned)
		w.noTags()
	}
	if r.MemberOrder == nil {
		w.noTags()
		return w.b, w.err
	}
	if err := checkMemberOrder(r.MemberOrder, len(r.Members)); err != nil {
		w.fail("member_order", err)
	}
	var order writer
	order.count(len(r.MemberOrder))
	for _, i := range r.MemberOrder {
		order.uvarint(uint64(i))
	}
	w.count(1)
	w.uvarint(tagMemberOrder)
	w.count(len(order.b))
	w.b = append(w.b, order.b...)
	return w.b, w.err
}

// tagMemberOrder is the PartitionAssignRequest tag of MemberOrder.
const tagMemberOrder = 0

// decodeMemberOrder reads the payload of tag 0 (SPEC.md 5.5): a
// permutation of the member indices.
func decodeMemberOrder(rd *reader, members int) []int32 {
	n := rd.count("member_order", MaxMembers, 1)
	if rd.err == nil && n != members {
		rd.fail("member_order", fmt.Errorf("%d entries for %d members", n, members))
		return nil
	}
	order := make([]int32, n)
	for i := range order {
		order[i] = rd.int32("member_order", MaxMembers)
	}
	if rd.err == nil {
		if err := checkMemberOrder(order, members); err != nil {
			rd.fail("member_order", err)
		}
	}
	return order
}

// checkMemberOrder reports whether order is a permutation of 0..n-1.
func checkMemberOrder(order []int32, n int) error {
	if len(order) != n {
		return fmt.Errorf("%d entries for %d members", len(order), n)
	}
	seen := make([]bool, n)
	for _, i := range order {
		if i < 0 || int(i) >= n || seen[i] {
			return fmt.Errorf("member index %d out of range or repeated (%d members)", i, n)
		}
		seen[i] = true
	}
	return nil
}

// appendTopicPartitions writes the `topicparts` primitive of SPEC.md 4.
func appendTopicPartitions(w *writer, field string, tps []TopicPartitions) {
	w.count(len(tps))
	next := int32(0)
	for _, tp := range tps {
		if tp.Topic < next {
			w.fail(field, fmt.Errorf("topic %d out of order or repeated", tp.Topic))
			return
		}
		if len(tp.Partitions) == 0 {
			w.fail(field, fmt.Errorf("topic %d has no partitions (leave it out)", tp.Topic))
			return
		}
		w.uvarint(uint64(tp.Topic - next))
		w.taskset(field, tp.Partitions)
		next = tp.Topic + 1
	}
}

func decodeTopicPartitions(rd *reader, field string, topics []Topic) []TopicPartitions {
	n := rd.count(field, MaxTopics, 2)
	if n == 0 {
		return nil
	}
	out := make([]TopicPartitions, n)
	next := int64(0)
	for i := 0; i < n && rd.err == nil; i++ {
		t := next + int64(rd.uvarint(field))
		if rd.err == nil && (t < next || t >= int64(len(topics))) {
			rd.fail(field, fmt.Errorf("topic index %d out of range (%d topics)", t, len(topics)))
			return nil
		}
		ps := rd.taskset(field)
		if rd.err != nil {
			return nil
		}
		if len(ps) == 0 {
			rd.fail(field, fmt.Errorf("topic %d with no partitions", t))
			return nil
		}
		if !below(ps, topics[t].Partitions) {
			rd.fail(field, fmt.Errorf("partition %d of topic %q out of range (%d partitions)", ps[len(ps)-1], topics[t].Name, topics[t].Partitions))
			return nil
		}
		out[i] = TopicPartitions{Topic: int32(t), Partitions: ps}
		next = t + 1
	}
	return out
}

// DecodePartitionAssignRequest decodes a PartitionAssignRequest into r and
// checks the rules of SPEC.md 5.5: orderings, indices in range, unique
// member ids, a partition currently assigned to at most one member, and a
// homogeneous subscription type only when every member subscribes to the
// same topics.
func DecodePartitionAssignRequest(b []byte, r *PartitionAssignRequest) error {
	if len(b) > MaxRequestBytes {
		return &DecodeError{Field: "request", Err: fmt.Errorf("%d bytes exceed limit %d", len(b), MaxRequestBytes)}
	}
	rd := reader{b: b}
	*r = PartitionAssignRequest{}
	rd.kind(MsgPartitionAssignRequest, "kind")
	r.GroupID = rd.string("group_id")
	r.GroupEpoch = rd.int32("group_epoch", 1<<31-1)
	r.Seed = rd.u64("seed")
	switch st := rd.u8("subscription_type"); {
	case rd.err != nil:
	case st > 1:
		rd.fail("subscription_type", fmt.Errorf("value %d, want 0 or 1", st))
	default:
		r.Heterogeneous = st == 1
	}
	r.Configs = rd.pairs("configs")
	r.Racks = rd.strings("racks", MaxString, true)
	decodeTopics(&rd, r)
	n := rd.count("members", MaxMembers, 6)
	if n > 0 {
		r.Members = make([]ConsumerMember, n)
	}
	for i := 0; i < n && rd.err == nil; i++ {
		m := &r.Members[i]
		m.ID = rd.string("member.member_id")
		m.InstanceID = rd.string("member.instance_id")
		m.Rack = rd.string("member.rack")
		m.Subscribed = rd.taskset("member.subscribed")
		m.Assigned = decodeTopicPartitions(&rd, "member.assigned", r.Topics)
		rd.tags("member.tags")
		if rd.err == nil && m.ID == "" {
			rd.fail("member.member_id", fmt.Errorf("empty member id"))
		}
		if rd.err == nil && !below(m.Subscribed, int32(len(r.Topics))) {
			rd.fail("member.subscribed", fmt.Errorf("member %q: topic index out of range (%d topics)", m.ID, len(r.Topics)))
		}
	}
	rd.tagsFunc("tags", func(tag uint64, payload *reader) bool {
		if tag != tagMemberOrder {
			return false
		}
		r.MemberOrder = decodeMemberOrder(payload, len(r.Members))
		return true
	})
	if err := rd.end("partition assign request"); err != nil {
		return err
	}
	return checkPartitionRequest(r)
}

func decodeTopics(rd *reader, r *PartitionAssignRequest) {
	n := rd.count("topics", MaxTopics, 19)
	if n == 0 {
		return
	}
	r.Topics = make([]Topic, n)
	var total int64
	for i := 0; i < n && rd.err == nil; i++ {
		t := &r.Topics[i]
		if rd.remaining() < 16 {
			rd.fail("topic.id", ErrTruncated)
			return
		}
		copy(t.ID[:], rd.b[rd.off:])
		rd.off += 16
		t.Name = rd.string("topic.name")
		t.Partitions = rd.int32("topic.partitions", MaxTasks)
		if racks := rd.count("topic.partition_racks", MaxTasks, 1); racks > 0 {
			if rd.err == nil && racks != int(t.Partitions) {
				rd.fail("topic.partition_racks", fmt.Errorf("topic %q: %d rack sets for %d partitions", t.Name, racks, t.Partitions))
				return
			}
			t.PartitionRacks = make([][]int32, racks)
			for p := 0; p < racks && rd.err == nil; p++ {
				t.PartitionRacks[p] = rd.taskset("topic.partition_racks")
				if rd.err == nil && !below(t.PartitionRacks[p], int32(len(r.Racks))) {
					rd.fail("topic.partition_racks", fmt.Errorf("topic %q: rack index out of range (%d racks)", t.Name, len(r.Racks)))
				}
			}
		}
		total += int64(t.Partitions)
		switch {
		case rd.err != nil:
		case i > 0 && bytes.Compare(t.ID[:], r.Topics[i-1].ID[:]) <= 0:
			rd.fail("topics", fmt.Errorf("id %x not strictly after %x", t.ID, r.Topics[i-1].ID))
		case total > MaxTasks:
			rd.fail("topics", fmt.Errorf("%d partitions exceed limit %d", total, MaxTasks))
		}
	}
}

// checkPartitionRequest checks the cross-member rules of a decoded request.
func checkPartitionRequest(r *PartitionAssignRequest) error {
	ids := make([]string, len(r.Members))
	for i := range r.Members {
		ids[i] = r.Members[i].ID
	}
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return &DecodeError{Field: "members", Err: fmt.Errorf("member id %q appears twice", ids[i])}
		}
	}
	if !r.Heterogeneous {
		for i := 1; i < len(r.Members); i++ {
			if !slices.Equal(r.Members[i].Subscribed, r.Members[0].Subscribed) {
				return &DecodeError{Field: "subscription_type", Err: fmt.Errorf("homogeneous, but members %q and %q subscribe to different topics", r.Members[0].ID, r.Members[i].ID)}
			}
		}
	}
	if !slices.ContainsFunc(r.Members, func(m ConsumerMember) bool { return len(m.Assigned) > 0 }) {
		return nil // nothing owned: skip the partition-sized table
	}
	owners := newPartitionOwners(r.Topics)
	for i := range r.Members {
		for _, tp := range r.Members[i].Assigned {
			for _, p := range tp.Partitions {
				if prev := owners.claim(tp.Topic, p, int32(i)); prev >= 0 {
					return &DecodeError{Field: "member.assigned", Err: fmt.Errorf("partition %d of topic %q is assigned to both %q and %q",
						p, r.Topics[tp.Topic].Name, r.Members[prev].ID, r.Members[i].ID)}
				}
			}
		}
	}
	return nil
}

// partitionOwners maps every partition of a topic table to a member index.
type partitionOwners struct {
	base  []int64
	owner []int32 // member index + 1; 0 = none
}

func newPartitionOwners(topics []Topic) partitionOwners {
	base := make([]int64, len(topics)+1)
	for i, t := range topics {
		base[i+1] = base[i] + int64(t.Partitions)
	}
	return partitionOwners{base: base, owner: make([]int32, base[len(topics)])}
}

// claim records member as the owner of (topic, p) and returns the previous
// owner, or -1.
func (o partitionOwners) claim(topic, p, member int32) int32 {
	k := o.base[topic] + int64(p)
	prev := o.owner[k] - 1
	if prev < 0 {
		o.owner[k] = member + 1
	}
	return prev
}

// AppendPartitionAssignResponse appends the encoding of r (SPEC.md 5.6).
func AppendPartitionAssignResponse(dst []byte, r *PartitionAssignResponse) ([]byte, error) {
	w := writer{b: dst}
	w.u8(MsgPartitionAssignResponse)
	w.count(len(r.Members))
	for _, tps := range r.Members {
		appendTopicPartitions(&w, "members", tps)
		w.noTags()
	}
	w.noTags()
	return w.b, w.err
}

// DecodePartitionAssignResponse decodes a PartitionAssignResponse for a
// request with numTopics topics. It checks the encoding only;
// ValidatePartitionAssignment checks the result against its request.
func DecodePartitionAssignResponse(b []byte, numTopics int, r *PartitionAssignResponse) error {
	rd := reader{b: b}
	*r = PartitionAssignResponse{}
	rd.kind(MsgPartitionAssignResponse, "kind")
	n := rd.count("members", MaxMembers, 2)
	if n > 0 {
		r.Members = make([][]TopicPartitions, n)
	}
	// Without the request, partition counts are unknown: accept any below
	// the limit and let ValidatePartitionAssignment check them.
	topics := make([]Topic, numTopics)
	for i := range topics {
		topics[i].Partitions = MaxTasks
	}
	for i := 0; i < n && rd.err == nil; i++ {
		r.Members[i] = decodeTopicPartitions(&rd, "members", topics)
		rd.tags("member.tags")
	}
	rd.tags("tags")
	return rd.end("partition assign response")
}

// ValidatePartitionAssignment checks resp against req (SPEC.md 6.1): one
// entry per member, partitions of known topics only, a member only gets
// partitions of topics it subscribes to, and no partition has two owners.
func ValidatePartitionAssignment(req *PartitionAssignRequest, resp *PartitionAssignResponse) error {
	if len(resp.Members) != len(req.Members) {
		return invalid("%d member entries for %d members", len(resp.Members), len(req.Members))
	}
	owners := newPartitionOwners(req.Topics)
	for i, tps := range resp.Members {
		m := &req.Members[i]
		for j, tp := range tps {
			if tp.Topic < 0 || int(tp.Topic) >= len(req.Topics) || (j > 0 && tp.Topic <= tps[j-1].Topic) {
				return invalid("member %q: topic index %d out of range or order", m.ID, tp.Topic)
			}
			t := &req.Topics[tp.Topic]
			if _, ok := slices.BinarySearch(m.Subscribed, tp.Topic); !ok {
				return invalid("member %q gets partitions of topic %q it does not subscribe to", m.ID, t.Name)
			}
			if len(tp.Partitions) == 0 || !below(tp.Partitions, t.Partitions) || !slices.IsSorted(tp.Partitions) || tp.Partitions[0] < 0 {
				return invalid("member %q: partitions of topic %q empty, out of range or unordered", m.ID, t.Name)
			}
			for _, p := range tp.Partitions {
				if prev := owners.claim(tp.Topic, p, int32(i)); prev >= 0 {
					return invalid("partition %d of topic %q is assigned to both %q and %q", p, t.Name, req.Members[prev].ID, m.ID)
				}
			}
		}
	}
	return nil
}
