// Command wasm is the high-availability task assignor and its probing
// policy as one coordhost plugin. Build it with `make plugins`
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared).
package main

import (
	"github.com/coordhost/coordhost/abi/guest"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// The assignor keeps no string of a request past its call, so the
// request's strings point into the SDK's input buffer instead of a copy.
func init() {
	guest.SetOptions(guest.Options{AliasInput: true})
	guest.HandleAssign(ha.Assign)
	guest.HandleProbe(ha.Probe)
}

func main() {}
