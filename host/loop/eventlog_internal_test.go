package loop

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/assign"
)

// stuckHandler takes INFO lines and holds every "group event" line until
// release is closed, as a log whose output does not drain.
type stuckHandler struct {
	mu      *sync.Mutex
	lines   *[]string
	release chan struct{}
}

func (h stuckHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h stuckHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h stuckHandler) WithGroup(string) slog.Handler                { return h }
func (h stuckHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "group event" {
		return nil
	}
	<-h.release
	line := r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	h.mu.Lock()
	*h.lines = append(*h.lines, line)
	h.mu.Unlock()
	return nil
}

// TestGroupEventLinesDoNotHoldThePartition: while the log's output does
// not take the "group event" lines of a committed join, the partition
// goes on answering (another group's join); once it drains, every line
// was written, in commit order. Before the lines were written off the
// partition's goroutine, the second join waited for the first one's
// lines.
func TestGroupEventLinesDoNotHoldThePartition(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	h := stuckHandler{mu: &mu, lines: &lines, release: make(chan struct{})}
	d := nativeDeps(t, assign.Builtins["sticky"].Native)
	d.Log = slog.New(h)
	l, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			close(h.release)
		}
		_ = l.Shutdown(context.Background())
	}()
	for _, g := range []string{"first", "second"} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := l.Handle(ctx, streamsJoin(g, "m", "in"))
		cancel()
		if err != nil {
			t.Fatalf("join of %s while the log is stuck: %v", g, err)
		}
		if code := resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode; code != 0 {
			t.Fatalf("join of %s: error %d", g, code)
		}
	}
	close(h.release)
	released = true
	if err := l.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(lines, "\n")
	first, second := strings.Index(all, "group=first"), strings.Index(all, "group=second")
	if first < 0 || second < 0 || first > second {
		t.Errorf("group event lines of first and second not written in commit order:\n%s", all)
	}
}
