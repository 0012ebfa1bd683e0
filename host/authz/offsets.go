package authz

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// Refused topics and groups are answered with wire.ErrorResponse of a
// request holding only them, so every partition or group the client named
// gets its error, in the response's own shape.

func (c *check) offsetCommit(b *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	if ok, err := c.allowed(kmsg.ACLResourceTypeGroup, b.Group, opRead); err != nil || !ok {
		return denied(b, codeGroup), err
	}
	name := func(t kmsg.OffsetCommitRequestTopic) string { return topicName(t.Topic, t.TopicID, b.Version >= 10) }
	set := func(ts []kmsg.OffsetCommitRequestTopic) kmsg.Request { s := *b; s.Topics = ts; return &s }
	return byItem(c, b.Topics, set, kmsg.ACLResourceTypeTopic, name, opRead, codeTopic, func(r, refused *kmsg.OffsetCommitResponse) error {
		r.Topics = append(r.Topics, refused.Topics...)
		return nil
	})
}

func (c *check) txnOffsetCommit(b *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	if ok, err := c.allowed(kmsg.ACLResourceTypeTransactionalId, b.TransactionalID, opWrite); err != nil || !ok {
		return denied(b, codeTxn), err
	}
	if ok, err := c.allowed(kmsg.ACLResourceTypeGroup, b.Group, opRead); err != nil || !ok {
		return denied(b, codeGroup), err
	}
	name := func(t kmsg.TxnOffsetCommitRequestTopic) string { return topicName(t.Topic, t.TopicID, b.Version >= 6) }
	set := func(ts []kmsg.TxnOffsetCommitRequestTopic) kmsg.Request { s := *b; s.Topics = ts; return &s }
	return byItem(c, b.Topics, set, kmsg.ACLResourceTypeTopic, name, opRead, codeTopic, func(r, refused *kmsg.TxnOffsetCommitResponse) error {
		r.Topics = append(r.Topics, refused.Topics...)
		return nil
	})
}

func (c *check) offsetDelete(b *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	if ok, err := c.allowed(kmsg.ACLResourceTypeGroup, b.Group, opDelete); err != nil || !ok {
		return denied(b, codeGroup), err
	}
	name := func(t kmsg.OffsetDeleteRequestTopic) string { return t.Topic }
	set := func(ts []kmsg.OffsetDeleteRequestTopic) kmsg.Request { s := *b; s.Topics = ts; return &s }
	return byItem(c, b.Topics, set, kmsg.ACLResourceTypeTopic, name, opRead, codeTopic, func(r, refused *kmsg.OffsetDeleteResponse) error {
		if r.ErrorCode == 0 {
			r.Topics = append(r.Topics, refused.Topics...)
		}
		return nil
	})
}

// offsetFetch: a group the principal may not DESCRIBE is refused whole; a
// named topic it may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED unless
// the coordinator answers the group with an error; when all topics are
// fetched, those it may not DESCRIBE are left out. Kafka 4.4 checks no
// group-type-specific topics here: a streams group's offsets are filtered
// as any group's.
func (c *check) offsetFetch(b *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	if b.Version < 8 {
		return c.offsetFetchOne(b)
	}
	gok, err := c.allowedSet(kmsg.ACLResourceTypeGroup, names(b.Groups, func(g kmsg.OffsetFetchRequestGroup) string { return g.Group }), opDescribe)
	if err != nil {
		return nil, err
	}
	byID := b.Version >= 10
	tname := func(t kmsg.OffsetFetchRequestGroupTopic) string { return topicName(t.Topic, t.TopicID, byID) }
	var tnames []string
	for _, g := range b.Groups {
		tnames = append(tnames, names(g.Topics, tname)...)
	}
	tok, err := c.allowedSet(kmsg.ACLResourceTypeTopic, tnames, opDescribe)
	if err != nil {
		return nil, err
	}
	sub := *b
	sub.Groups = nil
	refusedTopics := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
	all := map[string]bool{}
	var refusedGroups []kmsg.OffsetFetchRequestGroup
	for _, g := range b.Groups {
		if !gok[g.Group] {
			refusedGroups = append(refusedGroups, g)
			continue
		}
		all[g.Group] = g.Topics == nil
		if g.Topics != nil {
			g.Topics, refusedTopics[g.Group] = keep(g.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) bool { return tok[tname(t)] })
		}
		sub.Groups = append(sub.Groups, g)
	}
	out := kmsg.NewPtrOffsetFetchResponse()
	out.SetVersion(b.Version)
	if len(sub.Groups) > 0 {
		resp, err := c.inner(&sub)
		if err != nil {
			return nil, err
		}
		r, isFetch := resp.(*kmsg.OffsetFetchResponse)
		if !isFetch {
			return resp, nil
		}
		out = r
	}
	for i := range out.Groups {
		g := &out.Groups[i]
		if all[g.Group] {
			if g.Topics, err = describable(c, g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) string { return topicName(t.Topic, t.TopicID, byID) }); err != nil {
				return nil, err
			}
			continue
		}
		if g.ErrorCode != 0 { // the group's error is its whole answer, as Kafka's
			continue
		}
		rsub := kmsg.NewPtrOffsetFetchRequest()
		rsub.SetVersion(b.Version)
		rsub.Groups = []kmsg.OffsetFetchRequestGroup{{Group: g.Group, Topics: refusedTopics[g.Group]}}
		g.Topics = append(g.Topics, fetchErrors(rsub, codeTopic).Groups[0].Topics...)
	}
	rsub := *b
	rsub.Groups = refusedGroups
	for _, g := range fetchErrors(&rsub, codeGroup).Groups {
		g.Topics = nil
		out.Groups = append(out.Groups, g)
	}
	return out, nil
}

func (c *check) offsetFetchOne(b *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	if ok, err := c.allowed(kmsg.ACLResourceTypeGroup, b.Group, opDescribe); err != nil || !ok {
		resp := fetchErrors(b, codeGroup)
		resp.Topics = nil
		return resp, err
	}
	name := func(t kmsg.OffsetFetchRequestTopic) string { return t.Topic }
	ok, err := c.allowedSet(kmsg.ACLResourceTypeTopic, names(b.Topics, name), opDescribe)
	if err != nil {
		return nil, err
	}
	sub := *b
	var refused []kmsg.OffsetFetchRequestTopic
	if b.Topics != nil {
		sub.Topics, refused = keep(b.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return ok[t.Topic] })
	}
	resp, err := c.inner(&sub)
	if err != nil {
		return nil, err
	}
	out, isFetch := resp.(*kmsg.OffsetFetchResponse)
	if !isFetch || out.ErrorCode != 0 {
		return resp, nil
	}
	if b.Topics == nil {
		out.Topics, err = describable(c, out.Topics, func(t kmsg.OffsetFetchResponseTopic) string { return t.Topic })
		return out, err
	}
	rsub := *b
	rsub.Topics = refused
	refusedResp := fetchErrors(&rsub, codeTopic)
	out.Topics = append(out.Topics, refusedResp.Topics...)
	return out, nil
}

// fetchErrors is the OffsetFetch answer of code for every group and
// partition of req, with offset -1 as Kafka answers a refused partition.
func fetchErrors(req *kmsg.OffsetFetchRequest, code int16) *kmsg.OffsetFetchResponse {
	resp := wire.ErrorResponse(req, code).(*kmsg.OffsetFetchResponse)
	resp.ErrorCode = 0
	if req.Version < 8 {
		resp.ErrorCode = code
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			resp.Topics[i].Partitions[j].Offset, resp.Topics[i].Partitions[j].LeaderEpoch = -1, -1
		}
	}
	for _, g := range resp.Groups {
		for i := range g.Topics {
			for j := range g.Topics[i].Partitions {
				g.Topics[i].Partitions[j].Offset, g.Topics[i].Partitions[j].LeaderEpoch = -1, -1
			}
		}
	}
	return resp
}

// describable keeps the topics the principal may DESCRIBE; as in Kafka,
// leaving one out is not logged as a denial.
func describable[T any](c *check, topics []T, name func(T) string) ([]T, error) {
	ok, err := c.decideSet(kmsg.ACLResourceTypeTopic, names(topics, name), opDescribe, false)
	if err != nil {
		return nil, err
	}
	kept, _ := keep(topics, func(t T) bool { return ok[name(t)] })
	return kept, nil
}

func names[T any](items []T, name func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return out
}
