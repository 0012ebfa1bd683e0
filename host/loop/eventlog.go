package loop

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/coordhost/coordhost/core"
)

// groupEvents writes the INFO lines ("group event") of committed batches
// on a goroutine of its own, in commit order, each stamped with the time
// of its commit: a mass expiry's slice of 64 fenced members commits 128
// such lines, whose writes (one for each line, to the process's output)
// the partition's goroutine, and the groups queued behind it, waited for.
// At most groupEventBacklog batches wait; a commit that finds the
// backlog full waits for room, as it waited for its lines before.
type groupEvents struct {
	h      slog.Handler
	mu     sync.RWMutex // held shared by a send, alone by close
	closed bool
	ch     chan eventBatch
	done   chan struct{}
}

type eventBatch struct {
	at     time.Time
	events []core.Event // a committed batch's events, never written again
}

const groupEventBacklog = 256

func newGroupEvents(h slog.Handler) *groupEvents {
	g := &groupEvents{h: h, ch: make(chan eventBatch, groupEventBacklog), done: make(chan struct{})}
	go g.run()
	return g
}

func (g *groupEvents) run() {
	defer close(g.done)
	for b := range g.ch {
		writeGroupEvents(g.h, b)
	}
}

// add hands b's lines to the writer; false when there is none (closed,
// or a Loop built without one), and the caller writes them.
func (g *groupEvents) add(b eventBatch) bool {
	if g == nil {
		return false
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return false
	}
	g.ch <- b
	return true
}

// close writes the lines handed over and stops the writer; later batches
// are written by their callers.
func (g *groupEvents) close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		close(g.ch)
	}
	g.mu.Unlock()
	<-g.done
}

// historyEvent reports whether e goes to its group's history and the
// INFO log: group-level events, and members leaving or being fenced.
func historyEvent(e core.Event) bool {
	return !e.MemberLevel() || e.Kind == core.EventMemberLeft || e.Kind == core.EventMemberFenced
}

// writeGroupEvents writes the INFO line of each history event of b.
func writeGroupEvents(h slog.Handler, b eventBatch) {
	for _, e := range b.events {
		if !historyEvent(e) {
			continue
		}
		r := slog.NewRecord(b.at, slog.LevelInfo, "group event", 0)
		r.AddAttrs(slog.String("group", e.Group), slog.String("event", describeEvent(e)))
		_ = h.Handle(context.Background(), r)
	}
}
