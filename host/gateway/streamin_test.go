package gateway

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
	"github.com/coordhost/coordhost/internal/testtool"
)

// sendStream streams frame to l as a client connection would give it:
// its first cut bytes as head, the rest written in pieces on client and
// read from server.
func sendStream(t *testing.T, l *Link, frame []byte, cut int, server, client net.Conn) (func() ([]byte, func(), error), error) {
	t.Helper()
	h, bodyAt, err := wire.ParseHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	rest := frame[cut:]
	go func() {
		for len(rest) > 0 {
			n := min(len(rest), 100<<10)
			if _, err := client.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
			time.Sleep(time.Millisecond)
		}
	}()
	return l.SendStream(ctxT(t), h, frame[:cut], bodyAt, server, int64(len(frame)-cut), time.Now().Add(10*time.Second))
}

// TestSendStreamProduce: a Produce whose frame comes as its head and the
// rest of it on a client connection, plain TCP (which the link splices
// from) or TLS, reaches the cluster whole and is answered as one sent
// whole; the cluster holds its records. A Fetch, and a head that ends
// before the Produce's acks and timeout, are refused with ErrNotPassable,
// nothing sent on the link and nothing read from the client. A client
// that stops in the middle fails the send.
func TestSendStreamProduce(t *testing.T) {
	_, d := openExternal(t)
	l, err := d.Dial(ctxT(t), d.Nodes()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var rs wire.RequestStreamer = l // what the listener looks for
	_ = rs

	pki := testtool.NewPKI(t, "streamin-ca")
	cert := pki.Issue(t, pkix.Name{CommonName: "127.0.0.1"})
	var want []string
	for i, transport := range []string{"tcp", "tls"} {
		server, client := tcpPair(t)
		if transport == "tls" {
			server = tls.Server(server, &tls.Config{Certificates: []tls.Certificate{cert}})
			client = tls.Client(client, &tls.Config{RootCAs: pki.Pool, ServerName: "127.0.0.1"})
		}
		v := transport + strings.Repeat(string(rune('a'+i)), 600<<10)
		req := produceReq(-1, v)
		recv, err := sendStream(t, l, frameOf(req, 5), 200, server, client)
		if err != nil {
			t.Fatalf("%s: %v", transport, err)
		}
		out, done, err := recv()
		if err != nil {
			t.Fatalf("%s: %v", transport, err)
		}
		corr, resp, err := wire.ParseResponse(out, req)
		done()
		if err != nil || corr != l.corr {
			t.Fatalf("%s: answer with correlation id %d (the link's %d): %v", transport, corr, l.corr, err)
		}
		if p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != int64(i) {
			t.Fatalf("%s: produce answered %+v", transport, p)
		}
		want = append(want, v)
		server.Close()
		client.Close()
	}

	// Refused: nothing on the link, nothing read from the client.
	server, client := tcpPair(t)
	defer server.Close()
	defer client.Close()
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	f := fetchAll(t, d, 4<<20)
	f.SetVersion(16)
	ff := frameOf(f, 6)
	fh, fBodyAt, _ := wire.ParseHeader(ff)
	if _, err := l.SendStream(ctxT(t), fh, ff, fBodyAt, server, 0, time.Time{}); !errors.Is(err, wire.ErrNotPassable) {
		t.Fatalf("a streamed Fetch: %v, want ErrNotPassable", err)
	}
	pf := frameOf(produceReq(-1, "short head"), 7)
	ph, pBodyAt, _ := wire.ParseHeader(pf)
	if _, err := l.SendStream(ctxT(t), ph, pf[:pBodyAt+2], pBodyAt, server, int64(len(pf)-pBodyAt-2), time.Time{}); !errors.Is(err, wire.ErrNotPassable) {
		t.Fatalf("a head without the Produce's acks: %v, want ErrNotPassable", err)
	}
	server.SetReadDeadline(time.Now().Add(time.Second))
	if b := make([]byte, 2); func() bool { n, _ := server.Read(b); return n != 1 || b[0] != 'x' }() {
		t.Fatal("a refused stream read from the client")
	}
	fr := forwardFrame(t, l, f).(*kmsg.FetchResponse) // the link is whole
	if got := fetchedValues(t, fr.Topics[0].Partitions[0].RecordBatches); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("fetched %d values, want the two streamed", len(got))
	}

	// A client that stops in the middle.
	cutServer, cutClient := tcpPair(t)
	defer cutServer.Close()
	frame := frameOf(produceReq(-1, strings.Repeat("z", 300<<10)), 8)
	h, bodyAt, _ := wire.ParseHeader(frame)
	go func() {
		cutClient.Write(frame[200 : 100<<10])
		cutClient.Close()
	}()
	if _, err := l.SendStream(ctxT(t), h, frame[:200], bodyAt, cutServer, int64(len(frame)-200), time.Now().Add(10*time.Second)); err == nil || !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "streaming Produce from the client") {
		t.Fatalf("a client stopping mid-frame: %v", err)
	}
}

// TestSendStreamSlowClient: the rest of a streamed frame may take the
// client longer than the link's request timeout to send, as long as it
// comes by the time the client has (restBy); past that and the request
// timeout, the send fails.
func TestSendStreamSlowClient(t *testing.T) {
	c, _ := openExternal(t)
	d, err := Open(ctxT(t), Config{Bootstrap: c.ListenAddrs(), RequestTimeout: 200 * time.Millisecond,
		Advertise: func(int32) (string, int32, error) { return "gw.example", 9999, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct {
		restBy time.Duration
		ok     bool
	}{{5 * time.Second, true}, {100 * time.Millisecond, false}} {
		l, err := d.Dial(ctxT(t), d.Nodes()[0])
		if err != nil {
			t.Fatal(err)
		}
		server, client := tcpPair(t)
		req := produceReq(-1, strings.Repeat("s", 200<<10))
		req.TimeoutMillis = 0 // the link's deadlines are the request timeout alone
		frame := frameOf(req, 9)
		h, bodyAt, _ := wire.ParseHeader(frame)
		go func() {
			rest := frame[200:]
			for i := range 10 {
				time.Sleep(60 * time.Millisecond)
				end := len(rest) * (i + 1) / 10
				if _, err := client.Write(rest[len(rest)*i/10 : end]); err != nil {
					return
				}
			}
		}()
		recv, err := l.SendStream(ctxT(t), h, frame[:200], bodyAt, server, int64(len(frame)-200), time.Now().Add(tc.restBy))
		if err == nil {
			var out []byte
			var done func()
			if out, done, err = recv(); err == nil {
				done()
				if len(out) == 0 {
					t.Fatal("no answer")
				}
			}
		}
		if (err == nil) != tc.ok {
			t.Fatalf("a frame sent over 600 ms, the client's time %v, request timeout 200 ms: %v", tc.restBy, err)
		}
		l.Close()
		server.Close()
		client.Close()
	}
}
