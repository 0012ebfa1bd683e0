package wire

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// bugCatcher is a slog handler that records "BUG" errors (the message a
// recovered panic logs), so the fuzzer sees panics the server survives.
type bugCatcher struct{ bugs *atomic.Int64 }

func (b bugCatcher) Enabled(context.Context, slog.Level) bool { return true }
func (b bugCatcher) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "BUG") {
		b.bugs.Add(1)
	}
	return nil
}
func (b bugCatcher) WithAttrs([]slog.Attr) slog.Handler { return b }
func (b bugCatcher) WithGroup(string) slog.Handler      { return b }

// FuzzConn feeds arbitrary bytes to a live connection of a server with a
// fake data plane and group coordinator: whatever arrives, the connection
// answers or closes, nothing panics (not even a recovered panic), and the
// request budget is all given back. With an odd first byte the listener
// requires SASL (a small pre-authentication frame limit).
func FuzzConn(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(frameOf(s))
		f.Add(append(frameOf(s), frameOf(s)...))
	}
	f.Add([]byte{0, 0, 0, 10, 0, 200, 0, 0, 0, 0, 0, 1, 0, 0})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 8, 0}) // over the pre-authentication limit when SASL is required
	f.Fuzz(func(t *testing.T, in []byte) {
		var bugs atomic.Int64
		rec := &recorder{}
		lim := NewLimits(1<<16, 10, 10)
		s := &Server{cfg: Config{
			Table: NewTable(kafka44), MaxRequestBytes: 1 << 16, IdleTimeout: time.Second, WriteTimeout: time.Second,
			Limits: lim, SASLRequired: len(in) > 0 && in[0]&1 == 1, PreAuthMaxRequestBytes: 1 << 10,
			Dial: func(context.Context) (Upstream, error) { return rec, nil },
			Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
				return ErrorResponse(req.Body, 15), nil
			},
			Log: slog.New(bugCatcher{&bugs}),
		}, conns: map[*conn]struct{}{}}
		client, server := net.Pipe()
		c := &conn{s: s, nc: server, log: s.cfg.Log}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		done := make(chan struct{})
		go func() { c.serve(); close(done) }()
		go func() { // drain responses so the server never blocks writing
			buf := make([]byte, 4096)
			for {
				if _, err := client.Read(buf); err != nil {
					return
				}
			}
		}()
		client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		client.Write(in)
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("connection did not finish")
		}
		if bugs.Load() != 0 {
			t.Fatalf("a request panicked (recovered) on input %x", in)
		}
		if n := lim.inFlightBytes(); n != 0 {
			t.Fatalf("%d bytes of request budget still held after the connection ended", n)
		}
	})
}
