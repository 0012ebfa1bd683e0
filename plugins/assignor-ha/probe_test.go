package ha_test

import (
	"math"
	"testing"

	"github.com/coordhost/coordhost/abi"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// probeAfter builds a probe for a 1 -> 3 scale-out whose target holds two
// warm-ups, with process 1's warm-up at warmOffset (end 10000), at nowMs
// after the target was computed at 0.
func probeAfter(t *testing.T, nowMs, warmOffset int64) *abi.ProbeRequest {
	t.Helper()
	req := scaleOutGroup(3, 100)
	target := assign(t, req)
	req.Members[1].TaskOffsets = []abi.TaskOffset{{Task: target.Members[1].Warmup[0], Offset: warmOffset}}
	return &abi.ProbeRequest{NowMs: nowMs, LastAssignMs: 0, Group: *req, Target: target.Members}
}

func probe(t *testing.T, req *abi.ProbeRequest) *abi.ProbeResponse {
	t.Helper()
	resp, err := ha.Probe(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestProbeEarlyWhenAWarmupCatchesUp(t *testing.T) {
	got := probe(t, probeAfter(t, 1000, 9950))
	if !got.Rebalance || got.NextProbeMs != ha.DefaultProbingIntervalMs {
		t.Fatalf("got %+v, want an early rebalance", got)
	}
}

func TestProbeWaitsForTheInterval(t *testing.T) {
	got := probe(t, probeAfter(t, 1000, 100))
	if got.Rebalance || got.NextProbeMs != ha.DefaultProbingIntervalMs-1000 {
		t.Fatalf("got %+v, want no rebalance and the rest of the interval", got)
	}
	got = probe(t, probeAfter(t, ha.DefaultProbingIntervalMs, 100))
	if !got.Rebalance {
		t.Fatalf("got %+v, want a rebalance once the interval passed with warm-ups pending", got)
	}
}

func TestProbeWithoutWarmupsNeverRebalances(t *testing.T) {
	req := probeAfter(t, 2*ha.DefaultProbingIntervalMs, 100)
	for i := range req.Target {
		req.Target[i].Warmup = nil
	}
	if got := probe(t, req); got.Rebalance {
		t.Fatalf("got %+v, want no rebalance without warm-ups", got)
	}
}

func TestProbeUnknownEndIsNotCaughtUp(t *testing.T) {
	req := probeAfter(t, 1000, 9999)
	for i := range req.Group.Members[0].TaskEndOffsets {
		req.Group.Members[0].TaskEndOffsets[i].Offset = math.MaxInt64
	}
	if got := probe(t, req); got.Rebalance {
		t.Fatalf("got %+v: a warm-up with unknown end offset counted as caught up", got)
	}
}

func TestProbeCustomInterval(t *testing.T) {
	req := probeAfter(t, 1000, 100)
	req.Group.Configs.All = []abi.KV{{Key: ha.ConfigProbingInterval, Value: "60000"}}
	if got := probe(t, req); got.NextProbeMs != 59000 {
		t.Fatalf("got %+v, want next probe in 59000 ms", got)
	}
}

func TestProbeRejectsATargetOfAnotherShape(t *testing.T) {
	req := probeAfter(t, 1000, 100)
	req.Target = req.Target[:1]
	if _, err := ha.Probe(req); err == nil {
		t.Fatal("want an error for a target that does not match the members")
	}
}
