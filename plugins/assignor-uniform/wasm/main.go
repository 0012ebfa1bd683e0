// Command wasm is Kafka's uniform partition assignor as a coordhost plugin.
// Build it with `make plugins` (GOOS=wasip1 GOARCH=wasm go build
// -buildmode=c-shared).
package main

import (
	"github.com/coordhost/coordhost/abi/guest"
	uniform "github.com/coordhost/coordhost/plugins/assignor-uniform"
)

func init() { guest.HandleAssignPartitions(uniform.Assign) }

func main() {}
