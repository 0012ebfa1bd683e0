package sim_test

import (
	"fmt"
	"testing"

	"github.com/coordhost/coordhost/host/sim"
)

func TestCoreEngineProbe(t *testing.T) {
	for _, f := range []string{"leave", "rolling-restart", "scale-out"} {
		sc := decode(t, f+".yaml", readScenario(t, f+".yaml"))
		model := sim.Run(sc, builtins)
		sc = decode(t, f+".yaml", readScenario(t, f+".yaml"))
		real, err := sim.RunCore(sc, builtins)
		if err != nil {
			t.Fatal(err)
		}
		for i := range model.Assignors {
			fmt.Printf("%s %s model %+v\n", f, model.Assignors[i].Name, model.Assignors[i].Totals)
			fmt.Printf("%s %s core  %+v err=%s\n", f, real.Assignors[i].Name, real.Assignors[i].Totals, real.Assignors[i].Error)
			for _, rb := range real.Assignors[i].Rebalances {
				fmt.Printf("   %v e%d %v moved=%d\n", rb.AtS, rb.Epoch, rb.Reasons, rb.TasksMoved)
			}
		}
	}
}
