package host_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestOffsetsAsClientNeedsDelegationTokens: with
// dataplane.offsets.identity=client, the default in front of a cluster
// with SASL, coordhost creates a token for its own user at start; a
// cluster that cannot (kfake has no delegation tokens) stops the start
// with an error naming the setting and the way out, while the same
// cluster serves dataplane.offsets.identity=coordhost.
func TestOffsetsAsClientNeedsDelegationTokens(t *testing.T) {
	dp := newObservedCluster(t, kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "coordhost", "coordpw"))
	args := []string{"--dataplane.mode=external", dp.bootstrap(),
		"--dataplane.sasl.mechanism=SCRAM-SHA-256", "--dataplane.sasl.username=coordhost", "--dataplane.sasl.password=coordpw"}
	for _, identity := range [][]string{nil, {"--dataplane.offsets.identity=client"}} {
		srv, err := tryStart(t, "", append(args, identity...)...)
		if err == nil {
			stopHost(t, srv)
			t.Fatalf("started with %v on a cluster without delegation tokens", identity)
		}
		if msg := err.Error(); !strings.Contains(msg, "dataplane.offsets.identity") || !strings.Contains(msg, "User:coordhost") ||
			!strings.Contains(msg, `dataplane.offsets.identity = "coordhost"`) {
			t.Fatalf("start with %v refused with %v, want an error naming the setting, the token's owner and the way out", identity, err)
		}
	}
	startHost(t, "", append(args, "--dataplane.offsets.identity=coordhost")...)
}
