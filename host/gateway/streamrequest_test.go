package gateway

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// kernelRest is a wire.KernelReader over bytes in memory: SpliceTo writes
// them to the socket (what the pipes' splice does, counted), Read reads
// them.
type kernelRest struct {
	*bytes.Reader
	spliced int
}

func (k *kernelRest) SpliceTo(tc *net.TCPConn) (int64, error) {
	k.spliced++
	return k.WriteTo(tc)
}

// TestStreamRequestProduce: a Produce given as its head and a reader of the
// rest reaches the cluster whole and is answered as one sent whole; the
// cluster holds its records. A rest held in the kernel is spliced to the
// link's TCP socket, any other reader copied. A Fetch, and a head that ends
// before the Produce's acks and timeout, are refused with ErrNotPassable
// from the head alone, nothing sent on the link. A rest that ends early
// fails the send.
func TestStreamRequestProduce(t *testing.T) {
	_, d := openExternal(t)
	l, err := d.Dial(ctxT(t), d.Nodes()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var rs wire.RequestStreamer = l // what the listener looks for
	var want []string
	for i, kind := range []string{"kernel", "reader"} {
		v := kind + strings.Repeat(string(rune('a'+i)), 600<<10)
		req := produceReq(-1, v)
		frame := frameOf(req, 5)
		h, bodyAt, err := wire.ParseHeader(frame)
		if err != nil {
			t.Fatal(err)
		}
		kr := &kernelRest{Reader: bytes.NewReader(frame[200:])}
		var rest io.Reader = kr
		if kind == "reader" {
			rest = struct{ io.Reader }{kr}
		}
		send, err := rs.StreamRequest(h, frame[:200], bodyAt)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		recv, err := send(ctxT(t), rest, int64(len(frame)-200))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if spliced := kr.spliced == 1; spliced != (kind == "kernel") {
			t.Fatalf("%s: SpliceTo called %d times", kind, kr.spliced)
		}
		out, done, err := recv()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		corr, resp, err := wire.ParseResponse(out, req)
		done()
		if err != nil || corr != l.corr {
			t.Fatalf("%s: answer with correlation id %d (the link's %d): %v", kind, corr, l.corr, err)
		}
		if p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != int64(i) {
			t.Fatalf("%s: produce answered %+v", kind, p)
		}
		want = append(want, v)
	}

	// Refused, from the head alone: nothing on the link.
	f := fetchAll(t, d, 4<<20)
	f.SetVersion(16)
	ff := frameOf(f, 6)
	fh, fBodyAt, _ := wire.ParseHeader(ff)
	if _, err := l.StreamRequest(fh, ff, fBodyAt); !errors.Is(err, wire.ErrNotPassable) {
		t.Fatalf("a Fetch: %v, want ErrNotPassable", err)
	}
	pf := frameOf(produceReq(-1, "short head"), 7)
	ph, pBodyAt, _ := wire.ParseHeader(pf)
	if _, err := l.StreamRequest(ph, pf[:pBodyAt+2], pBodyAt); !errors.Is(err, wire.ErrNotPassable) {
		t.Fatalf("a head without the Produce's acks: %v, want ErrNotPassable", err)
	}
	fr := forwardFrame(t, l, f).(*kmsg.FetchResponse) // the link is whole
	if got := fetchedValues(t, fr.Topics[0].Partitions[0].RecordBatches); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("fetched %d values, want the two sent", len(got))
	}

	// A rest that ends early.
	frame := frameOf(produceReq(-1, strings.Repeat("z", 300<<10)), 8)
	h, bodyAt, _ := wire.ParseHeader(frame)
	short := struct{ io.Reader }{bytes.NewReader(frame[200 : 100<<10])}
	send, err := l.StreamRequest(h, frame[:200], bodyAt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := send(ctxT(t), short, int64(len(frame)-200)); !errors.Is(err, io.EOF) {
		t.Fatalf("a rest ending early: %v", err)
	}
}
