package gateway

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEmbeddedVersionsWithoutTelemetry: the embedded data plane's version
// map, from which coordhost's ApiVersions is built, has no client
// telemetry keys (a Kafka broker without a telemetry receiver advertises
// none) and keeps the data keys.
func TestEmbeddedVersionsWithoutTelemetry(t *testing.T) {
	v := openEmbedded(t).Versions()
	for _, k := range []kmsg.Key{kmsg.GetTelemetrySubscriptions, kmsg.PushTelemetry} {
		if r, ok := v[int16(k)]; ok {
			t.Errorf("%s advertised: %+v", kmsg.NameForKey(int16(k)), r)
		}
	}
	for _, k := range []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.Metadata} {
		if _, ok := v[int16(k)]; !ok {
			t.Errorf("%s missing", kmsg.NameForKey(int16(k)))
		}
	}
}
