package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// writeFormat3 writes, with bbolt directly, a store as coordhosts before
// format 4 left it: records (key -> seq crc value, a long key under its
// hash), the global sequence index and one index per partition.
func writeFormat3(t *testing.T, path string, parts int, recs []struct {
	p          int
	key, value string
}) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket(bucketMeta)
		records, _ := tx.CreateBucket(bucketRecords)
		bySeq, _ := tx.CreateBucket(bucketBySeq)
		root, _ := tx.CreateBucket(bucketPartitions)
		idx := make([]*bolt.Bucket, parts)
		for p := range idx {
			idx[p], _ = root.CreateBucket(partName(p))
		}
		for i, r := range recs {
			seq := binary.BigEndian.AppendUint64(nil, uint64(i+1))
			key := storeKey([]byte(r.key))
			records.Put(key, encodeValue(uint64(i+1), []byte(r.key), []byte(r.value)))
			bySeq.Put(seq, key)
			idx[r.p].Put(seq, key)
		}
		meta.Put(keyFormat, binary.BigEndian.AppendUint32(nil, formatVersionHashedKeys))
		meta.Put(keyPartitions, binary.BigEndian.AppendUint32(nil, uint32(parts)))
		return meta.Put(keyNextSeq, binary.BigEndian.AppendUint64(nil, uint64(len(recs)+1)))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFormat3StoreConvertsToLogsOnce: a store of format 3 (records and
// sequence indexes, a long key under its hash) opens as format 4 with
// every record in its partition's log in sequence order, the global
// replay unchanged; the next open does not convert again, appends
// replace and delete the converted records, and Salvage reads the
// result.
func TestFormat3StoreConvertsToLogsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	long := "g/" + strings.Repeat("L", 40<<10)
	writeFormat3(t, path, 2, []struct {
		p          int
		key, value string
	}{{0, "a/1", "x"}, {1, "b/1", "y"}, {0, long, "z"}, {1, "b/2", "w"}, {0, "a/2", "v"}})
	s := openT(t, path)
	var f uint32
	s.db.View(func(tx *bolt.Tx) error { f = binary.BigEndian.Uint32(tx.Bucket(bucketMeta).Get(keyFormat)); return nil })
	if f != formatVersionLogs {
		t.Fatalf("format %d after open, want %d", f, formatVersionLogs)
	}
	if s.Partitions() != 2 || s.RecordsAtOpen() != 5 {
		t.Fatalf("%d partitions, %d records at open", s.Partitions(), s.RecordsAtOpen())
	}
	p0 := "1 a/1=x;3 g/LLLLLL..(40962)=z;5 a/2=v;"
	if got := longEntries(t, s, 0); got != p0 {
		t.Fatalf("partition 0: %q, want %q", got, p0)
	}
	if got := longEntries(t, s, 1); got != "2 b/1=y;4 b/2=w;" {
		t.Fatalf("partition 1: %q", got)
	}
	var seqs []uint64
	for _, e := range replayAll(t, s) {
		seqs = append(seqs, e.Seq)
	}
	if len(seqs) != 5 || seqs[0] != 1 || seqs[4] != 5 || seqs[2] != 3 {
		t.Fatalf("global replay order %v", seqs)
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketRecords, bucketBySeq, bucketPartitions} {
			if tx.Bucket(b) != nil {
				return errors.New("bucket " + string(b) + " left after the conversion")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = openT(t, path)
	if got := longEntries(t, s, 0); got != p0 {
		t.Fatalf("partition 0 after reopen: %q", got)
	}
	if err := s.AppendPartitions([]PartitionBatch{{Partition: 0, Records: []Record{{Key: []byte("a/1"), Value: []byte("x2")}, {Key: []byte(long)}}}}); err != nil {
		t.Fatal(err)
	}
	if got := longEntries(t, s, 0); got != "5 a/2=v;6 a/1=x2;" {
		t.Fatalf("partition 0 after appends: %q", got)
	}
	s.Close()
	sal, err := Salvage(path)
	if err != nil || sal.Unreadable != nil || len(sal.Dropped) != 0 || len(sal.Records) != 4 || !bytes.Equal(sal.Records[3].Key, []byte("a/1")) {
		t.Fatalf("salvage: %+v %v", sal, err)
	}
}

// TestOpenRefusesLogsThatDisagreeWithTheirKeys: a log entry removed, or
// one damaged in place, fails Open with ErrCorrupt.
func TestOpenRefusesLogsThatDisagreeWithTheirKeys(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(log *bolt.Bucket) error
		want   string
	}{
		{"entry removed", func(log *bolt.Bucket) error { return log.Delete(binary.BigEndian.AppendUint64(nil, 3)) }, "1 keys but 0 entries"},
		{"entry damaged", func(log *bolt.Bucket) error {
			raw := encodeEntry([]byte("a/2"), []byte("v"))
			raw[len(raw)-1] ^= 1
			return log.Put(binary.BigEndian.AppendUint64(nil, 3), raw)
		}, "checksum mismatch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "coordhost.db")
			s := openT(t, path)
			if err := s.Partition(1, testGroup); err != nil {
				t.Fatal(err)
			}
			if err := s.AppendPartitions([]PartitionBatch{{Partition: 0, Records: []Record{{Key: []byte("a/1"), Value: []byte("x")}}}}); err != nil {
				t.Fatal(err)
			}
			if err := s.AppendPartitions([]PartitionBatch{{Partition: 0, Records: []Record{{Key: []byte("a/1")}, {Key: []byte("a/2"), Value: []byte("v")}}}}); err != nil {
				t.Fatal(err)
			}
			if err := s.db.Update(func(tx *bolt.Tx) error { return c.damage(tx.Bucket(bucketLogs).Bucket(partName(0))) }); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if _, err := Open(path); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("open: %v, want ErrCorrupt with %q", err, c.want)
			}
		})
	}
}
