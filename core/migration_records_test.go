package core

import (
	"encoding/hex"
	"fmt"
	"reflect"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/internal/testtool"
)

// migrationLog runs a rolling upgrade then a rolling downgrade and returns
// the durable log: it holds streams member metadata with coordhost's
// tagged field 1000 (classic members) and a version-4 GroupMetadata whose
// members carry tag 1000 (the downgrade).
func migrationLog(t simT) []records.Record {
	s := newMigSim(t, 4)
	for i := 1; i <= 2; i++ {
		s.inst(fmt.Sprintf("c%d", i), byte(i), true)
	}
	s.settle(20)
	s.inst("s3", 3, false)
	s.settle(40)
	for _, in := range s.insts {
		if in.name == "s3" {
			s.leave(in)
		}
	}
	s.settle(40)
	// Process 3 left on its own: the group converts once it is no longer
	// expected back (one streams session timeout), at a heartbeat.
	for end := s.now + int64(s.c.streamsConfig("g").SessionTimeoutMs) + 2000; s.now < end; {
		s.round()
	}
	return s.log
}

// TestMigrationRecordExtensions: the extensions decode to what was
// encoded, and both kinds occur in a real migration.
func TestMigrationRecordExtensions(t *testing.T) {
	var classicMembers, v4 int
	for _, r := range migrationLog(t) {
		k, v := records.EncodeRecord(r)
		back, err := records.DecodeRecord(k, v)
		if err != nil {
			t.Fatalf("%s: %v", records.RecordTypeName(r.Key.RecordType()), err)
		}
		if k2, v2 := records.EncodeRecord(back); !reflect.DeepEqual(k2, k) || !reflect.DeepEqual(v2, v) {
			t.Fatalf("re-encoded record differs:\n %#v\n %#v", r, back)
		}
		if cm, ok := r.Value.(records.StreamsGroupMemberMetadataValue); ok && !cm.Classic.Equal(back.Value.(records.StreamsGroupMemberMetadataValue).Classic) {
			t.Fatalf("classic metadata lost: %#v", back)
		}
		switch val := r.Value.(type) {
		case records.StreamsGroupMemberMetadataValue:
			if val.Classic != nil {
				classicMembers++
			}
		case records.GroupMetadataValue:
			if val.Version == 4 {
				v4++
				for _, m := range val.Members {
					if m.MigrationEpoch == nil {
						t.Fatalf("downgrade member %s without its epoch", m.MemberID)
					}
				}
			}
		}
	}
	if classicMembers == 0 || v4 == 0 {
		t.Fatalf("log has %d classic member records and %d v4 GroupMetadata", classicMembers, v4)
	}
}

// TestMigrationRecordsReadByKafka has Kafka 4.4's own record classes decode
// every record of a migration (extensions included) and re-serialize it:
// the bytes must be identical, i.e. Kafka reads coordhost's tagged fields
// as unknown tags and keeps them (a Kafka broker can load such a log).
func TestMigrationRecordsReadByKafka(t *testing.T) {
	testtool.Require(t, "java")
	var lines []string
	for i, r := range migrationLog(t) {
		k, v := records.EncodeRecord(r)
		vh := "-"
		if v != nil {
			vh = hex.EncodeToString(v)
		}
		lines = append(lines, fmt.Sprintf("mig-%d %x %s", i, k, vh))
	}
	kafkaReserializes(t, lines)
}

// FuzzDecodeMigrationRecords fuzzes the record decoder from the records of
// a migration (coordhost's tagged fields 1000 included): no panic, and an
// accepted record re-encodes to bytes that decode to the same record.
func FuzzDecodeMigrationRecords(f *testing.F) {
	for _, r := range migrationLog(&propRecorder{}) {
		k, v := records.EncodeRecord(r)
		f.Add(k, v, v == nil)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		rec, err := records.DecodeRecord(key, value)
		if err != nil {
			return
		}
		k, v := records.EncodeRecord(rec)
		again, err := records.DecodeRecord(k, v)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if k2, v2 := records.EncodeRecord(again); !reflect.DeepEqual(k2, k) || !reflect.DeepEqual(v2, v) {
			t.Fatalf("re-encode is not stable:\n %x\n %x", v, v2)
		}
	})
}

// TestClassicMemberLags: a classic member's offset sums (running actives
// and unknown sums left out) and the host-provided end offsets reach the
// assignor (in another member's entry: c1 reported none with its
// offsets); a task without an end offset has none (never caught up).
func TestClassicMemberLags(t *testing.T) {
	s := newMigSim(t, 4)
	c1 := s.inst("c1", 1, true)
	s.settle(20)
	c1.standby = taskSet{{"0", 1}: {}, {"0", 2}: {}} // the sim reports 100 for these
	c1.owned = taskSet{{"0", 0}: {}}
	s.inst("s2", 2, false)
	s.act(c1) // heartbeat, then a rejoin after the conversion
	s.act(s.insts[1])
	s.finish(s.c.updateEndOffsets(s.now, "g", []TaskEndOffset{{Task: TaskID{"0", 1}, Offset: 500}}))
	c1.rejoin = true
	s.act(c1)
	g := s.c.groups["g"].(*streamsGroup)
	in := s.c.assignInput(g)
	var got *AssignMember
	for i := range in.Members {
		if in.Members[i].MemberID == c1.memberID {
			got = &in.Members[i]
		}
	}
	if got == nil {
		t.Fatalf("c1 not in the assignor input: %+v", in.Members)
	}
	want := []TaskOffset{{Task: TaskRef{0, 1}, Offset: 100}, {Task: TaskRef{0, 2}, Offset: 100}}
	if !reflect.DeepEqual(got.TaskOffsets, want) {
		t.Errorf("offsets %+v, want %+v", got.TaskOffsets, want)
	}
	// c1 reported no end offsets: it carries the group's (the host's
	// 500) for 0_1, where its offset is below it, so the assignor measures
	// it against the group's even if no other member carried it; 0_2 has
	// no known end.
	if want := []TaskOffset{{Task: TaskRef{0, 1}, Offset: 500}}; !reflect.DeepEqual(got.TaskEndOffsets, want) {
		t.Errorf("c1's end offsets %+v, want %+v", got.TaskEndOffsets, want)
	}
	ends := map[TaskRef]int64{}
	for _, m := range in.Members {
		for _, o := range m.TaskEndOffsets {
			ends[o.Task] = max(ends[o.Task], o.Offset)
		}
	}
	if want := map[TaskRef]int64{{0, 1}: 500}; !reflect.DeepEqual(ends, want) {
		t.Errorf("largest end offsets passed %v, want %v", ends, want)
	}
}
