package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	goruntime "runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Partition logs (format 4): a partitioned store keeps each partition's
// records in sequence order, key and value together,
//
//	logs/<partition uint32> : seq(8) -> crc32c(4) keylen(4) key value
//	keys                    : stored key -> seq(8)
//
// with the checksum covering keylen, key and value, and the key stored
// whole (the keys bucket holds a key too long for bbolt under its hash,
// longkey.go). A partition replays with one cursor walk over its log, in
// the order of the pages; a write finds a key's previous entry through
// keys. A key's group, and so its partition, never changes: its previous
// entry is in the same log. Stores of formats 2 and 3 (records, with a
// global and a per-partition sequence index of keys) are converted once,
// when opened; a format-1 store when it is partitioned.
const formatVersionLogs = 4

var (
	bucketLogs = []byte("logs")
	bucketKeys = []byte("keys")
)

// entryHeader is crc32c(4) keylen(4).
const entryHeader = 8

// encodeEntry is the log entry of record key = v.
func encodeEntry(key, v []byte) []byte {
	return appendEntry(make([]byte, 0, entryHeader+len(key)+len(v)), key, v)
}

// appendEntry appends the log entry of key = v to buf.
func appendEntry(buf, key, v []byte) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, entryHeader)...)
	binary.BigEndian.PutUint32(buf[start+4:], uint32(len(key)))
	buf = append(append(buf, key...), v...)
	binary.BigEndian.PutUint32(buf[start:], crc32.Checksum(buf[start+4:], castagnoli))
	return buf
}

// splitEntry returns the key and value of log entry raw after checking
// its checksum and lengths.
func splitEntry(raw []byte) (key, value []byte, err error) {
	if len(raw) < entryHeader {
		return nil, nil, fmt.Errorf("entry of %d bytes, shorter than its header", len(raw))
	}
	if crc32.Checksum(raw[4:], castagnoli) != binary.BigEndian.Uint32(raw) {
		return nil, nil, errors.New("checksum mismatch")
	}
	n := uint64(binary.BigEndian.Uint32(raw[4:]))
	if n == 0 || n > uint64(len(raw)-entryHeader) {
		return nil, nil, fmt.Errorf("a key of %d bytes in an entry of %d", n, len(raw))
	}
	return raw[entryHeader : entryHeader+n], raw[entryHeader+n:], nil
}

// decodeEntry is the Entry of log entry raw at seqKey. Its Key and
// Value are raw's bytes, the transaction's memory, when lend is set, and
// otherwise a copy of them in one allocation.
func (s *Store) decodeEntry(p int, seqKey, raw []byte, lend bool) (Entry, error) {
	if len(seqKey) != 8 {
		return Entry{}, s.corrupt(fmt.Sprintf("partition %d: log key of %d bytes", p, len(seqKey)))
	}
	seq := binary.BigEndian.Uint64(seqKey)
	k, v, err := splitEntry(raw)
	if err != nil {
		return Entry{}, s.corrupt(fmt.Sprintf("partition %d sequence %d: %v", p, seq, err))
	}
	if lend {
		return Entry{Seq: seq, Key: k[:len(k):len(k)], Value: v[:len(v):len(v)]}, nil
	}
	kv := make([]byte, len(k)+len(v))
	copy(kv, k)
	copy(kv[len(k):], v)
	return Entry{Seq: seq, Key: kv[:len(k):len(k)], Value: kv[len(k):]}, nil
}

// replayLog calls fn for every entry of partition p's log, in order,
// lending it the transaction's memory when lend is set.
func (s *Store) replayLog(tx *bolt.Tx, p int, lend bool, fn func(Entry) error) error {
	c := tx.Bucket(bucketLogs).Bucket(partName(p)).Cursor()
	for k, raw := c.First(); k != nil; k, raw = c.Next() {
		e, err := s.decodeEntry(p, k, raw, lend)
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// replayLogs calls fn for every entry of every log in sequence order
// (a merge of the partitions' logs).
func (s *Store) replayLogs(tx *bolt.Tx, fn func(Entry) error) error {
	type head struct {
		p      int
		c      *bolt.Cursor
		k, raw []byte
	}
	heads := make([]*head, 0, s.parts)
	for p := 0; p < s.parts; p++ {
		h := &head{p: p, c: tx.Bucket(bucketLogs).Bucket(partName(p)).Cursor()}
		if h.k, h.raw = h.c.First(); h.k != nil {
			heads = append(heads, h)
		}
	}
	for len(heads) > 0 {
		min := 0
		for i, h := range heads {
			if bytes.Compare(h.k, heads[min].k) < 0 {
				min = i
			}
		}
		h := heads[min]
		e, err := s.decodeEntry(h.p, h.k, h.raw, false)
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
		if h.k, h.raw = h.c.Next(); h.k == nil {
			heads = append(heads[:min], heads[min+1:]...)
		}
	}
	return nil
}

// checkLogs is checkRecords for format 4: every entry's checksum and
// lengths, and the keys index naming exactly the logs' entries, each key
// under its entry's sequence number. The last is checked without a
// lookup a record: both sides are summed, in their own orders, as hashes
// of (stored key, sequence number) pairs. The partitions' logs and the
// keys index are read in parallel, up to GOMAXPROCS at a time, each in
// a read transaction of its own. It returns the entry count.
func (s *Store) checkLogs() (int, error) {
	seed := maphash.MakeSeed()
	jobs := make([]logSum, s.parts+1) // every partition's log, then the keys index
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(goruntime.GOMAXPROCS(0), len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.sumJobs(seed, jobs, &next)
		}()
	}
	wg.Wait()
	n, logs := 0, uint64(0)
	for _, j := range jobs[:s.parts] {
		if j.err != nil {
			return 0, j.err
		}
		n, logs = n+j.n, logs+j.sum
	}
	keys := jobs[s.parts]
	if keys.err != nil {
		return 0, keys.err
	}
	if keys.n != n {
		return 0, s.corrupt(fmt.Sprintf("%d keys but %d entries in the partitions' logs", keys.n, n))
	}
	if keys.sum != logs {
		return 0, s.corrupt("the keys index does not name the partitions' log entries")
	}
	return n, nil
}

// logSum is one job of checkLogs: the entries of a partition's log (or
// of the keys index) and the sum of their pairs' hashes.
type logSum struct {
	n   int
	sum uint64
	err error
}

// sumJobs runs checkLogs' jobs, taking the next from next until none is
// left. A damaged page faults or panics here, on this goroutine, and
// fails its job with ErrCorrupt.
func (s *Store) sumJobs(seed maphash.Seed, jobs []logSum, next *atomic.Int64) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	for t := int(next.Add(1) - 1); t < len(jobs); t = int(next.Add(1) - 1) {
		// The keys index, one job with as many entries as all the
		// logs together, is taken first: taken last, it ran on one
		// core alone once the logs were done.
		i := (t + len(jobs) - 1) % len(jobs)
		func() {
			defer func() {
				if r := recover(); r != nil {
					jobs[i] = logSum{err: s.corrupt(fmt.Sprintf("reading %s: %v", jobName(i, len(jobs)), r))}
				}
			}()
			jobs[i].err = s.db.View(func(tx *bolt.Tx) error {
				if i == len(jobs)-1 {
					return s.sumKeys(tx, seed, &jobs[i])
				}
				return s.sumLog(tx, i, seed, &jobs[i])
			})
		}()
	}
}

func jobName(i, jobs int) string {
	if i == jobs-1 {
		return "the keys index"
	}
	return fmt.Sprintf("partition %d", i)
}

// pairHash is the hash of a (stored key, sequence number) pair.
func pairHash(seed maphash.Seed, key, seq []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.Write(seq)
	h.Write(key)
	return h.Sum64()
}

// sumLog checks every entry of partition p's log into out.
func (s *Store) sumLog(tx *bolt.Tx, p int, seed maphash.Seed, out *logSum) error {
	c := tx.Bucket(bucketLogs).Bucket(partName(p)).Cursor()
	for k, raw := c.First(); k != nil; k, raw = c.Next() {
		if len(k) != 8 || raw == nil {
			return s.corrupt(fmt.Sprintf("partition %d: log key %x", p, shortKey(k)))
		}
		key, _, err := splitEntry(raw)
		if err != nil {
			return s.corrupt(fmt.Sprintf("partition %d sequence %d: %v", p, binary.BigEndian.Uint64(k), err))
		}
		out.sum += pairHash(seed, storeKey(key), k)
		out.n++
	}
	return nil
}

// sumKeys checks every entry of the keys index into out.
func (s *Store) sumKeys(tx *bolt.Tx, seed maphash.Seed, out *logSum) error {
	c := tx.Bucket(bucketKeys).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(v) != 8 {
			return s.corrupt(fmt.Sprintf("key %q: a sequence number of %d bytes", shortKey(k), len(v)))
		}
		out.sum += pairHash(seed, k, v)
		out.n++
	}
	return nil
}

// putLog writes batch into partition p's log from sequence number next
// on and returns the next free one. It looks keys up and deletes through
// one cursor per bucket (bbolt's Get and Delete allocate a cursor each)
// and encodes the batch's sequence numbers and entries into one buffer
// (bbolt holds keys and values until the commit): per record the append
// allocates only inside bbolt's Put.
func (s *Store) putLog(tx *bolt.Tx, p int, batch []Record, next uint64) (uint64, error) {
	keys, log := tx.Bucket(bucketKeys), tx.Bucket(bucketLogs).Bucket(partName(p))
	kc, lc := keys.Cursor(), log.Cursor()
	buf := make([]byte, 0, batchSize(batch))
	stored := make([][]byte, len(batch))
	for i, r := range batch {
		stored[i] = storeKey(r.Key)
	}
	skip := superseded(stored)
	for i, r := range batch {
		key := stored[i]
		if skip != nil && skip[i] {
			next++ // its sequence number stays used: the later write's is as before
			continue
		}
		if k, old := kc.Seek(key); old != nil && bytes.Equal(k, key) {
			if len(old) != 8 {
				return 0, s.corrupt(fmt.Sprintf("key %q: a sequence number of %d bytes", shortKey(key), len(old)))
			}
			if err := deleteAt(lc, old); err != nil {
				return 0, err
			}
			if r.Value == nil {
				if err := kc.Delete(); err != nil {
					return 0, err
				}
			}
		}
		if r.Value == nil {
			next++
			continue
		}
		buf = binary.BigEndian.AppendUint64(buf, next)
		seq := buf[len(buf)-8:]
		if err := keys.Put(key, seq); err != nil {
			return 0, err
		}
		start := len(buf)
		buf = appendEntry(buf, r.Key, r.Value)
		if err := log.Put(seq, buf[start:]); err != nil {
			return 0, err
		}
		next++
	}
	return next, nil
}

// superseded marks the keys that a later key of keys repeats (nil when
// none does). Within one transaction such a write is undone by the later
// one — the log keeps a key's last write only, and replay follows the
// order of last writes — so putLog skips it: a mass expiry's slice
// rewrites its group's metadata record once per fenced member, and each
// rewrite would delete the entry the one before put.
func superseded(keys [][]byte) []bool {
	if len(keys) < 2 {
		return nil
	}
	last := make(map[string]int, len(keys))
	for i, k := range keys {
		last[string(k)] = i
	}
	if len(last) == len(keys) {
		return nil
	}
	skip := make([]bool, len(keys))
	for i, k := range keys {
		skip[i] = last[string(k)] != i
	}
	return skip
}

// batchSize is the size of batch's sequence numbers and log entries.
func batchSize(batch []Record) int {
	n := 0
	for _, r := range batch {
		if r.Value != nil {
			n += 8 + entryHeader + len(r.Key) + len(r.Value)
		}
	}
	return n
}

// deleteAt deletes the log entry at seq through c, as Bucket.Delete does
// (an absent entry is no error).
func deleteAt(c *bolt.Cursor, seq []byte) error {
	if k, _ := c.Seek(seq); !bytes.Equal(k, seq) {
		return nil
	}
	return c.Delete()
}

// toLogs converts tx to format 4 with n partitions: partOf names the
// partition of the record at seq whose stored key is key; the records are
// read in the order of index (seq -> stored key). The records, the
// sequence indexes and the old partition indexes are then dropped.
func (s *Store) toLogs(tx *bolt.Tx, n int, index func(p int) *bolt.Bucket, partOf func(p int, seq, key []byte) (int, error)) error {
	root, err := tx.CreateBucket(bucketLogs)
	if err != nil {
		return err
	}
	logs := make([]*bolt.Bucket, n)
	for p := range logs {
		if logs[p], err = root.CreateBucket(partName(p)); err != nil {
			return err
		}
	}
	keys, err := tx.CreateBucket(bucketKeys)
	if err != nil {
		return err
	}
	rc := tx.Bucket(bucketRecords).Cursor()
	for src := 0; ; src++ {
		idx := index(src)
		if idx == nil {
			break
		}
		c := idx.Cursor()
		for seq, key := c.First(); seq != nil; seq, key = c.Next() {
			found, raw := rc.Seek(key)
			if !bytes.Equal(found, key) {
				raw = nil
			}
			e, err := s.decode(seq, key, raw)
			if err != nil {
				return err
			}
			p, err := partOf(src, seq, e.Key)
			if err != nil {
				return err
			}
			if err := logs[p].Put(bytes.Clone(seq), encodeEntry(e.Key, e.Value)); err != nil {
				return err
			}
			if err := keys.Put(bytes.Clone(key), bytes.Clone(seq)); err != nil {
				return err
			}
		}
	}
	for _, b := range [][]byte{bucketRecords, bucketBySeq, bucketPartitions} {
		if err := tx.DeleteBucket(b); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(keyPartitions, binary.BigEndian.AppendUint32(nil, uint32(n))); err != nil {
		return err
	}
	return meta.Put(keyFormat, binary.BigEndian.AppendUint32(nil, formatVersionLogs))
}
