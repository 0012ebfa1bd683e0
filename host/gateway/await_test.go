package gateway

import (
	"bufio"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
	"github.com/coordhost/coordhost/internal/testtool"
)

// scriptedCluster is the cluster's end of a link: it reads the requests
// into got, and answers one, as a Produce of version 11, when told.
type scriptedCluster struct {
	t   *testing.T
	got chan int32 // the correlation ids of the requests read
	w   func([]byte) error
}

func newScriptedLink(t *testing.T, d *DataPlane) (*Link, *scriptedCluster) {
	t.Helper()
	cluster, nc := tcpPair(t)
	return scriptedLinkOver(t, d, cluster, nc)
}

// newScriptedTLSLink is newScriptedLink over TLS.
func newScriptedTLSLink(t *testing.T, d *DataPlane) (*Link, *scriptedCluster) {
	t.Helper()
	pki := testtool.NewPKI(t, "await-ca")
	cert := pki.Issue(t, pkix.Name{CommonName: "127.0.0.1"})
	cluster, nc := tcpPair(t)
	client := tls.Client(nc, &tls.Config{RootCAs: pki.Pool, ServerName: "127.0.0.1"})
	l, sc := scriptedLinkOver(t, d, tls.Server(cluster, &tls.Config{Certificates: []tls.Certificate{cert}}), client)
	if err := client.Handshake(); err != nil { // as Dial does
		t.Fatal(err)
	}
	return l, sc
}

func scriptedLinkOver(t *testing.T, d *DataPlane, cluster, nc net.Conn) (*Link, *scriptedCluster) {
	t.Helper()
	t.Cleanup(func() { cluster.Close(); nc.Close() })
	sc := &scriptedCluster{t: t, got: make(chan int32, 8), w: func(b []byte) error { _, err := cluster.Write(b); return err }}
	go func() {
		br := bufio.NewReader(cluster)
		for {
			f, err := wire.ReadFrame(br, 1<<20)
			if err != nil {
				return
			}
			h, _, err := wire.ParseHeader(f)
			if err != nil {
				return
			}
			sc.got <- h.CorrelationID
		}
	}()
	return newLink(d, 0, nc), sc
}

// answer answers the next request read, as a Produce of version 11.
func (sc *scriptedCluster) answer() {
	sc.t.Helper()
	select {
	case corr := <-sc.got:
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(11)
		if err := sc.w(wire.AppendResponse(nil, corr, resp)); err != nil {
			sc.t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		sc.t.Fatal("no request reached the cluster")
	}
}

// quiet is how long nothing is to happen before an assertion that it
// did not.
const quiet = 100 * time.Millisecond

// await runs l.Await on a goroutine of its own.
func await(l *Link) chan error {
	done := make(chan error, 1)
	go func() { done <- l.Await() }()
	return done
}

// waiting waits up to 5 s until l's Await is in progress.
func waiting(t *testing.T, l *Link) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		l.amu.Lock()
		in := l.awaiting
		l.amu.Unlock()
		if in {
			return
		}
	}
	t.Fatal("Await is not in progress")
}

// returned waits up to within for done's result.
func returned(done chan error, within time.Duration) (error, bool) {
	select {
	case err := <-done:
		return err, true
	case <-time.After(within):
		return nil, false
	}
}

// sendProduce sends a Produce of version 11 (acks=1, the timeout given)
// as a frame and returns the reading of its answer.
func sendProduce(t *testing.T, l *Link, timeoutMs int32) func() ([]byte, func(), error) {
	t.Helper()
	req := produceReq(1, "v")
	req.TimeoutMillis = timeoutMs
	frame := frameOf(req, 77)
	h, bodyAt, err := wire.ParseHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	recv, err := l.SendFrame(ctxT(t), h, frame, bodyAt)
	if err != nil || recv == nil {
		t.Fatalf("SendFrame: %v (a reading of the answer: %v)", err, recv != nil)
	}
	return recv
}

// TestLinkAwait: Await returns once an answer starts to arrive, whether
// its request was sent before or during the wait, or once woken, and the
// answer is then read as usual; a request sent during the wait bounds it
// by its answer's deadline.
func TestLinkAwait(t *testing.T) {
	_, d := openExternal(t)

	t.Run("answer", func(t *testing.T) {
		l, sc := newScriptedLink(t, d)
		done := await(l)
		if err, ok := returned(done, quiet); ok {
			t.Fatalf("Await returned with nothing sent: %v", err)
		}
		waiting(t, l)
		recv := sendProduce(t, l, 5000) // during the wait
		if err, ok := returned(done, quiet); ok {
			t.Fatalf("Await returned before the answer: %v", err)
		}
		sc.answer()
		if err, ok := returned(done, 5*time.Second); !ok || err != nil {
			t.Fatalf("Await with an answer arrived: returned %v, %v", ok, err)
		}
		if _, _, err := recv(); err != nil {
			t.Fatalf("reading the answer after Await: %v", err)
		}
	})

	t.Run("woken", func(t *testing.T) {
		l, sc := newScriptedLink(t, d)
		woken(t, l, sc)
	})
	// A wake cuts the wait short with a deadline: a TLS link reads on
	// after it as a plain one does.
	t.Run("woken over TLS", func(t *testing.T) {
		l, sc := newScriptedTLSLink(t, d)
		woken(t, l, sc)
	})

	t.Run("late", func(t *testing.T) {
		saved := d.cfg.RequestTimeout
		d.cfg.RequestTimeout = 200 * time.Millisecond
		defer func() { d.cfg.RequestTimeout = saved }()
		l, _ := newScriptedLink(t, d)
		done := await(l)
		waiting(t, l)
		recv := sendProduce(t, l, 0) // never answered
		err, ok := returned(done, 5*time.Second)
		if !ok || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Await for an answer that does not come: returned %v, %v; want its deadline exceeded", ok, err)
		}
		if _, _, err := recv(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("reading the answer that did not come: %v", err)
		}
	})

	t.Run("acks=0", func(t *testing.T) {
		l, _ := newScriptedLink(t, d)
		frame := frameOf(produceReq(0, "v"), 77)
		h, bodyAt, _ := wire.ParseHeader(frame)
		recv, err := l.SendFrame(ctxT(t), h, frame, bodyAt)
		if err != nil || recv != nil {
			t.Fatalf("SendFrame of a Produce with acks=0: %v, a reading of an answer: %v; want none", err, recv != nil)
		}
		if n := len(l.due); n != 0 {
			t.Fatalf("%d answers due after a Produce with acks=0", n)
		}
	})
}

// woken: Await returns once woken, and at once when woken before it;
// the link then reads an answer as usual.
func woken(t *testing.T, l *Link, sc *scriptedCluster) {
	t.Helper()
	done := await(l)
	if _, ok := returned(done, quiet); ok {
		t.Fatal("Await returned with nothing sent")
	}
	l.Wake()
	if err, ok := returned(done, 5*time.Second); !ok || err != nil {
		t.Fatalf("Await woken: returned %v, %v", ok, err)
	}
	l.Wake() // before the next Await: it returns at once
	if err, ok := returned(await(l), 5*time.Second); !ok || err != nil {
		t.Fatalf("Await after a Wake: returned %v, %v", ok, err)
	}
	recv := sendProduce(t, l, 5000) // the wake's deadline is gone
	sc.answer()
	if _, _, err := recv(); err != nil {
		t.Fatalf("reading an answer after a wake: %v", err)
	}
}
