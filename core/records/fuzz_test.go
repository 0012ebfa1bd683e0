package records

import (
	"bytes"
	"os"
	"reflect"
	"testing"
	"unsafe"

	"github.com/coordhost/coordhost/core/records/recordstest"
)

// goldenFiles are the records Kafka 4.4's classes wrote (testdata/records).
var goldenFiles = []string{
	"../../testdata/records/streams.golden",
	"../../testdata/records/consumer.golden",
	"../../testdata/records/classic.golden",
}

func load(tb testing.TB, path string) []recordstest.Golden {
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return recordstest.Parse(tb, data)
}

// FuzzDecodeRecord feeds arbitrary key/value bytes to the record decoder:
// it must never panic, whatever it accepts must survive a re-encode, and
// a Decoder (which shares repeated ids) must decode the same.
func FuzzDecodeRecord(f *testing.F) {
	for _, path := range goldenFiles {
		for _, g := range load(f, path) {
			f.Add(g.Key, g.Value, g.Value == nil)
		}
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		rec, err := DecodeRecord(key, value)
		var d Decoder
		var first Record
		for i := range 2 {
			shared, derr := d.Decode(key, value)
			if (derr == nil) != (err == nil) || !reflect.DeepEqual(shared, rec) {
				t.Fatalf("Decoder: %#v, %v; DecodeRecord: %#v, %v", shared, derr, rec, err)
			}
			if i == 0 {
				first = shared
			}
		}
		if !reflect.DeepEqual(first, rec) { // its slabs hand out no byte twice
			t.Fatalf("a Decoder's second decode changed its first record: %#v, want %#v", first, rec)
		}
		if err != nil {
			return
		}
		k, v := EncodeRecord(rec)
		again, err := DecodeRecord(k, v)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !reflect.DeepEqual(rec, again) {
			t.Fatalf("re-encode changed the record:\n %#v\n %#v", rec, again)
		}
	})
}

// TestGoldenRoundTrip decodes every record Kafka wrote, of every kind,
// and re-encodes it to identical bytes.
func TestGoldenRoundTrip(t *testing.T) {
	n := 0
	for _, path := range goldenFiles {
		for _, g := range load(t, path) {
			rec, err := DecodeRecord(g.Key, g.Value)
			if err != nil {
				t.Fatalf("%s %s: %v", path, g.Name, err)
			}
			k, v := EncodeRecord(rec)
			if !reflect.DeepEqual(k, g.Key) || !reflect.DeepEqual(v, g.Value) {
				t.Errorf("%s %s: re-encoded\n key %x value %x\nwant key %x value %x", path, g.Name, k, v, g.Key, g.Value)
			}
			n++
		}
	}
	if n < 30 {
		t.Fatalf("only %d golden records", n)
	}
}

// TestDecoderSharesIDs: a Decoder decodes the golden records exactly as
// DecodeRecord does, and consecutive keys of one group share one group id
// string, as the keys of one member share one member id.
func TestDecoderSharesIDs(t *testing.T) {
	var d Decoder
	for _, path := range goldenFiles {
		for _, g := range load(t, path) {
			want, err := DecodeRecord(g.Key, g.Value)
			got, derr := d.Decode(g.Key, g.Value)
			if err != nil || derr != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: Decoder %#v, %v; DecodeRecord %#v, %v", g.Name, got, derr, want, err)
			}
		}
	}
	// Many records from one Decoder, their bytes overwritten after each
	// decode as a lent store page would be: every one still equals its
	// own decode, across many slabs of strings and arrays.
	var kept, want []Record
	for range 200 {
		for _, path := range goldenFiles {
			for _, g := range load(t, path) {
				k, v := bytes.Clone(g.Key), bytes.Clone(g.Value)
				got, err := d.Decode(k, v)
				if err != nil {
					t.Fatal(err)
				}
				kept = append(kept, got)
				w, _ := DecodeRecord(g.Key, g.Value)
				want = append(want, w)
				for i := range k {
					k[i] = 0xff
				}
				for i := range v {
					v[i] = 0xff
				}
			}
		}
	}
	for i := range kept {
		if !reflect.DeepEqual(kept[i], want[i]) {
			t.Fatalf("record %d changed after later decodes: %#v, want %#v", i, kept[i], want[i])
		}
	}
	key := func(r Record) []byte { k, _ := EncodeRecord(r); return k }
	a, _ := d.Decode(key(Record{Key: StreamsGroupMemberMetadataKey{GroupID: "app", MemberID: "m1"}}), nil)
	b, _ := d.Decode(key(Record{Key: StreamsGroupTargetAssignmentMemberKey{GroupID: "app", MemberID: "m2"}}), nil)
	c, _ := d.Decode(key(Record{Key: StreamsGroupCurrentMemberAssignmentKey{GroupID: "app", MemberID: "m1"}}), nil)
	e, _ := d.Decode(key(Record{Key: ConsumerGroupMetadataKey{GroupID: "other"}}), nil)
	ak, ck := a.Key.(StreamsGroupMemberMetadataKey), c.Key.(StreamsGroupCurrentMemberAssignmentKey)
	if unsafe.StringData(ak.GroupID) != unsafe.StringData(b.Key.Group()) || unsafe.StringData(ak.GroupID) != unsafe.StringData(ck.GroupID) {
		t.Error("keys of one group do not share the group id")
	}
	if unsafe.StringData(ak.MemberID) != unsafe.StringData(ck.MemberID) {
		t.Error("keys of one member do not share the member id")
	}
	if e.Key.Group() != "other" || ck.MemberID != "m1" || b.Key.(StreamsGroupTargetAssignmentMemberKey).MemberID != "m2" {
		t.Errorf("wrong ids: %#v %#v %#v", e.Key, ck, b.Key)
	}
}
