// Command wasm is the sticky task assignor as a coordhost plugin. Build it
// with `make plugins` (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared).
package main

import (
	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/guest"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

// The assignor keeps no string of a request past its call, and the SDK
// encodes each response before the next call: the guest reuses both the
// input's bytes for the request's strings and the response's memory, so
// a call allocates nothing once memory has grown to the group's size. The
// members' id order comes from the SDK's decoder, which sorted them to
// check that ids are unique.
func init() {
	guest.SetOptions(guest.Options{AliasInput: true})
	guest.HandleAssign(assign)
}

func assign(req *abi.AssignRequest) (*abi.AssignResponse, error) {
	return sticky.AssignReusing(req, guest.MemberOrder())
}

func main() {}
