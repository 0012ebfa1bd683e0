package kafkalog

import (
	"bytes"
	"testing"

	"github.com/coordhost/coordhost/host/runtime"
)

// FuzzDecodeValue: any value read from the state topic decodes or fails,
// never panics, and a value this package wrote decodes to what it held.
func FuzzDecodeValue(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{formatVersion})
	f.Add([]byte{formatVersion, 'v'})
	f.Add([]byte{2, 'v'})
	f.Fuzz(func(t *testing.T, v []byte) {
		got, err := decodeValue(v)
		if err == nil && len(v) > 0 && !bytes.Equal(encodeValue(got), v) {
			t.Fatalf("%x decoded to %x, which encodes to %x", v, got, encodeValue(got))
		}
		back, err := decodeValue(encodeValue(v))
		if err != nil || !bytes.Equal(back, v) || (back == nil) != (v == nil) {
			t.Fatalf("%x round-tripped to %x, %v", v, back, err)
		}
	})
}

// TestSplitKeepsBatchesUnderMax: runs cover the records in order and each
// run's batch fits max (a lone record may only exceed it when it does
// alone, which Validate refuses before).
func TestSplitKeepsBatchesUnderMax(t *testing.T) {
	var recs []runtime.Record
	for i := 0; i < 50; i++ {
		recs = append(recs, runtime.Record{Key: []byte{byte(i)}, Value: bytes.Repeat([]byte{1}, i*10)})
	}
	const max = 1000
	var n int
	for _, run := range split(recs, max) {
		b := batch{pid: 1, epoch: 0}.encode(run)
		if len(b) > max && len(run) > 1 {
			t.Fatalf("a run of %d records encodes to %d bytes", len(run), len(b))
		}
		if !bytes.Equal(run[0].Key, recs[n].Key) {
			t.Fatalf("run starts at key %x, want %x", run[0].Key, recs[n].Key)
		}
		n += len(run)
	}
	if n != len(recs) {
		t.Fatalf("runs cover %d records of %d", n, len(recs))
	}
}
