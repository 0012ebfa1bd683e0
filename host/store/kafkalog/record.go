package kafkalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/runtime"
)

// Record format. A runtime record is one Kafka record: its key is the
// runtime record's key, byte for byte (the identity the bbolt store keys
// by, so compaction keeps exactly the latest write of each record), and
// its value is the runtime value behind a one-byte format version:
//
//	value = formatVersion(1) runtime-value
//
// A tombstone is a Kafka record with a null value, which the broker's
// compaction removes after delete.retention.ms. Every stored value
// carries the version, so a later format can change the value layout
// and a reader refuses a version it does not know instead of misreading
// it.
const formatVersion byte = 1

// errFormat is wrapped by decodeValue for a value this build cannot read.
var errFormat = errors.New("state topic record format")

// encodeValue is the Kafka record value of runtime value v (nil for a
// tombstone).
func encodeValue(v []byte) []byte {
	if v == nil {
		return nil
	}
	out := make([]byte, 1+len(v))
	out[0] = formatVersion
	copy(out[1:], v)
	return out
}

// decodeValue is the runtime value of Kafka record value v: nil for a
// tombstone (a null or empty value), else the value behind the version.
// The bytes come from the cluster, so anything else is an error.
func decodeValue(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if v[0] != formatVersion {
		return nil, fmt.Errorf("%w: version %d, this coordhost reads version %d (written by a newer coordhost?)", errFormat, v[0], formatVersion)
	}
	return v[1:], nil
}

// Sizes of the record batch framing (Kafka's DefaultRecordBatch): a batch
// header of 61 bytes, and per record at most the varints of its length,
// timestamp and offset deltas, key and value lengths, plus attributes and
// the header count.
const (
	batchOverhead  = 61
	recordOverhead = 5 + 1 + 10 + 5 + 5 + 5 + 1
)

// recordSize bounds the bytes record r takes in a batch.
func recordSize(r runtime.Record) int {
	n := recordOverhead + len(r.Key)
	if r.Value != nil {
		n += 1 + len(r.Value)
	}
	return n
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batch is one transactional record batch of a producer.
type batch struct {
	pid   int64
	epoch int16
	seq   int32
	now   int64
}

// encode returns the record batch (magic 2, uncompressed, transactional)
// holding recs, with their offsets 0..len(recs)-1 in the batch.
func (b batch) encode(recs []runtime.Record) []byte {
	var body []byte
	for i, r := range recs {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: encodeValue(r.Value)}
		enc := rec.AppendTo(nil)[1:] // Length 0 took one byte; the body follows it
		body = binary.AppendVarint(body, int64(len(enc)))
		body = append(body, enc...)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2,
		Attributes:      0x10, // transactional
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: b.now, MaxTimestamp: b.now,
		ProducerID: b.pid, ProducerEpoch: b.epoch, FirstSequence: b.seq, NumRecords: int32(len(recs)),
		Records: body,
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))                   // Length: what follows it
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], castagnoli)) // CRC: attributes onwards
	return out
}

// split cuts recs into runs whose batches stay within max bytes.
func split(recs []runtime.Record, max int) [][]runtime.Record {
	var out [][]runtime.Record
	start, size := 0, batchOverhead
	for i, r := range recs {
		n := recordSize(r)
		if i > start && size+n > max {
			out = append(out, recs[start:i])
			start, size = i, batchOverhead
		}
		size += n
	}
	return append(out, recs[start:])
}
