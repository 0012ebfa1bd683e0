// Command wasm is the high-availability task assignor and its probing
// policy as one coordhost plugin. Build it with `make plugins`
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared).
package main

import (
	"github.com/coordhost/coordhost/abi/guest"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

func init() {
	guest.HandleAssign(ha.Assign)
	guest.HandleProbe(ha.Probe)
}

func main() {}
