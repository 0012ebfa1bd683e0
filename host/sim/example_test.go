package sim_test

import (
	"fmt"

	"github.com/coordhost/coordhost/host/sim"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

// Two members share four stateful tasks; one leaves, and the other
// restores its two tasks from scratch: 10 s each at 1000 records/s.
func ExampleRun() {
	sc, err := sim.Decode("leave.json", []byte(`{
	  "duration_s": 60,
	  "subtopologies": [{"id": "0", "partitions": 4, "stateful": true}],
	  "assignment": {"num_warmup_replicas": 0, "acceptable_recovery_lag": 100},
	  "state": {"changelog_records": 10000, "restore_records_per_s": 1000},
	  "events": [{"at_s": 0, "join": "a"}, {"at_s": 0, "join": "b"}, {"at_s": 10, "leave": "b"}]
	}`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := sim.Run(sc, []sim.Assignor{{Name: "sticky", Version: "native", Assign: sticky.Assign}})
	a := r.Assignors[0]
	fmt.Printf("%s: %d rebalance, %d tasks moved, %d cold, %v task-seconds unavailable\n",
		a.Name, a.Totals.Rebalances, a.Totals.TasksMoved, a.Totals.Cold, a.UnavailableTaskS)
	// Output: sticky: 1 rebalance, 2 tasks moved, 2 cold, 20 task-seconds unavailable
}
