package loop

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/identity"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/wire"
)

// A group's offset requests are serialized per group by its offset gate
// (host/offsets): core's decision on a request and the request's forward
// to the data plane are one step of the group's queue. This file binds
// the gates to the loop: its data plane, its context and its log.

// offsetGates are the loop's per-group offset queues, and the offset
// plane (nil: the loop's data plane).
type offsetGates struct {
	offsets.Gates
	plane offsets.Plane
}

// offsetStore is the plane offsets are forwarded to (nil: none).
func (l *Loop) offsetStore() offsets.Plane {
	if l.offs.plane != nil {
		return l.offs.plane
	}
	if l.d.DataPlane != nil {
		return l.d.DataPlane
	}
	return nil
}

// gated runs step as one step of the offset queues of claims' groups
// (offsets.Gates.Run).
func (l *Loop) gated(ctx context.Context, claims []offsets.Claim, step func() (kmsg.Response, error)) (kmsg.Response, error) {
	return l.offs.Run(ctx, claims, step)
}

// topicNamer is an offset plane that knows, without asking, the name of
// a topic id (gateway.DataPlane: its last metadata).
type topicNamer interface {
	KnownTopicName(id [16]byte) string
}

// claimOf is what a request of group naming n topics touches in the
// group's offset queue: each named partition, its topic by name (as the
// offsets log keys it), or the whole group when a topic named by id
// (byID) has no name the plane knows without asking. topic(i) is topic
// i's name, id and partitions.
func (l *Loop) claimOf(group string, byID bool, n int, topic func(i int) (name string, id [16]byte, parts []int32)) offsets.Claim {
	whole := offsets.Claim{Group: group}
	namer, _ := l.offsetStore().(topicNamer)
	c := offsets.Claim{Group: group, Parts: []offsets.Part{}}
	for i := range n {
		name, id, parts := topic(i)
		if byID {
			if namer == nil || id == [16]byte{} {
				return whole
			}
			if name = namer.KnownTopicName(id); name == "" {
				return whole
			}
		}
		for _, p := range parts {
			c.Parts = append(c.Parts, offsets.Part{Topic: name, Partition: p})
		}
	}
	return c
}

// commitClaim is what an OffsetCommit touches: its partitions.
func (l *Loop) commitClaim(body *kmsg.OffsetCommitRequest) []offsets.Claim {
	return []offsets.Claim{l.claimOf(body.Group, body.Version >= 10, len(body.Topics), func(i int) (string, [16]byte, []int32) {
		t := body.Topics[i]
		ps := make([]int32, len(t.Partitions))
		for j, p := range t.Partitions {
			ps[j] = p.Partition
		}
		return t.Topic, t.TopicID, ps
	})}
}

// fetchClaims is what an OffsetFetch touches in each group: the
// partitions it names, or the whole group when it names no topics (a
// fetch of all the group's offsets).
func (l *Loop) fetchClaims(body *kmsg.OffsetFetchRequest) []offsets.Claim {
	if body.Version < 8 {
		if body.Topics == nil {
			return offsets.Whole(body.Group)
		}
		return []offsets.Claim{l.claimOf(body.Group, false, len(body.Topics), func(i int) (string, [16]byte, []int32) {
			return body.Topics[i].Topic, [16]byte{}, body.Topics[i].Partitions
		})}
	}
	out := make([]offsets.Claim, len(body.Groups))
	for gi, g := range body.Groups {
		if g.Topics == nil {
			out[gi] = offsets.Claim{Group: g.Group}
			continue
		}
		out[gi] = l.claimOf(g.Group, body.Version >= 10, len(g.Topics), func(i int) (string, [16]byte, []int32) {
			return g.Topics[i].Topic, g.Topics[i].TopicID, g.Topics[i].Partitions
		})
	}
	return out
}

// readBack reads req's offsets from the data plane until a read is
// answered, or the loop stops (nil): offsets.ReadBack.
func (l *Loop) readBack(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	return offsets.ReadBack(l.ctx, l.offsetStore(), l.log, req)
}

// readBackGroup reads back all of group's offsets (readBack): it settles
// a forward of unknown outcome whose result is not read from the offsets.
func (l *Loop) readBackGroup(group string) {
	l.readBack(offsets.ReadBackRequest(group, false, nil))
}

// settleCommit answers an OffsetCommit whose forward has an unknown
// outcome: offsets.SettleCommit, until the loop stops.
func (l *Loop) settleCommit(req *kmsg.OffsetCommitRequest) kmsg.Response {
	return offsets.SettleCommit(l.ctx, l.offsetStore(), l.log, req)
}

// writeOffsets runs write with req's offset writer: identity.Write over
// Deps.OffsetsAs and the offset store.
func writeOffsets[R any](l *Loop, req *wire.Request, body kmsg.Request, group string, write func(offsets.Writer) (R, error)) (resp R, unsent kmsg.Response, err error) {
	return identity.Write(l.log, l.d.OffsetsAs, l.offsetStore(), req, body, group, write)
}
