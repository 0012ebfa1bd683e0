package core

import (
	"errors"
	"testing"

	"github.com/coordhost/coordhost/core/records"
)

// TestAppliersCoverCodec: core applies exactly the record types package
// records decodes, and a key of any other type is refused as unknown.
func TestAppliersCoverCodec(t *testing.T) {
	types := records.RegisteredRecordTypes()
	if len(types) != len(appliers) {
		t.Errorf("records decodes %d types, core applies %d", len(types), len(appliers))
	}
	for _, rt := range types {
		if appliers[rt] == nil {
			t.Errorf("record type %d (%s) decodes but has no applier", rt, records.RecordTypeName(rt))
		}
	}
	c, _ := New(DefaultConfig())
	err := c.Replay(records.Record{Key: unknownKey{}})
	if !errors.Is(err, records.ErrUnknownRecordType) {
		t.Fatalf("replay of record type 18: %v, want ErrUnknownRecordType", err)
	}
}

// unknownKey is a key of record type 18, which neither side registers.
type unknownKey struct {
	records.StreamsGroupMetadataKey
}

func (unknownKey) RecordType() int16 { return 18 }
