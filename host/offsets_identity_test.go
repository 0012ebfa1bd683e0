package host_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestOffsetsAsClientNeedsDelegationTokens: with
// dataplane.offsets.identity=client coordhost creates a token for its own
// user at start; a cluster that cannot (kfake has no delegation tokens)
// stops the start with an error naming the setting, while the same
// cluster serves the default.
func TestOffsetsAsClientNeedsDelegationTokens(t *testing.T) {
	dp := newObservedCluster(t, kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "coordhost", "coordpw"))
	args := []string{"--dataplane.mode=external", dp.bootstrap(),
		"--dataplane.sasl.mechanism=SCRAM-SHA-256", "--dataplane.sasl.username=coordhost", "--dataplane.sasl.password=coordpw"}
	srv, err := tryStart(t, "", append(args, "--dataplane.offsets.identity=client")...)
	if err == nil {
		stopHost(t, srv)
		t.Fatal("started with dataplane.offsets.identity=client on a cluster without delegation tokens")
	}
	if !strings.Contains(err.Error(), "dataplane.offsets.identity") || !strings.Contains(err.Error(), "User:coordhost") {
		t.Fatalf("start refused with %v, want an error naming dataplane.offsets.identity and the token's owner", err)
	}
	startHost(t, "", args...)
}
