// Command goprobe is a test fixture: a plugin that exports only a probing
// policy (no assignor), so a group can pair any assignor with it. Its
// answer depends on the group id, so one module serves several tests:
//
//   - "refuse-…": never asks for a probe; asks to be consulted again in 200 ms.
//   - "trap-…":   panics (the guest SDK turns it into status PANIC).
//   - otherwise:  asks for a probe once 300 ms have passed since the target
//     was computed, else to be consulted again when they have.
package main

import (
	"strings"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/guest"
)

// afterMs is how long after a target the policy asks for a probe.
const afterMs = 300

func probe(req *abi.ProbeRequest) (*abi.ProbeResponse, error) {
	id := req.Group.GroupID
	switch {
	case strings.HasPrefix(id, "refuse-"):
		return &abi.ProbeResponse{NextProbeMs: 200}, nil
	case strings.HasPrefix(id, "trap-"):
		panic("goprobe fixture: deliberate panic for " + id)
	}
	if left := req.LastAssignMs + afterMs - req.NowMs; left > 0 {
		return &abi.ProbeResponse{NextProbeMs: left}, nil
	}
	return &abi.ProbeResponse{Rebalance: true, NextProbeMs: afterMs}, nil
}

func init() { guest.HandleProbe(probe) }

func main() {}
