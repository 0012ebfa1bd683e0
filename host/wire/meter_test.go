//go:build unix

package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// chargedQuota throttles no group and adds up what each group is charged.
type chargedQuota struct {
	mu      sync.Mutex
	charged map[string]time.Duration
}

func (q *chargedQuota) GroupThrottle(string) time.Duration { return 0 }

func (q *chargedQuota) ChargeGroup(group string, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.charged[group] += d
}

// waitCharged waits until group was charged (the charge follows the
// answer's write) and returns its total.
func (q *chargedQuota) waitCharged(t *testing.T, group string) time.Duration {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		q.mu.Lock()
		d := q.charged[group]
		q.mu.Unlock()
		if d > 0 {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s never charged", group)
		}
	}
}

// TestListenerChargesGroupForItsRequests: the listener's time on a
// request — reading it, encoding and writing its answer — is charged,
// once the answer is written, to the group the group coordinator took
// it for (Request.ChargeTo), and to no other. A request the coordinator
// did not take (denied here, as an authorizer would) and a frame refused
// before it reached the coordinator are charged to no group. The time
// the connection waited for the rest of a frame its client sent in two
// parts, 600 ms apart, is not charged.
func TestListenerChargesGroupForItsRequests(t *testing.T) {
	q := &chargedQuota{charged: map[string]time.Duration{}}
	addr := startLimited(t, Config{MaxRequestBytes: 8 << 20, Limits: NewLimits(8<<20, 100, 100), Quota: q,
		MaxTopologySize: func(string) int32 { return 100 },
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			if g := req.Body.(*kmsg.JoinGroupRequest).Group; g != "denied" {
				req.ChargeTo(g)
			}
			return ErrorResponse(req.Body, kerr.CoordinatorNotAvailable.Code), nil
		}})

	c := dial(t, addr)
	join := metadataJoin("read", 10)
	c.send(join, 9, 1)
	c.recv(join)
	q.waitCharged(t, "read")

	slow := metadataJoin("slow", 100<<10)
	slow.SetVersion(9)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, slow, 2)
	c.c.Write(frame[:len(frame)/2])
	time.Sleep(600 * time.Millisecond)
	c.c.Write(frame[len(frame)/2:])
	c.recv(slow)
	if d := q.waitCharged(t, "slow"); d >= 300*time.Millisecond {
		t.Fatalf("a frame whose second half came 600 ms after its first was charged %v: the wait was counted", d)
	}

	huge := bigTopology("refused", 200000) // megabytes, over the bound: read past
	c.send(huge, 1, 3)
	if _, resp := c.recv(huge); resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("over-limit topology answered %+v", resp)
	}
	denied := metadataJoin("denied", 10)
	c.send(denied, 9, 4)
	c.recv(denied)
	// The connection charges a request before it reads the next one: once
	// this one is charged, the two before it were charged if ever.
	last := metadataJoin("last", 10)
	c.send(last, 9, 5)
	c.recv(last)
	q.waitCharged(t, "last")

	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.charged) != 3 {
		t.Fatalf("charged %v, want the three groups the coordinator took requests for", q.charged)
	}
}

// TestMeterReadsAndWritesAsTheConn: reads and writes through the meter
// carry every byte both ways, a large write included; a read past the
// deadline fails as a timeout, a read after the peer closed returns
// io.EOF, a read on a closed connection net.ErrClosed; and the meter
// counted some time.
func TestMeterReadsAndWritesAsTheConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, _ := ln.Accept()
		accepted <- nc
	}()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	nc := <-accepted
	m := newMeter(nc)
	if m.raw == nil {
		t.Fatal("a TCP connection is not metered")
	}
	defer m.Close()

	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB: more than the socket buffers
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(big))
		io.ReadFull(peer, b)
		got <- b
	}()
	if n, err := m.Write(big); n != len(big) || err != nil {
		t.Fatalf("write: %d bytes, %v", n, err)
	}
	if !bytes.Equal(<-got, big) {
		t.Fatal("the peer read other bytes than written")
	}
	go peer.Write(big)
	b := make([]byte, len(big))
	if _, err := io.ReadFull(bufio.NewReader(m), b); err != nil || !bytes.Equal(b, big) {
		t.Fatalf("read: %v", err)
	}
	if m.take() <= 0 {
		t.Fatal("no time counted")
	}

	m.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var ne net.Error
	if _, err := m.Read(b); !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	m.SetReadDeadline(time.Time{})
	peer.Close()
	if _, err := m.Read(b); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
	m.Close()
	if _, err := m.Read(b); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a closed connection: %v", err)
	}
}

// BenchmarkReadPast: reading past a 2 MiB frame that is not kept (a
// refused topology) arriving over loopback, as the listener did before —
// through the connection's 8 KiB buffered reader into io.Discard — and
// as skip does, through the meter in 256 KiB reads. cpu-ns/op is the
// process's CPU time (the writer's included, the same in both) per frame.
func BenchmarkReadPast(b *testing.B) {
	const n = 2 << 20
	for _, way := range []struct {
		name string
		read func(br *bufio.Reader, nc net.Conn) error
	}{
		{"bufio-8KiB", func(br *bufio.Reader, _ net.Conn) error {
			_, err := io.CopyN(io.Discard, br, n)
			return err
		}},
		{"skip-256KiB", func(br *bufio.Reader, nc net.Conn) error { return skip(br, nc, n) }},
	} {
		b.Run(way.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				defer nc.Close()
				frame := make([]byte, n)
				for {
					if _, err := nc.Write(frame); err != nil {
						return
					}
				}
			}()
			raw, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			var nc net.Conn = raw
			if way.name != "bufio-8KiB" {
				nc = newMeter(raw)
			}
			br := bufio.NewReaderSize(nc, 8<<10)
			cpu0 := processCPU()
			b.ResetTimer()
			for range b.N {
				if err := way.read(br, nc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the user and system CPU time of this process, in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
