// Package offsets serializes a group's offset requests in front of the
// data plane that stores the offsets, and settles a forward whose outcome
// is unknown by reading the offsets back.
//
// A group's offset requests are serialized per group by its gate: core's
// decision on a request and the request's forward to the data plane are
// one step of the group's queue, and the next step of that group starts
// only when the previous forward is answered (or, when its outcome is
// unknown, when a read of the data plane has been answered). So a member
// fenced while its allowed commit is on its way cannot have that commit
// land after anything the group does next: the new owner's commit, a
// fetch, an offset delete or the group's deletion all wait for the gate.
// The gate is taken by the request's goroutine, never by a partition's
// event loop: the partition keeps serving every group while a forward is
// in flight, and other groups never wait on it.
package offsets

import (
	"context"
	"sort"
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

// Gates holds the gate of every group with an offset step running or
// waiting. Its zero value is ready to use.
type Gates struct {
	mu    sync.Mutex
	gates map[string]*gate
}

// gate is one group's queue: turn holds a token while a step runs; steps
// waiting to send theirs are let in in arrival order.
type gate struct {
	turn chan struct{}
	refs int // the running step and the waiting ones
}

func (s *Gates) ref(group string) *gate {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gates == nil {
		s.gates = map[string]*gate{}
	}
	g := s.gates[group]
	if g == nil {
		g = &gate{turn: make(chan struct{}, 1)}
		s.gates[group] = g
	}
	g.refs++
	return g
}

func (s *Gates) unref(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.gates[group]; g != nil {
		if g.refs--; g.refs == 0 {
			delete(s.gates, group)
		}
	}
}

// Queued is how many steps of group run or wait.
func (s *Gates) Queued(group string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.gates[group]; g != nil {
		return g.refs
	}
	return 0
}

// Acquire takes the gates of groups, in id order (two requests naming the
// same groups never hold one each and wait for the other), and returns
// the function that releases them.
func (s *Gates) Acquire(ctx context.Context, groups []string) (func(), error) {
	ids := append([]string(nil), groups...)
	sort.Strings(ids)
	var held []*gate
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

// Run runs step as one step of the offset queues of groups. The wait for
// the gates is bounded by ctx; step then runs detached from ctx, so a
// client that gives up never cuts a forward short, and the gates are
// released only when step returns.
func (s *Gates) Run(ctx context.Context, groups []string, step func() (kmsg.Response, error)) (kmsg.Response, error) {
	release, err := s.Acquire(ctx, groups)
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
