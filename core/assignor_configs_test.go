package core

import (
	"reflect"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// TestAssignConfigsByName: the assignment configs an assignor plugin reads
// by name (Kafka Streams' names, keys ascending), with the probing
// interval only when it is set.
func TestAssignConfigsByName(t *testing.T) {
	cfg := StreamsConfig{NumStandbyReplicas: 1, NumWarmupReplicas: 2, AcceptableRecoveryLag: 300, ProbingIntervalMs: 60000}
	want := []records.KeyValue{{Key: "acceptable.recovery.lag", Value: "300"}, {Key: "num.standby.replicas", Value: "1"},
		{Key: "num.warmup.replicas", Value: "2"}, {Key: "probing.rebalance.interval.ms", Value: "60000"}}
	if got := assignConfigs(cfg).All; !reflect.DeepEqual(got, want) {
		t.Fatalf("configs %v, want %v", got, want)
	}
	if want[3].Key != ha.ConfigProbingInterval {
		t.Fatalf("the HA assignor reads its probing interval from %q, core passes %q", ha.ConfigProbingInterval, want[3].Key)
	}
	cfg.ProbingIntervalMs = 0
	if got := assignConfigs(cfg).All; !reflect.DeepEqual(got, want[:3]) {
		t.Fatalf("without a probing interval: %v, want %v", got, want[:3])
	}
}
