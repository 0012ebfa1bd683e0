// Command wasm is Kafka's range partition assignor as a coordhost plugin.
// Build it with `make plugins` (GOOS=wasip1 GOARCH=wasm go build
// -buildmode=c-shared).
package main

import (
	"github.com/coordhost/coordhost/abi/guest"
	rangeassignor "github.com/coordhost/coordhost/plugins/assignor-range"
)

func init() { guest.HandleAssignPartitions(rangeassignor.Assign) }

func main() {}
