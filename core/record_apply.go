package core

import (
	"fmt"

	"github.com/coordhost/coordhost/core/records"
)

// applier applies one record of a type to a Coordinator; the record's
// structs and bytes are package records' business.
type applier func(c *Coordinator, rec records.Record) error

// appliers is core's record-type dispatch table. Each group kind registers
// the types it applies from its own file (streams_records.go 17 and
// 19–23, classic_records.go 2, consumer_records.go 3–8 and 16), so adding
// a kind never edits a shared switch.
var appliers = map[int16]applier{}

// applierTable holds appliers indexed by type: a record's apply looks
// its type up there, not in the map.
var applierTable [64]applier

// registerApplier adds a record type to the dispatch table. It is called
// from init functions; registering a type twice is a programming error.
func registerApplier(t int16, apply applier) {
	if _, dup := appliers[t]; dup {
		panic(fmt.Sprintf("core: record type %d registered twice", t))
	}
	if t < 0 || int(t) >= len(applierTable) {
		panic(fmt.Sprintf("core: record type %d outside the table", t))
	}
	appliers[t] = apply
	applierTable[t] = apply
}

// applierOf returns the applier of record type t.
func applierOf(t int16) (applier, bool) {
	if t < 0 || int(t) >= len(applierTable) || applierTable[t] == nil {
		return nil, false
	}
	return applierTable[t], true
}
