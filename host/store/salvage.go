package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Salvaged is what Salvage could read from a damaged store.
type Salvaged struct {
	// Partitions is the partition count recorded in the file (0: not
	// partitioned, or unreadable).
	Partitions int
	// Records are the records whose header and checksum verify, in the
	// order of their last writes.
	Records []Entry
	// Dropped are the records found whose header or checksum does not
	// verify.
	Dropped []DroppedRecord
	// Unreadable is why the file, or a part of it, could not be read at
	// all; the records in that part are lost and their count is unknown.
	Unreadable error
}

// DroppedRecord is a record Salvage found but could not verify.
type DroppedRecord struct {
	Key []byte
	Why string
}

// Salvage reads the store file at path read-only, without trusting its
// free-page list (bbolt's consistency check is not run: it panics on a
// goroutine of its own on some damaged pages): every record whose
// checksum verifies and whose key an index confirms (a sequence index,
// or in format 4 the keys index) is kept, every other record found is
// listed as dropped. It never writes
// the file. It fails only when path cannot be opened as a file at all, or
// when another process (a running coordhost) holds the store.
func Salvage(path string) (out *Salvaged, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	out = &Salvaged{}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a damaged length can point outside the mapped file
	if fi.Size() == 0 {
		out.Unreadable = errors.New("the file is empty (0 bytes)")
		return out, nil
	}
	defer func() {
		p := recover()
		if out == nil { // refused before reading
			return
		}
		if p != nil { // bbolt panics on some damaged pages
			out.Unreadable = fmt.Errorf("reading stopped at a damaged page: %v", p)
		}
		sort.SliceStable(out.Records, func(i, j int) bool { return out.Records[i].Seq < out.Records[j].Seq })
	}()
	if err := salvageMeta(path); err != nil {
		out.Unreadable = err
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("store %s: locked by another process (stop coordhost before repairing its store)", path)
	}
	if err != nil {
		out.Unreadable = err
		return out, nil
	}
	if db, err = withoutDamagedPages(db, path, out); err != nil {
		out.Unreadable = err
		return out, nil
	}
	defer db.Close()
	// The checksum covers a record's value, not its bbolt key (a hashed
	// key's full key is in the value, and must hash to it): a key is kept
	// only when a sequence index (the global one or its partition's, each
	// read on its own so that one damaged index does not hide the other)
	// names it under the sequence number its record carries.
	if salvageLogs(db, out) {
		return out, nil
	}
	indexed := map[uint64][][]byte{}
	readIndex := func(get func(tx *bolt.Tx) *bolt.Bucket) {
		defer func() { _ = recover() }()
		_ = db.View(func(tx *bolt.Tx) error {
			idx := get(tx)
			if idx == nil {
				return nil
			}
			return idx.ForEach(func(k, v []byte) error {
				if len(k) == 8 && v != nil {
					seq := binary.BigEndian.Uint64(k)
					indexed[seq] = append(indexed[seq], bytes.Clone(v))
				}
				return nil
			})
		})
	}
	readIndex(func(tx *bolt.Tx) *bolt.Bucket { return tx.Bucket(bucketBySeq) })
	_ = db.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			if v := meta.Get(keyPartitions); len(v) == 4 {
				out.Partitions = int(binary.BigEndian.Uint32(v))
			}
		}
		return nil
	})
	for p := 0; p < out.Partitions; p++ {
		readIndex(func(tx *bolt.Tx) *bolt.Bucket {
			if root := tx.Bucket(bucketPartitions); root != nil {
				return root.Bucket(partName(p))
			}
			return nil
		})
	}
	confirmed := func(seq uint64, key []byte) bool {
		for _, k := range indexed[seq] {
			if bytes.Equal(k, key) {
				return true
			}
		}
		return false
	}
	err = db.View(func(tx *bolt.Tx) error {
		recs := tx.Bucket(bucketRecords)
		if recs == nil {
			return errors.New("no records bucket")
		}
		return recs.ForEach(func(k, v []byte) error {
			switch {
			case len(v) < valueHeader:
				out.Dropped = append(out.Dropped, DroppedRecord{Key: bytes.Clone(k), Why: "shorter than its header"})
				return nil
			case crc32.Checksum(v[valueHeader:], castagnoli) != binary.BigEndian.Uint32(v[8:12]):
				out.Dropped = append(out.Dropped, DroppedRecord{Key: bytes.Clone(k), Why: "checksum mismatch"})
				return nil
			case !confirmed(binary.BigEndian.Uint64(v), k):
				out.Dropped = append(out.Dropped, DroppedRecord{Key: bytes.Clone(k), Why: "key not confirmed by a sequence index"})
				return nil
			}
			key, value, err := splitValue(k, v[valueHeader:])
			if err != nil {
				out.Dropped = append(out.Dropped, DroppedRecord{Key: bytes.Clone(k), Why: err.Error()})
				return nil
			}
			out.Records = append(out.Records, Entry{Seq: binary.BigEndian.Uint64(v), Key: bytes.Clone(key), Value: bytes.Clone(value)})
			return nil
		})
	})
	if err != nil {
		out.Unreadable = err
	}
	return out, nil
}

// withoutDamagedPages returns db, the store file at path opened
// read-only, when none of its pages in use holds an element outside its
// bounds (walkPages); bbolt must not read such a page (checkPageSpans).
// Otherwise it closes db and opens instead a copy of the file, in the
// temporary directory and removed when the copy is closed, where each
// such page holds no element, and says which in out.Unreadable: their
// records are lost (those the keys index names are listed as dropped).
func withoutDamagedPages(db *bolt.DB, path string, out *Salvaged) (*bolt.DB, error) {
	damaged, ids := pagesDamaged(path)
	if len(ids) == 0 {
		return db, nil
	}
	pageSize := int64(db.Info().PageSize)
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if at := int64(id) * pageSize; id >= 2 && at+pageSize <= int64(len(b)) { // never a meta page
			binary.LittleEndian.PutUint16(b[at+10:], 0) // the page's element count
		}
	}
	tmp, err := os.CreateTemp("", "coordhost-salvage-*.db")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // the open file stays readable until closed
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if out.Unreadable == nil {
		out.Unreadable = fmt.Errorf("pages hold elements outside their bounds and were not read (%s)", strings.Join(damaged, "; "))
	}
	return bolt.Open(tmp.Name(), 0o400, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
}

// pagesDamaged lists the pages walkPages finds wrong in the file at
// path. It reads the free-page list (with a handle of its own: Salvage's
// does not trust that list) only when the list's page is sound
// (freelistDamage); otherwise it reads every page's header as a page in
// use. When the file cannot be walked it lists nothing, and Salvage
// reads the file as it is.
func pagesDamaged(path string) (damaged []string, ids []int) {
	defer func() {
		if recover() != nil {
			damaged, ids = nil, nil
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	trustList := metaDamage(f) == nil && freelistDamage(f) == nil
	f.Close()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, PreLoadFreelist: trustList, Timeout: 2 * time.Second})
	if err != nil {
		return nil, nil
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		var free func(id int) (bool, error)
		if trustList {
			free = func(id int) (bool, error) {
				p, err := tx.Page(id)
				return err == nil && p != nil && p.Type == "free", err
			}
		}
		return walkPages(path, tx.Size(), db.Info().PageSize, free, func(id int, why string) error {
			damaged, ids = append(damaged, fmt.Sprintf("page %d: %s", id, why)), append(ids, id)
			return nil
		})
	})
	if err != nil {
		return nil, nil
	}
	return damaged, ids
}

// salvageMeta says why the meta pages of the file at path cannot be
// trusted (metaDamage): bbolt then reads the file as of an earlier
// transaction, so what later ones wrote is lost, its count unknown, and
// a record may be kept at an earlier value.
func salvageMeta(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := metaDamage(f); err != nil {
		return fmt.Errorf("%v: the file is read as of an earlier transaction; what later ones wrote is lost "+
			"(its count is unknown) and a record may be kept at an earlier value", err)
	}
	return nil
}

// salvageLogs is Salvage of a store of format 4 (it reports false for
// another format): every log entry whose checksum verifies and whose key
// the keys index names under the entry's sequence number is kept. Each
// partition's log, and the keys index, is read on its own, so that one
// damaged part does not hide the others; every log under the logs
// bucket is read, whatever partition count the meta bucket says. A key
// the keys index names whose entry was neither kept nor dropped (its
// log, or its part of it, is gone) is listed as dropped too.
func salvageLogs(db *bolt.DB, out *Salvaged) bool {
	logs := false
	var parts []uint32
	_ = db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketLogs)
		if logs = root != nil; logs {
			_ = root.ForEachBucket(func(name []byte) error {
				if len(name) == 4 {
					parts = append(parts, binary.BigEndian.Uint32(name))
				}
				return nil
			})
		}
		if meta := tx.Bucket(bucketMeta); meta != nil {
			if v := meta.Get(keyPartitions); len(v) == 4 {
				out.Partitions = int(binary.BigEndian.Uint32(v))
			}
		}
		return nil
	})
	if !logs {
		return false
	}
	seqOf, keyAt := map[string]uint64{}, map[uint64]string{}
	seen := map[string]bool{} // stored keys kept or dropped
	guarded := func(fn func(tx *bolt.Tx) error) {
		defer func() {
			if p := recover(); p != nil && out.Unreadable == nil {
				out.Unreadable = fmt.Errorf("reading stopped at a damaged page: %v", p)
			}
		}()
		if err := db.View(fn); err != nil && out.Unreadable == nil {
			out.Unreadable = err
		}
	}
	guarded(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketKeys)
		if keys == nil {
			return errors.New("no keys bucket")
		}
		return keys.ForEach(func(k, v []byte) error {
			if len(v) == 8 {
				seqOf[string(k)] = binary.BigEndian.Uint64(v)
				keyAt[binary.BigEndian.Uint64(v)] = string(k)
			}
			return nil
		})
	})
	// drop lists a damaged entry, at log key k: the record the keys
	// index names under k's sequence number is the same record.
	drop := func(k, key []byte, why string) {
		out.Dropped = append(out.Dropped, DroppedRecord{Key: bytes.Clone(key), Why: why})
		if len(k) == 8 {
			seen[keyAt[binary.BigEndian.Uint64(k)]] = true
		}
		if key != nil {
			seen[string(storeKey(key))] = true
		}
	}
	for _, p := range parts {
		guarded(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketLogs).Bucket(binary.BigEndian.AppendUint32(nil, p)).ForEach(func(k, raw []byte) error {
				key, value, err := splitEntry(raw)
				switch {
				case len(k) != 8:
					drop(nil, k, "log key is not a sequence number")
				case err != nil:
					drop(k, entryKey(raw), err.Error())
				default:
					seq, ok := seqOf[string(storeKey(key))]
					if !ok || seq != binary.BigEndian.Uint64(k) {
						drop(k, key, "key not confirmed by the keys index")
						return nil
					}
					seen[string(storeKey(key))] = true
					out.Records = append(out.Records, Entry{Seq: seq, Key: bytes.Clone(key), Value: bytes.Clone(value)})
				}
				return nil
			})
		})
	}
	for k := range seqOf {
		if !seen[k] {
			key := []byte(k)
			if hashedKey(key) {
				key = nil // the record key is in the lost entry; the hash names no group
			}
			out.Dropped = append(out.Dropped, DroppedRecord{Key: key, Why: "named by the keys index, but no log entry of it was found"})
		}
	}
	return true
}

// entryKey is the key a damaged log entry names, when its length fits
// (nil otherwise).
func entryKey(raw []byte) []byte {
	if len(raw) < entryHeader {
		return nil
	}
	n := uint64(binary.BigEndian.Uint32(raw[4:]))
	if n > uint64(len(raw)-entryHeader) {
		return nil
	}
	return raw[entryHeader : entryHeader+n]
}
