package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Group-config records: the runtime per-group configuration set through
// Kafka's config APIs (IncrementalAlterConfigs / AlterConfigs on GROUP
// resources). Kafka keeps these in its metadata log, not in
// __consumer_offsets, so they are not core records: the host writes them in
// the same log, under keys core's records can never have, and replays them
// itself.
//
//	key   = 0xFF 0xFF 'g' 'c' group-id bytes   (core keys start with a record type >= 0)
//	value = version(1 byte, 0) count(uvarint) count × (name, value)
//	        where each string is uvarint length + bytes, names strictly ascending
//
// A tombstone (nil value) removes the group's last runtime value.

var groupConfigPrefix = []byte{0xFF, 0xFF, 'g', 'c'}

// maxGroupConfigEntries bounds the decoded entry count (there are a few
// dozen keys; a larger count is damage).
const maxGroupConfigEntries = 1024

// GroupConfigKey is the record key of group's runtime configuration.
func GroupConfigKey(group string) []byte {
	return append(bytes.Clone(groupConfigPrefix), group...)
}

// GroupConfigGroup returns the group of a group-config record key, and
// false for any other key (a core record).
func GroupConfigGroup(key []byte) (string, bool) {
	g, ok := bytes.CutPrefix(key, groupConfigPrefix)
	if !ok {
		return "", false // no copy of a core record's key (replay asks for every record)
	}
	return string(g), true
}

// EncodeGroupConfig encodes a group's runtime values (nil for an empty
// set: the record is then a tombstone).
func EncodeGroupConfig(values map[string]string) []byte {
	if len(values) == 0 {
		return nil
	}
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	sort.Strings(names)
	out := []byte{0}
	out = binary.AppendUvarint(out, uint64(len(names)))
	for _, k := range names {
		out = appendString(out, k)
		out = appendString(out, values[k])
	}
	return out
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// DecodeGroupConfig decodes a group-config record value; damaged bytes
// are an error wrapping ErrCorrupt, never a panic.
func DecodeGroupConfig(b []byte) (map[string]string, error) {
	bad := func(why string) error { return fmt.Errorf("group config record: %w: %s", ErrCorrupt, why) }
	if len(b) == 0 {
		return nil, bad("empty value")
	}
	if b[0] != 0 {
		return nil, bad(fmt.Sprintf("unknown version %d", b[0]))
	}
	b = b[1:]
	n, k := uvarint(b)
	if k <= 0 || n == 0 || n > maxGroupConfigEntries {
		return nil, bad("bad entry count")
	}
	b = b[k:]
	out := make(map[string]string, n)
	prev := ""
	for i := uint64(0); i < n; i++ {
		var name, val string
		var err error
		if name, b, err = readString(b); err != nil {
			return nil, bad(fmt.Sprintf("entry %d name: %v", i, err))
		}
		if val, b, err = readString(b); err != nil {
			return nil, bad(fmt.Sprintf("entry %d (%s) value: %v", i, name, err))
		}
		if i > 0 && name <= prev {
			return nil, bad(fmt.Sprintf("entry %d: names not strictly ascending (%q after %q)", i, name, prev))
		}
		out[name], prev = val, name
	}
	if len(b) != 0 {
		return nil, bad(fmt.Sprintf("%d trailing bytes", len(b)))
	}
	return out, nil
}

// uvarint reads a minimally encoded uvarint (k <= 0: none).
func uvarint(b []byte) (uint64, int) {
	n, k := binary.Uvarint(b)
	if k > 0 && k != len(binary.AppendUvarint(nil, n)) {
		return 0, -1
	}
	return n, k
}

func readString(b []byte) (string, []byte, error) {
	n, k := uvarint(b)
	if k <= 0 {
		return "", nil, errors.New("bad length")
	}
	b = b[k:]
	if n > uint64(len(b)) {
		return "", nil, fmt.Errorf("length %d past the end", n)
	}
	return string(b[:n]), b[n:], nil
}
