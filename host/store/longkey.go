package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"
)

// Long keys: a record key may be longer than bbolt's key limit (a core
// record key can hold a group id and a member id, each up to Kafka's
// 32,767 bytes). Such a record is indexed under a fixed-size key, the
// reserved byte 0xFE followed by the SHA-256 of the full key; a key that
// itself starts with 0xFE is indexed the same way whatever its length, so
// a stored key names one record key only. In format 4 (logs.go) the
// index is the keys bucket and the partition log's entry carries the
// full key. Format 3 (converted at open) kept such a record as
//
//	records: 0xFE sha256(key) -> seq(8) crc32c(4) keylen(4) key value
//
// with the checksum covering keylen, key and value. No key written before
// format 3 starts with 0xFE (core keys start with a record type >= 0,
// group-config keys with 0xFF).

const (
	hashedKeyPrefix = 0xFE
	hashedKeyLen    = 1 + sha256.Size
	// valueHeader is seq(8) crc32c(4); a hashed record adds keylen(4).
	valueHeader = 12
	// MaxRecordSize bounds what the store can hold of one record: its
	// key and value together (bbolt's value limit less the headers). A
	// larger record is refused.
	MaxRecordSize = bolt.MaxValueSize - valueHeader - 4
)

// hashedKey reports whether key is stored under its hash.
func hashedKey(key []byte) bool {
	return len(key) > bolt.MaxKeySize || (len(key) > 0 && key[0] == hashedKeyPrefix)
}

// storeKey is the bbolt key of record key key.
func storeKey(key []byte) []byte {
	if !hashedKey(key) {
		return key
	}
	sum := sha256.Sum256(key)
	return append([]byte{hashedKeyPrefix}, sum[:]...)
}

// encodeValue is the stored value of record key = v written at seq.
func encodeValue(seq uint64, key, v []byte) []byte {
	n := valueHeader + len(v)
	if hashedKey(key) {
		n += 4 + len(key)
	}
	out := make([]byte, valueHeader, n)
	binary.BigEndian.PutUint64(out, seq)
	if hashedKey(key) {
		out = binary.BigEndian.AppendUint32(out, uint32(len(key)))
		out = append(out, key...)
	}
	out = append(out, v...)
	binary.BigEndian.PutUint32(out[8:], crc32.Checksum(out[valueHeader:], castagnoli))
	return out
}

// splitValue returns the record key and value of a stored entry whose
// checksum verified: stored is its bbolt key and payload what follows
// the header. A hashed entry must carry a key that hashes to stored.
func splitValue(stored, payload []byte) (key, value []byte, err error) {
	if len(stored) == 0 || stored[0] != hashedKeyPrefix {
		if hashedKey(stored) {
			return nil, nil, fmt.Errorf("key of %d bytes stored without its hash", len(stored))
		}
		return stored, payload, nil
	}
	if len(stored) != hashedKeyLen {
		return nil, nil, fmt.Errorf("reserved key %x of %d bytes", shortKey(stored), len(stored))
	}
	if len(payload) < 4 {
		return nil, nil, errors.New("hashed record without its key length")
	}
	n := uint64(binary.BigEndian.Uint32(payload))
	if n > uint64(len(payload)-4) {
		return nil, nil, fmt.Errorf("hashed record's key of %d bytes overruns its %d-byte record", n, len(payload))
	}
	key, value = payload[4:4+n], payload[4+n:]
	if !hashedKey(key) || !bytes.Equal(storeKey(key), stored) {
		return nil, nil, fmt.Errorf("key %x: the record's key does not hash to it", shortKey(stored))
	}
	return key, value, nil
}

// shortKey bounds a key quoted in an error.
func shortKey(k []byte) []byte {
	if len(k) > 64 {
		return k[:64]
	}
	return k
}
