package host

import (
	"reflect"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
)

// TestToABIPassesConfigsByName: the ABI translation copies core's
// assignment configs by name, whatever their keys, in core's order.
func TestToABIPassesConfigsByName(t *testing.T) {
	run := core.AssignorRun{Group: "g", Epoch: 3, Input: core.AssignInput{Configs: core.AssignConfigs{
		NumStandbyReplicas: 1, All: []core.KeyValue{{Key: "a.plugin.key", Value: "x"}, {Key: "num.standby.replicas", Value: "1"}}}}}
	req, _ := toABI(run)
	want := []abi.KV{{Key: "a.plugin.key", Value: "x"}, {Key: "num.standby.replicas", Value: "1"}}
	if !reflect.DeepEqual(req.Configs.All, want) || req.Configs.NumStandbyReplicas != 1 {
		t.Fatalf("configs %+v, want All %v", req.Configs, want)
	}
}
