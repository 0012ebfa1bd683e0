package host

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// A group's offset requests are serialized per group by its offset gate:
// core's decision on a request and the request's forward to the data
// plane are one step of the group's queue, and the next step of that
// group starts only when the previous forward is answered (or, when its
// outcome is unknown, when a read of the data plane has been answered).
// So a member fenced while its allowed commit is on its way cannot have
// that commit land after anything the group does next: the new owner's
// commit, a fetch, an offset delete or the group's deletion all wait for
// the gate. The gate is taken by the request's goroutine, never by a
// partition's event loop: the partition keeps serving every group while a
// forward is in flight, and other groups never wait on it.

// offsetPlane is where offsets are stored: the data plane's offset
// requests (gateway.DataPlane).
type offsetPlane interface {
	CommitOffsets(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error)
	TxnCommitOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error)
	FetchOffsets(ctx context.Context, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error)
	DeleteOffsets(ctx context.Context, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error)
}

// offsetGates holds the gate of every group with an offset step running
// or waiting, and the offset plane (nil: the loop's data plane).
type offsetGates struct {
	plane offsetPlane
	mu    sync.Mutex
	gates map[string]*offsetGate
}

// offsetGate is one group's queue: turn holds a token while a step runs;
// steps waiting to send theirs are let in in arrival order.
type offsetGate struct {
	turn chan struct{}
	refs int // the running step and the waiting ones
}

// Bounds of the backoff between reads that settle a forward of unknown
// outcome.
const (
	readBackMin = 50 * time.Millisecond
	readBackMax = 2 * time.Second
)

// offsetStore is the plane offsets are forwarded to (nil: none).
func (l *Loop) offsetStore() offsetPlane {
	if l.offs.plane != nil {
		return l.offs.plane
	}
	if l.d.DataPlane != nil {
		return l.d.DataPlane
	}
	return nil
}

func (s *offsetGates) ref(group string) *offsetGate {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gates == nil {
		s.gates = map[string]*offsetGate{}
	}
	g := s.gates[group]
	if g == nil {
		g = &offsetGate{turn: make(chan struct{}, 1)}
		s.gates[group] = g
	}
	g.refs++
	return g
}

func (s *offsetGates) unref(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.gates[group]; g != nil {
		if g.refs--; g.refs == 0 {
			delete(s.gates, group)
		}
	}
}

// queued is how many steps of group run or wait.
func (s *offsetGates) queued(group string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.gates[group]; g != nil {
		return g.refs
	}
	return 0
}

// acquire takes the gates of groups, in id order (two requests naming the
// same groups never hold one each and wait for the other), and returns
// the function that releases them.
func (s *offsetGates) acquire(ctx context.Context, groups []string) (func(), error) {
	ids := append([]string(nil), groups...)
	sort.Strings(ids)
	var held []*offsetGate
	var names []string
	release := func() {
		for i, g := range held {
			<-g.turn
			s.unref(names[i])
		}
	}
	for i, id := range ids {
		if i > 0 && id == ids[i-1] {
			continue
		}
		g := s.ref(id)
		select {
		case g.turn <- struct{}{}:
			held, names = append(held, g), append(names, id)
		case <-ctx.Done():
			s.unref(id)
			release()
			return nil, ctx.Err()
		}
	}
	return release, nil
}

// gated runs step as one step of the offset queues of groups. The wait
// for the gates is bounded by ctx; step then runs detached from ctx, so a
// client that gives up never cuts a forward short, and the gates are
// released only when step returns.
func (l *Loop) gated(ctx context.Context, groups []string, step func() (kmsg.Response, error)) (kmsg.Response, error) {
	release, err := l.offs.acquire(ctx, groups)
	if err != nil {
		return nil, err
	}
	done := make(chan reply, 1)
	go func() {
		defer release()
		msg, err := step()
		done <- reply{msg: msg, err: err}
	}()
	select {
	case r := <-done:
		return r.msg, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readBack reads req's offsets from the data plane until a read is
// answered (or the loop stops: nil). It settles a forward whose outcome is
// unknown: the data plane answers a group's offset requests in order, and
// the forward's connection is gone, so the answer shows what the forward
// wrote, if anything, and nothing of it lands later.
func (l *Loop) readBack(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	wait := readBackMin
	for {
		resp, err := l.offsetStore().FetchOffsets(l.ctx, req)
		if err == nil && readAnswered(resp) {
			return resp
		}
		l.log.Warn("reading back offsets after a forward of unknown outcome failed; the group's offset requests wait",
			"group", req.Groups[0].Group, "err", err)
		select {
		case <-l.ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, readBackMax)
	}
}

// readAnswered tells whether a read of one group's offsets was answered
// (no offsets at all counts: GROUP_ID_NOT_FOUND).
func readAnswered(resp *kmsg.OffsetFetchResponse) bool {
	if len(resp.Groups) != 1 {
		return false
	}
	code := resp.Groups[0].ErrorCode
	return code == 0 || code == kerr.GroupIDNotFound.Code
}

// readBackRequest is the read of group's offsets for parts (partitions by
// topic name, or by topic id when byID).
func readBackRequest(group string, byID bool, parts []topicParts) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	if byID {
		req.Version = 10
	}
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	for _, tp := range parts {
		t := kmsg.NewOffsetFetchRequestGroupTopic()
		t.Topic, t.TopicID, t.Partitions = tp.topic, tp.id, tp.partitions
		g.Topics = append(g.Topics, t)
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g}
	return req
}

// topicParts names some partitions of one topic.
type topicParts struct {
	topic      string
	id         [16]byte
	partitions []int32
}

func commitParts(req *kmsg.OffsetCommitRequest) []topicParts {
	var out []topicParts
	for _, t := range req.Topics {
		tp := topicParts{topic: t.Topic, id: t.TopicID}
		for _, p := range t.Partitions {
			tp.partitions = append(tp.partitions, p.Partition)
		}
		out = append(out, tp)
	}
	return out
}

// settleCommit answers an OffsetCommit whose forward has an unknown
// outcome, once a read shows it: success when every committed offset is
// stored, COORDINATOR_NOT_AVAILABLE (retriable) when not, or when the loop
// stopped before a read was answered.
func (l *Loop) settleCommit(req *kmsg.OffsetCommitRequest) kmsg.Response {
	read := l.readBack(readBackRequest(req.Group, req.Version >= 10, commitParts(req)))
	if read == nil || !commitStored(req, read.Groups[0].Topics) {
		return wire.ErrorResponse(req, kerr.CoordinatorNotAvailable.Code)
	}
	return wire.ErrorResponse(req, 0)
}

// commitStored tells whether every offset of req is in read.
func commitStored(req *kmsg.OffsetCommitRequest, read []kmsg.OffsetFetchResponseGroupTopic) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if !hasOffset(read, t.Topic, t.TopicID, p.Partition, p.Offset) {
				return false
			}
		}
	}
	return true
}

func hasOffset(read []kmsg.OffsetFetchResponseGroupTopic, topic string, id [16]byte, partition int32, offset int64) bool {
	for _, rt := range read {
		if (topic == "" || rt.Topic != topic) && (id == [16]byte{} || rt.TopicID != id) {
			continue
		}
		for _, rp := range rt.Partitions {
			if rp.Partition == partition {
				return rp.ErrorCode == 0 && rp.Offset == offset
			}
		}
	}
	return false
}
