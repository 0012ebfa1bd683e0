// Command gopanic is a hostile Go fixture: its assign handler panics, which
// the guest SDK must turn into a PANIC status (not a trap).
package main

import (
	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/guest"
)

func init() {
	guest.HandleAssign(func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		panic("gopanic fixture: deliberate panic with " + req.GroupID)
	})
}

func main() {}
