package gateway

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
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
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	mdr, err := md.RequestWith(ctxT(t), d.Admin())
	if err != nil {
		t.Fatal(err)
	}
	f := kmsg.NewPtrFetchRequest()
	f.SetVersion(16)
	f.MaxWaitMillis, f.MaxBytes, f.SessionEpoch = 100, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = mdr.Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
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
