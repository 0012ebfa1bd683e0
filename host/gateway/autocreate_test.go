package gateway

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetadataAutoCreate: a Metadata request that allows auto-creation
// creates the unknown topic through CreateTopics (with the data plane's
// default partition count) and answers it with its partitions; an
// invalid name answers INVALID_TOPIC_EXCEPTION as Kafka's auto-creation
// does, a request without auto-creation creates nothing.
func TestMetadataAutoCreate(t *testing.T) {
	d, ctx := openEmbedded(t), ctxT(t)
	link, err := d.Dial(ctx, d.Nodes()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	metadata := func(auto bool, names ...string) map[string]kmsg.MetadataResponseTopic {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation = 12, auto
		for _, n := range names {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := link.Forward(ctx, nil, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]kmsg.MetadataResponseTopic{}
		for _, rt := range resp.(*kmsg.MetadataResponse).Topics {
			out[*rt.Topic] = rt
		}
		return out
	}
	if got := metadata(false, "plain"); got["plain"].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("without auto-creation: %+v", got["plain"])
	}
	got := metadata(true, "auto", "bad/name")
	if a := got["auto"]; a.ErrorCode != 0 || len(a.Partitions) != 3 || a.TopicID == [16]byte{} {
		t.Fatalf("auto-created topic: %+v", a)
	}
	if b := got["bad/name"]; b.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("invalid name: %v", kerr.ErrorForCode(b.ErrorCode))
	}
	ts, err := d.Topics(ctx, "plain")
	if err != nil || ts[0].Err == nil {
		t.Fatalf("a Metadata request without auto-creation created its topic: %+v %v", ts, err)
	}
}

// TestCreateTopicsNames: a CreateTopics on the embedded data plane creates
// the topics with legal names and answers the others INVALID_TOPIC_EXCEPTION
// with Kafka's message, creating nothing under them.
func TestCreateTopicsNames(t *testing.T) {
	d, ctx := openEmbedded(t), ctxT(t)
	link, err := d.Dial(ctx, d.Nodes()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	long := strings.Repeat("x", 250)
	create := func(names ...string) map[string]kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 7, 5000
		for _, n := range names {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, 1, -1
			req.Topics = append(req.Topics, rt)
		}
		resp, err := link.Forward(ctx, nil, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]kmsg.CreateTopicsResponseTopic{}
		for _, rt := range resp.(*kmsg.CreateTopicsResponse).Topics {
			out[rt.Topic] = rt
		}
		if len(out) != len(names) {
			t.Fatalf("%d topics answered for %d asked: %+v", len(out), len(names), out)
		}
		return out
	}
	got := create("fine.name-1", "bad/name", "..", long, "")
	if got["fine.name-1"].ErrorCode != 0 {
		t.Fatalf("legal name: %v", kerr.ErrorForCode(got["fine.name-1"].ErrorCode))
	}
	for _, n := range []string{"bad/name", "..", long, ""} {
		if r := got[n]; r.ErrorCode != kerr.InvalidTopicException.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "Topic name") {
			t.Errorf("name %.20q: %v %v", n, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}
	if got := create("other/bad"); got["other/bad"].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("a request of illegal names only: %+v", got)
	}
	ts, err := d.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range ts {
		if ti.Name != "fine.name-1" {
			t.Errorf("topic %.20q exists", ti.Name)
		}
	}
}

// TestTopicsCreatedHook: Config.TopicsCreated is called once per client
// CreateTopics that created a topic, and once per Metadata request whose
// auto-creation created one; a CreateTopics that created nothing (the
// topic exists, or validate-only) and a Metadata request on known topics
// do not call it.
func TestTopicsCreatedHook(t *testing.T) {
	ctx := ctxT(t)
	var calls atomic.Int32
	d, err := Open(ctx, Config{Embedded: true, Partitions: 3, TopicsCreated: func() { calls.Add(1) },
		Advertise: func(int32) (string, int32, error) { return "127.0.0.1", 1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	link, err := d.Dial(ctx, d.Nodes()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	create := func(name string, validateOnly bool) {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis, req.ValidateOnly = 7, 5000, validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, -1
		req.Topics = append(req.Topics, rt)
		if _, err := link.Forward(ctx, nil, req); err != nil {
			t.Fatal(err)
		}
	}
	metadata := func(name string) {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation = 12, true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
		if _, err := link.Forward(ctx, nil, req); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		what string
		do   func()
		want int32
	}{
		{"validate-only CreateTopics", func() { create("hook-a", true) }, 0},
		{"CreateTopics", func() { create("hook-a", false) }, 1},
		{"CreateTopics of an existing topic", func() { create("hook-a", false) }, 1},
		{"CreateTopics of an invalid name", func() { create("bad/name", false) }, 1},
		{"Metadata auto-creating a topic", func() { metadata("hook-b") }, 2},
		{"Metadata of a known topic", func() { metadata("hook-b") }, 2},
	}
	for _, s := range steps {
		s.do()
		if got := calls.Load(); got != s.want {
			t.Fatalf("after %s: %d calls, want %d", s.what, got, s.want)
		}
	}
}
