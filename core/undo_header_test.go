package core

import (
	"testing"

	"github.com/coordhost/coordhost/core/records"
)

// TestSaveHeaderUndoes: a group's header saved before a change (a fenced
// member's epoch bump saves one) is restored by the undo, field by
// field, and saving it makes one allocation, the undo's closure: the
// copy of the whole group it made before (420 bytes a fenced member,
// two allocations) is gone.
func TestSaveHeaderUndoes(t *testing.T) {
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	g := newStreamsGroup("g")
	topo := &records.StreamsGroupTopologyValue{Epoch: 3}
	configs := []records.KeyValue{{Key: "k", Value: "v"}}
	g.groupEpoch, g.metadataHash, g.validatedTopologyEpoch = 7, 99, 3
	g.lastAssignmentConfigs, g.storedDescEpoch, g.failedDescEpoch = configs, 2, 1
	g.assignmentEpoch, g.assignmentTimestamp, g.topology = 6, 1234, topo
	c.saveHeader(g)
	g.groupEpoch, g.metadataHash, g.validatedTopologyEpoch = 8, 100, 4
	g.lastAssignmentConfigs, g.storedDescEpoch, g.failedDescEpoch = nil, 5, 5
	g.assignmentEpoch, g.assignmentTimestamp, g.topology = 8, 5678, nil
	c.runUndo(0)
	if g.groupEpoch != 7 || g.metadataHash != 99 || g.validatedTopologyEpoch != 3 || len(g.lastAssignmentConfigs) != 1 ||
		g.storedDescEpoch != 2 || g.failedDescEpoch != 1 || g.assignmentEpoch != 6 || g.assignmentTimestamp != 1234 || g.topology != topo {
		t.Fatalf("header after the undo: %+v", g)
	}
	allocs := testing.AllocsPerRun(100, func() {
		c.saveHeader(g)
		c.undo = c.undo[:0]
	})
	if allocs > 1 {
		t.Errorf("saveHeader made %.0f allocations, want 1", allocs)
	}
}
