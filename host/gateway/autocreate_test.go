package gateway

import (
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
