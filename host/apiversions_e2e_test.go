package host_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestApiVersionsEmbedded: coordhost on the embedded data plane advertises
// what a Kafka 4.4 broker without a client-telemetry receiver advertises
// for client telemetry: nothing (keys 71 and 72 absent).
func TestApiVersionsEmbedded(t *testing.T) {
	srv := startLoopHost(t, "")
	ctx := timeout(t)
	cl := newClient(t, srv.KafkaAddr())
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		keys[k.ApiKey] = true
	}
	if !keys[int16(kmsg.Fetch)] || keys[int16(kmsg.GetTelemetrySubscriptions)] || keys[int16(kmsg.PushTelemetry)] {
		t.Fatalf("advertised keys %v: want Fetch, no GetTelemetrySubscriptions (71) or PushTelemetry (72)", keys)
	}
}
