package gateway

import (
	"bufio"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
	"github.com/coordhost/coordhost/internal/testtool"
)

// openExternal starts a cluster on a TCP port and opens it as an external
// data plane (the one whose Produce and Fetch are forwarded as frames).
func openExternal(t *testing.T) (*kfake.Cluster, *DataPlane) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	d, err := Open(ctxT(t), Config{Bootstrap: c.ListenAddrs(),
		Advertise: func(int32) (string, int32, error) { return "gw.example", 9999, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return c, d
}

// frameOf encodes req as a client would (without the size prefix).
func frameOf(req kmsg.Request, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("app")).AppendRequest(nil, req, corr)[4:]
}

// forwardFrame forwards req as a frame and decodes the answer.
func forwardFrame(t *testing.T, l *Link, req kmsg.Request) kmsg.Response {
	t.Helper()
	frame := frameOf(req, 77)
	h, bodyAt, err := wire.ParseHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	out, done, err := l.ForwardFrame(ctxT(t), h, frame, bodyAt)
	if err != nil {
		t.Fatal(err)
	}
	if out == nil {
		return nil
	}
	defer done()
	corr, resp, err := wire.ParseResponse(out, req)
	if err != nil || corr != l.corr {
		t.Fatalf("response corr %d (link's %d), %v", corr, l.corr, err)
	}
	return resp
}

func produceReq(acks int16, value string) *kmsg.ProduceRequest {
	rec := kmsg.Record{Key: []byte("k"), Value: []byte(value)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // the length's own varint is one byte
	b := kmsg.RecordBatch{Magic: 2, NumRecords: 1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: rec.AppendTo(nil)}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks, req.TimeoutMillis = acks, 5000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = raw
	tp.Partitions = append(tp.Partitions, pp)
	req.Topics = append(req.Topics, tp)
	return req
}

// fetchedValues are the record values of a fetch's record batches.
func fetchedValues(t *testing.T, raw []byte) []string {
	t.Helper()
	var out []string
	for len(raw) > 0 {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			t.Fatal(err)
		}
		raw = raw[12+b.Length:]
		recs := b.Records
		for i := int32(0); i < b.NumRecords; i++ {
			var r kmsg.Record
			if err := r.ReadFrom(recs); err != nil {
				t.Fatal(err)
			}
			out = append(out, string(r.Value))
			recs = recs[len(r.AppendTo(nil)):]
		}
	}
	return out
}

// TestForwardFrameProduceFetch: a produce and a fetch forwarded as frames
// reach the cluster and come back as it answered; acks=0 gets no answer.
func TestForwardFrameProduceFetch(t *testing.T) {
	_, d := openExternal(t)
	l, err := d.Dial(ctxT(t), d.Nodes()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i, v := range []string{"one", "two"} {
		pr := forwardFrame(t, l, produceReq(-1, v)).(*kmsg.ProduceResponse)
		if p := pr.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != int64(i) {
			t.Fatalf("produce #%d: %+v", i, p)
		}
	}
	if resp := forwardFrame(t, l, produceReq(0, "three")); resp != nil {
		t.Fatalf("acks=0 answered: %+v", resp)
	}
	f := fetchAll(t, d, 1<<20)
	f.SetVersion(16)
	fr := forwardFrame(t, l, f).(*kmsg.FetchResponse)
	values := fetchedValues(t, fr.Topics[0].Partitions[0].RecordBatches)
	if len(values) != 3 || values[0] != "one" || values[2] != "three" {
		t.Fatalf("fetched %q", values)
	}
}

// TestForwardFrameRewritesLeaderEndpoints: a response naming brokers (a
// moved leader, KIP-951) is re-encoded with the coordhost listener's
// address; the embedded data plane's frames are decoded instead.
func TestForwardFrameRewritesLeaderEndpoints(t *testing.T) {
	c, d := openExternal(t)
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		resp.SetVersion(req.GetVersion())
		resp.Brokers = []kmsg.ProduceResponseBroker{{NodeID: 0, Host: "real.example", Port: 1}}
		return resp, nil, true
	})
	l, err := d.Dial(ctxT(t), d.Nodes()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pr := forwardFrame(t, l, produceReq(-1, "x")).(*kmsg.ProduceResponse)
	if len(pr.Brokers) != 1 || pr.Brokers[0].Host != "gw.example" || pr.Brokers[0].Port != 9999 {
		t.Fatalf("brokers not rewritten: %+v", pr.Brokers)
	}
	e := openEmbedded(t)
	el, err := e.Dial(ctxT(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer el.Close()
	frame := frameOf(produceReq(-1, "x"), 1)
	h, bodyAt, _ := wire.ParseHeader(frame)
	if _, _, err := el.ForwardFrame(ctxT(t), h, frame, bodyAt); err != wire.ErrNotPassable {
		t.Fatalf("embedded ForwardFrame: %v, want ErrNotPassable", err)
	}
}

// TestStreamFrameFetch: a consumer's Fetch of the latest version goes to
// the cluster as v15, and its answer, larger than the link's read buffer,
// reaches the client's connection, plain TCP (spliced) or TLS, as the
// cluster sent it (the same bytes as a v15 Fetch read whole) with the
// client's correlation id, and decodes as the answer of the client's
// version.
func TestStreamFrameFetch(t *testing.T) {
	c, d := openExternal(t)
	var versions []int16
	var mu sync.Mutex
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		versions = append(versions, req.GetVersion())
		mu.Unlock()
		return nil, nil, false
	})
	l, err := d.Dial(ctxT(t), d.Nodes()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Over 1 MiB in all: a TCP client's answer is spliced in pieces of
	// at least 256 KiB (wire.CopyBulk) but its last ones.
	const records = 120
	var want []string
	for i := range records {
		v := fmt.Sprintf("%03d%s", i, strings.Repeat("v", 10<<10))
		forwardFrame(t, l, produceReq(-1, v))
		want = append(want, v)
	}
	v15 := fetchAll(t, d, records<<20)
	v15.SetVersion(streamedFetchVersion)
	frame := frameOf(v15, 77)
	h, bodyAt, _ := wire.ParseHeader(frame)
	whole, done, err := l.ForwardFrame(ctxT(t), h, frame, bodyAt)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if len(whole) <= 64<<10+1<<20 {
		t.Fatalf("the answer has %d bytes: not beyond the link's 64 KiB read buffer and 1 MiB more", len(whole))
	}

	pki := testtool.NewPKI(t, "stream-ca")
	cert := pki.Issue(t, pkix.Name{CommonName: "127.0.0.1"})
	for _, transport := range []string{"tcp", "tls"} {
		t.Run(transport, func(t *testing.T) {
			fetch := fetchAll(t, d, records<<20)
			fetch.SetVersion(fetch.MaxVersion())
			if fetch.GetVersion() <= streamedFetchVersion {
				t.Fatalf("kmsg's latest Fetch is v%d: nothing to send as v%d", fetch.GetVersion(), streamedFetchVersion)
			}
			frame := frameOf(fetch, 77)
			h, bodyAt, err := wire.ParseHeader(frame)
			if err != nil {
				t.Fatal(err)
			}
			recv, err := l.StreamFrame(ctxT(t), h, frame, bodyAt)
			if err != nil {
				t.Fatal(err)
			}
			server, client := tcpPair(t)
			if transport == "tls" {
				server = tls.Server(server, &tls.Config{Certificates: []tls.Certificate{cert}})
				client = tls.Client(client, &tls.Config{RootCAs: pki.Pool, ServerName: "127.0.0.1"})
			}
			got := make(chan []byte, 1)
			go func() {
				f, err := wire.ReadFrame(bufio.NewReader(client), 1<<30)
				if err != nil {
					t.Error(err)
				}
				got <- f
			}()
			began := false
			if err := recv(1234, func() io.Writer { began = true; return server }); err != nil || !began {
				t.Fatalf("streaming the answer: %v (writer asked for: %v)", err, began)
			}
			server.Close() // a short answer ends in EOF
			streamed := <-got
			if streamed == nil {
				t.FailNow()
			}
			corr, resp, err := wire.ParseResponse(streamed, fetch)
			if err != nil || corr != 1234 {
				t.Fatalf("streamed answer: correlation id %d, %v", corr, err)
			}
			values := fetchedValues(t, resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches)
			if strings.Join(values, ",") != strings.Join(want, ",") {
				t.Fatalf("fetched %d values, not the %d produced", len(values), len(want))
			}
			if string(streamed[4:]) != string(whole[4:]) {
				t.Fatalf("streamed answer (%d bytes) differs from v%d's read whole (%d bytes)", len(streamed), streamedFetchVersion, len(whole))
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(versions) != 3 || versions[1] != streamedFetchVersion || versions[2] != streamedFetchVersion {
		t.Fatalf("the cluster got Fetch versions %v, want v%d three times", versions, streamedFetchVersion)
	}
}

// fetchAll is a sessionless Fetch of partition 0 of topic t from offset 0.
func fetchAll(t *testing.T, d *DataPlane, maxBytes int32) *kmsg.FetchRequest {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	mdr, err := md.RequestWith(ctxT(t), d.Admin())
	if err != nil {
		t.Fatal(err)
	}
	f := kmsg.NewPtrFetchRequest()
	f.MaxWaitMillis, f.MaxBytes, f.SessionEpoch = 100, maxBytes, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = mdr.Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = maxBytes
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	return f
}

// tcpPair is two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// TestAnswerOfAnotherCorrelationIDRefused: an answer whose correlation id
// is not the request's is refused, read whole or streamed, and nothing of
// a streamed one reaches the client.
func TestAnswerOfAnotherCorrelationIDRefused(t *testing.T) {
	_, d := openExternal(t)
	for _, streamed := range []bool{false, true} {
		cluster, nc := tcpPair(t)
		go func() { // answers every request with the next correlation id
			br := bufio.NewReader(cluster)
			for {
				f, err := wire.ReadFrame(br, 1<<20)
				if err != nil {
					return
				}
				answer := make([]byte, 9)
				binary.BigEndian.PutUint32(answer, 5)
				binary.BigEndian.PutUint32(answer[4:], binary.BigEndian.Uint32(f[4:8])+1)
				cluster.Write(answer)
			}
		}()
		l := newLink(d, 0, nc)
		frame := frameOf(fetchAll(t, d, 1<<20), 77)
		h, bodyAt, _ := wire.ParseHeader(frame)
		var err error
		if streamed {
			recv, serr := l.StreamFrame(ctxT(t), h, frame, bodyAt)
			if serr != nil {
				t.Fatal(serr)
			}
			err = recv(1, func() io.Writer { t.Error("the client was written to"); return io.Discard })
		} else {
			_, _, err = l.ForwardFrame(ctxT(t), h, frame, bodyAt)
		}
		if err == nil || !strings.Contains(err.Error(), "correlation id") {
			t.Fatalf("streamed %v: %v, want a correlation id error", streamed, err)
		}
	}
}
