// Package offsets serializes a group's offset requests in front of the
// data plane that stores the offsets, and settles a forward whose outcome
// is unknown by reading the offsets back.
//
// A group's offset requests are ordered per group and partition by its
// queue: core's decision on a request and the request's forward to the
// data plane are one step of the group's queue, and a step starts only
// when every earlier step of the group that touches one of its
// partitions has its forward answered (or, when its outcome is unknown,
// when a read of the data plane has been answered). So a member fenced
// while its allowed commit is on its way cannot have that commit land
// after anything the group does next with those partitions: the new
// owner's commit or fetch of them, an offset delete or the group's
// deletion all wait for it. Steps on disjoint partitions (each member
// committing its own) do not wait for each other, as Kafka's coordinator
// does not make one member's commit wait for another's. The queue is
// joined by the request's goroutine, never by a partition's event loop:
// the partition keeps serving every group while a forward is in flight,
// and other groups never wait on it.
package offsets

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Plane is where offsets are stored: the data plane's offset requests
// (gateway.DataPlane).
type Plane interface {
	Writer
	FetchOffsets(ctx context.Context, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error)
}

// Writer is the offset requests of a plane that write: the plane's own,
// or those of a connection logged in as the client's principal
// (gateway.PrincipalOffsets).
type Writer interface {
	CommitOffsets(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error)
	TxnCommitOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error)
	DeleteOffsets(ctx context.Context, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error)
}

// Claim is what one step of a group's offset queue touches: some of the
// group's partitions, or the whole group when Parts is nil. Two steps of
// a group are ordered when their claims overlap; steps on disjoint
// partitions (two members committing their own partitions) run at once.
type Claim struct {
	Group string
	Parts []Part // nil: every partition of the group
}

// Part is one partition in a claim. Topic is a key the caller keeps in
// one namespace per group (a topic id, say): two names for one topic
// would let two steps on it run at once.
type Part struct {
	Topic     string
	Partition int32
}

// Whole claims the whole of each group.
func Whole(groups ...string) []Claim {
	out := make([]Claim, len(groups))
	for i, g := range groups {
		out[i].Group = g
	}
	return out
}

// Gates holds the queue of every group with an offset step running or
// waiting. Its zero value is ready to use.
type Gates struct {
	mu     sync.Mutex
	queues map[string][]*entry // by group: steps running or waiting, in arrival order
}

// entry is one step's place in one group's queue.
type entry struct {
	parts map[Part]struct{} // nil: the whole group
	done  chan struct{}     // closed when the step returns or gives up
}

// overlaps tells whether two steps of a group touch a common partition.
func (e *entry) overlaps(o *entry) bool {
	if e.parts == nil || o.parts == nil {
		return true
	}
	small, large := e.parts, o.parts
	if len(small) > len(large) {
		small, large = large, small
	}
	for p := range small {
		if _, ok := large[p]; ok {
			return true
		}
	}
	return false
}

// Queued is how many steps of group run or wait.
func (s *Gates) Queued(group string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queues[group])
}

// enqueue places one entry per group of claims at the end of its queue
// (claims of one group merged) and returns the entries and the done
// channels of the earlier entries they overlap. Every group's queue is
// joined at once, under one lock, and a step waits only for steps that
// arrived before it: two requests naming the same groups never wait for
// each other.
func (s *Gates) enqueue(claims []Claim) (map[string]*entry, []chan struct{}) {
	mine := map[string]*entry{}
	for _, c := range claims {
		e := mine[c.Group]
		if e == nil {
			e = &entry{parts: map[Part]struct{}{}, done: make(chan struct{})}
			mine[c.Group] = e
		}
		if c.Parts == nil {
			e.parts = nil
		}
		if e.parts != nil {
			for _, p := range c.Parts {
				e.parts[p] = struct{}{}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queues == nil {
		s.queues = map[string][]*entry{}
	}
	var waits []chan struct{}
	for group, e := range mine {
		for _, earlier := range s.queues[group] {
			if e.overlaps(earlier) {
				waits = append(waits, earlier.done)
			}
		}
		s.queues[group] = append(s.queues[group], e)
	}
	return mine, waits
}

// leave takes entries out of their queues and lets the steps waiting for
// them go on.
func (s *Gates) leave(mine map[string]*entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for group, e := range mine {
		q := s.queues[group]
		for i, x := range q {
			if x == e {
				q = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(q) == 0 {
			delete(s.queues, group)
		} else {
			s.queues[group] = q
		}
		close(e.done)
	}
}

// Acquire queues a step claiming claims and waits until every earlier
// step of those groups that overlaps it has returned; it returns the
// function that ends the step. Giving up (ctx) leaves the queues at once.
func (s *Gates) Acquire(ctx context.Context, claims []Claim) (func(), error) {
	mine, waits := s.enqueue(claims)
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			s.leave(mine)
			return nil, ctx.Err()
		}
	}
	return func() { s.leave(mine) }, nil
}

// Run runs step as one step of the offset queues of claims' groups. The
// wait for the steps before it is bounded by ctx; step then runs detached
// from ctx, so a client that gives up never cuts a forward short, and
// the steps after it are let in only when step returns.
func (s *Gates) Run(ctx context.Context, claims []Claim, step func() (kmsg.Response, error)) (kmsg.Response, error) {
	release, err := s.Acquire(ctx, claims)
	if err != nil {
		return nil, err
	}
	type reply struct {
		msg kmsg.Response
		err error
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
