// Command wasm is the sticky task assignor as a coordhost plugin. Build it
// with `make plugins` (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared).
package main

import (
	"github.com/coordhost/coordhost/abi/guest"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

func init() { guest.HandleAssign(sticky.Assign) }

func main() {}
