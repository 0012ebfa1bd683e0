// Command gobomb is a hostile Go fixture: its assign handler keeps
// allocating until the Go runtime runs out of linear memory, which traps.
package main

import (
	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/guest"
)

var hoard [][]byte

func init() {
	guest.HandleAssign(func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		for {
			b := make([]byte, 1<<20)
			b[len(b)-1] = byte(len(hoard))
			hoard = append(hoard, b)
		}
	})
}

func main() {}
