package gateway

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group coordinator validates offset requests itself (members, epochs,
// generations) and then hands the allowed ones to the helpers below, which
// store offsets in the data plane's own offsets log as admin requests: no
// member id, generation -1, so the data plane never needs to know the
// group's members. Each helper takes the client's request at the client's
// version and returns the response at that same version. Version skew is
// handled here: v10 of OffsetCommit/OffsetFetch names topics by id; the
// upstream request carries both names and ids, so whichever version the
// data plane negotiates is correct, and the answer is mapped back.

// CommitOffsets stores an allowed OffsetCommit in the data plane.
func (d *DataPlane) CommitOffsets(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	cl, done := d.offsets.take()
	defer done()
	return d.commitOffsets(ctx, cl, req)
}

// commitOffsets stores req over cl (coordhost's admin client, or a
// principal's: principals.go).
func (d *DataPlane) commitOffsets(ctx context.Context, cl *kgo.Client, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	names, err := d.namesFor(ctx, req.Version >= 10, len(req.Topics), func(i int) [16]byte { return req.Topics[i].TopicID })
	if err != nil {
		return nil, err
	}
	var byName []string
	for _, t := range req.Topics {
		byName = append(byName, t.Topic)
	}
	if err := d.ensureIDs(ctx, byName); err != nil {
		return nil, err
	}
	out := kmsg.NewPtrOffsetCommitResponse()
	out.SetVersion(req.Version)
	up := kmsg.NewPtrOffsetCommitRequest()
	up.Group, up.Generation, up.MemberID = req.Group, -1, ""
	up.RetentionTimeMillis = req.RetentionTimeMillis
	for _, t := range req.Topics {
		name, code := d.upstreamName(req.Version >= 10, t.Topic, t.TopicID, names)
		if code != 0 {
			out.Topics = append(out.Topics, commitTopicError(t, code))
			continue
		}
		t.Topic, t.TopicID = name, d.topicIDOr(name, t.TopicID)
		up.Topics = append(up.Topics, t)
	}
	if len(up.Topics) > 0 {
		resp, err := up.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("data-plane offset commit for group %q: %w", req.Group, err)
		}
		out.ThrottleMillis = resp.ThrottleMillis
		for _, t := range resp.Topics {
			t.Topic = d.nameOr(t.Topic, names, t.TopicID)
			t.TopicID = d.topicIDOr(t.Topic, t.TopicID)
			out.Topics = append(out.Topics, t)
		}
	}
	return out, nil
}

func commitTopicError(t kmsg.OffsetCommitRequestTopic, code int16) kmsg.OffsetCommitResponseTopic {
	rt := kmsg.NewOffsetCommitResponseTopic()
	rt.Topic, rt.TopicID = t.Topic, t.TopicID
	for _, p := range t.Partitions {
		rp := kmsg.NewOffsetCommitResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p.Partition, code
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// TxnCommitOffsets stores an allowed TxnOffsetCommit in the data plane,
// inside the producer's transaction, so exactly-once commits work. v6
// names topics by id and is translated like OffsetCommit v10.
func (d *DataPlane) TxnCommitOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	cl, done := d.offsets.take()
	defer done()
	return d.txnCommitOffsets(ctx, cl, req)
}

func (d *DataPlane) txnCommitOffsets(ctx context.Context, cl *kgo.Client, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	names, err := d.namesFor(ctx, req.Version >= 6, len(req.Topics), func(i int) [16]byte { return req.Topics[i].TopicID })
	if err != nil {
		return nil, err
	}
	var byName []string
	for _, t := range req.Topics {
		byName = append(byName, t.Topic)
	}
	if err := d.ensureIDs(ctx, byName); err != nil {
		return nil, err
	}
	out := kmsg.NewPtrTxnOffsetCommitResponse()
	out.SetVersion(req.Version)
	up := *req
	up.Generation, up.MemberID, up.InstanceID, up.Topics = -1, "", nil, nil
	for _, t := range req.Topics {
		name, code := d.upstreamName(req.Version >= 6, t.Topic, t.TopicID, names)
		if code != 0 {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
			continue
		}
		t.Topic, t.TopicID = name, d.topicIDOr(name, t.TopicID)
		up.Topics = append(up.Topics, t)
	}
	if len(up.Topics) > 0 {
		resp, err := up.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("data-plane txn offset commit for group %q: %w", req.Group, err)
		}
		out.ThrottleMillis = resp.ThrottleMillis
		for _, t := range resp.Topics {
			t.Topic = d.nameOr(t.Topic, names, t.TopicID)
			t.TopicID = d.topicIDOr(t.Topic, t.TopicID)
			out.Topics = append(out.Topics, t)
		}
		if d.txns != nil {
			d.txns.committed(req, out)
		}
	}
	return out, nil
}

// DeleteOffsets deletes offsets of an allowed OffsetDelete in the data plane.
func (d *DataPlane) DeleteOffsets(ctx context.Context, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	return deleteOffsets(ctx, d.admin, req)
}

func deleteOffsets(ctx context.Context, cl *kgo.Client, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	up := *req
	resp, err := up.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("data-plane offset delete for group %q: %w", req.Group, err)
	}
	resp.SetVersion(req.Version)
	return resp, nil
}

// FetchOffsets reads committed offsets for an allowed OffsetFetch (single
// group before v8, batched groups from v8, topic ids from v10).
func (d *DataPlane) FetchOffsets(ctx context.Context, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	groups := req.Groups
	if req.Version < 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = req.Group
		if req.Topics != nil {
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		}
		for _, t := range req.Topics {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t.Topic, t.Partitions
			g.Topics = append(g.Topics, gt)
		}
		groups = []kmsg.OffsetFetchRequestGroup{g}
	}
	var ids [][16]byte
	var byName []string
	for _, g := range groups {
		for _, t := range g.Topics {
			ids = append(ids, t.TopicID)
			byName = append(byName, t.Topic)
		}
	}
	if err := d.ensureIDs(ctx, byName); err != nil {
		return nil, err
	}
	names, err := d.namesFor(ctx, req.Version >= 10, len(ids), func(i int) [16]byte { return ids[i] })
	if err != nil {
		return nil, err
	}
	up := kmsg.NewPtrOffsetFetchRequest()
	// Embedded: the gateway answers stability per partition (txnstable.go).
	perPartition := req.RequireStable && d.txns != nil
	up.RequireStable = req.RequireStable && !perPartition
	unknown := map[string][]kmsg.OffsetFetchResponseGroupTopic{} // by group
	for _, g := range groups {
		ug := kmsg.NewOffsetFetchRequestGroup()
		ug.Group = g.Group
		if g.Topics != nil {
			ug.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		}
		for _, t := range g.Topics {
			if req.Version >= 10 {
				t.Topic = names[t.TopicID]
			} else if !d.knownTopic(t.Topic) {
				unknown[g.Group] = append(unknown[g.Group], noOffsets(t))
				continue
			}
			t.TopicID = d.topicIDOr(t.Topic, t.TopicID)
			ug.Topics = append(ug.Topics, t)
		}
		up.Groups = append(up.Groups, ug)
	}
	cl, done := d.offsets.take()
	resp, err := up.RequestWith(ctx, cl)
	done()
	if err != nil {
		return nil, fmt.Errorf("data-plane offset fetch: %w", err)
	}
	for i := range resp.Groups {
		if g := &resp.Groups[i]; g.ErrorCode == 0 {
			g.Topics = append(g.Topics, unknown[g.Group]...)
		}
	}
	return d.fetchResponseAt(req, resp, names, perPartition), nil
}

// noOffsets answers a by-name fetch of a topic the data plane's metadata
// does not have as Kafka 4.4 does (its group coordinator looks offsets up
// by name and has none): each partition without an offset and without an
// error. Asked upstream at a topic-id version it would carry a zero id and
// come back UNKNOWN_TOPIC_ID without its name.
func noOffsets(t kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroupTopic {
	rt := kmsg.NewOffsetFetchResponseGroupTopic()
	rt.Topic = t.Topic
	for _, p := range t.Partitions {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, -1, -1, kmsg.StringPtr("")
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// fetchResponseAt shapes the batched upstream answer as the client's version expects.
// With markUnstable, partitions with a pending transactional offset answer
// UNSTABLE_OFFSET_COMMIT.
func (d *DataPlane) fetchResponseAt(req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse, names map[[16]byte]string, markUnstable bool) *kmsg.OffsetFetchResponse {
	out := kmsg.NewPtrOffsetFetchResponse()
	out.SetVersion(req.Version)
	out.ThrottleMillis = resp.ThrottleMillis
	for _, g := range resp.Groups {
		for i := range g.Topics {
			t := &g.Topics[i]
			t.Topic = d.nameOr(t.Topic, names, t.TopicID)
			t.TopicID = d.topicIDOr(t.Topic, t.TopicID)
		}
		if markUnstable {
			d.txns.markUnstable(&g)
		}
		if req.Version >= 8 {
			out.Groups = append(out.Groups, g)
			continue
		}
		out.ErrorCode = g.ErrorCode
		for _, t := range g.Topics {
			ot := kmsg.NewOffsetFetchResponseTopic()
			ot.Topic = t.Topic
			for _, p := range t.Partitions {
				op := kmsg.NewOffsetFetchResponseTopicPartition()
				op.Partition, op.Offset, op.LeaderEpoch, op.Metadata, op.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				ot.Partitions = append(ot.Partitions, op)
			}
			out.Topics = append(out.Topics, ot)
		}
	}
	return out
}

// upstreamName is the name a committed topic is forwarded under, or the
// error Kafka 4.4 answers for it instead (KafkaApis, before the group
// coordinator). Named by id (OffsetCommit v10, TxnOffsetCommit v6), an id
// the data plane does not know is UNKNOWN_TOPIC_ID. Named by name, a topic
// the data plane's metadata does not have (ensureIDs has just asked it) is
// UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers a by-name commit of a topic
// its metadata has no id for. Such a topic is not forwarded: the upstream
// request, negotiated at a topic-id version, would carry a zero id and
// come back UNKNOWN_TOPIC_ID without the topic's name.
func (d *DataPlane) upstreamName(byID bool, name string, id [16]byte, names map[[16]byte]string) (string, int16) {
	if byID {
		if name = names[id]; name == "" {
			return "", kerr.UnknownTopicID.Code
		}
		return name, 0
	}
	if !d.knownTopic(name) {
		return "", kerr.UnknownTopicOrPartition.Code
	}
	return name, 0
}

// namesFor resolves the topic ids of a v10 request (none otherwise).
func (d *DataPlane) namesFor(ctx context.Context, byID bool, n int, id func(int) [16]byte) (map[[16]byte]string, error) {
	if !byID {
		return nil, nil
	}
	ids := make([][16]byte, n)
	for i := range ids {
		ids[i] = id(i)
	}
	return d.topicNames(ctx, ids)
}

// nameOr returns name, or the name of id when name is empty.
func (d *DataPlane) nameOr(name string, names map[[16]byte]string, id [16]byte) string {
	if name != "" {
		return name
	}
	if n, ok := names[id]; ok {
		return n
	}
	d.topicsMu.Lock()
	defer d.topicsMu.Unlock()
	return d.byID[id]
}

// topicIDOr returns the id of name when known, else id.
func (d *DataPlane) topicIDOr(name string, id [16]byte) [16]byte {
	if known := d.topicID(name); known != [16]byte{} {
		return known
	}
	return id
}
