package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/coordhost/coordhost/host/runtime"
)

// Record is one keyed entry of the log. Key and Value are opaque to the
// store (core defines their content); a nil Value is a tombstone that
// deletes Key. It is the runtime's record type.
type Record = runtime.Record

// Entry is a stored record with the sequence number of its last write.
type Entry struct {
	Seq   uint64
	Key   []byte
	Value []byte
}

// ErrCorrupt wraps every integrity failure found while opening or replaying.
var ErrCorrupt = errors.New("store is corrupted")

// ErrMissing is wrapped by Open when the store file is gone but its marker
// shows that a store was created at that path before.
var ErrMissing = errors.New("store is missing")

// repairHint ends the message of every damaged-store error.
const repairHint = "(restore it from a backup, or run `coordhost repair` with this configuration: " +
	"it keeps the records whose checksum verifies, moves the damaged file aside and reports what it dropped)"

// MarkerPath is the marker file written beside the store at path once the
// store exists: a store file missing while its marker is there was lost,
// and Open refuses to replace it with an empty one.
func MarkerPath(path string) string { return path + ".created" }

func writeMarker(path string) error {
	m := MarkerPath(path)
	if _, err := os.Stat(m); err == nil {
		return nil
	}
	if err := os.WriteFile(m, []byte("coordhost store "+filepath.Base(path)+" created "+time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return fmt.Errorf("store %s: marker: %w", path, err)
	}
	return nil
}

// The on-disk layout versions written in the meta bucket: format 1 is one
// log (an unpartitioned store); format 4 (logs.go) is a partitioned
// store, one log per partition. Earlier coordhosts wrote formats 2 (a
// sequence index per partition beside the records, and the partition
// count) and 3 (format 2 holding records stored under the hash of a key
// too long for bbolt, longkey.go); they are converted to format 4 once
// when opened, a format-1 store when it is first opened with a partition
// count.
const (
	formatVersion            = 1
	formatVersionPartitioned = 2
	formatVersionHashedKeys  = 3
)

var (
	bucketMeta    = []byte("meta")
	bucketRecords = []byte("records") // key -> seq(8) crc32c(4) value
	bucketBySeq   = []byte("by_seq")  // seq(8) -> key
	keyFormat     = []byte("format")
	keyNextSeq    = []byte("next_seq")
	castagnoli    = crc32.MakeTable(crc32.Castagnoli)
)

// Store is the durable record log in one local file (bbolt): key -> latest
// value with the sequence number of its write. Appends are fsynced before
// they return.
type Store struct {
	path string
	db   *bolt.DB

	mu      sync.Mutex
	nextSeq uint64
	parts   int // partition count; 0 while the store is not partitioned
	// maxRecord bounds a record (MaxRecordSize; lower in tests).
	maxRecord int
	// atOpen is the number of live records found at open.
	atOpen int
	// check is bbolt's consistency check when OpenForLoad runs it in
	// the background; nil when open ran it.
	check *consistencyCheck
}

// consistencyCheck is bbolt's consistency check running on a read
// transaction of its own; err is set before done closes.
type consistencyCheck struct {
	done chan struct{}
	err  error
}

// Open opens (creating if needed) the store file at path and checks it: a
// file that is not a coordhost store, a failed bbolt consistency check, or a
// record whose checksum does not match fails Open with an error naming the
// file — the store is never silently reset.
func Open(path string) (s *Store, err error) { return open(path, false, false) }

// OpenForLoad is Open for a start that replays the store at once. Every
// check of Open but the last runs before it returns (the page walks,
// every record's checksum, the keys index against the logs); the last,
// bbolt's consistency check of the whole file (each page reachable once
// or free, keys in order), runs in the background beside the replay,
// after the others have read every page it reads. Until it has passed,
// every write waits for it and fails with its error if it fails, so a
// damaged file is never written to; reads do not wait. The caller
// serves nothing from the store, and acknowledges nothing, before
// Verified has returned nil.
func OpenForLoad(path string) (*Store, error) { return open(path, false, true) }

// Verified waits for the consistency check of a store opened with
// OpenForLoad and returns its result: nil, or an error wrapping
// ErrCorrupt that names the file. For a store opened otherwise it
// returns nil at once (open ran every check).
func (s *Store) Verified() error {
	if s.check == nil {
		return nil
	}
	<-s.check.done
	return s.check.err
}

// checkInBackground starts bbolt's consistency check of the file on a
// read transaction of its own (s.check).
func (s *Store) checkInBackground() error {
	tx, err := s.db.Begin(false)
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	s.check = &consistencyCheck{done: make(chan struct{})}
	go func() {
		defer close(s.check.done)
		s.check.err = s.consistency(tx)
		_ = tx.Rollback()
	}()
	return nil
}

// consistency runs bbolt's consistency check on tx: nil, or the first
// error it reports, as ErrCorrupt.
func (s *Store) consistency(tx *bolt.Tx) error {
	var first error
	for err := range tx.Check() { // drain fully: Check's goroutine writes every error
		if first == nil {
			first = err
		}
	}
	if first != nil {
		return s.corrupt("bbolt consistency check: " + first.Error())
	}
	return nil
}

// OpenNew creates a new store at path, which must not exist, even where
// the marker of a lost store is (the operator's repair).
func OpenNew(path string) (*Store, error) {
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("store %s: exists already", path)
	}
	return open(path, true, false)
}

// open opens the store at path; background runs bbolt's consistency
// check in the background (OpenForLoad) where the store needs no
// conversion.
func open(path string, replace, background bool) (s *Store, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a damaged length can point outside the mapped file
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	fi, statErr := os.Stat(path)
	fresh := errors.Is(statErr, os.ErrNotExist)
	if fresh && !replace {
		if _, err := os.Stat(MarkerPath(path)); err == nil {
			return nil, fmt.Errorf("store %s: %w: the file is missing but %s shows a store was created here before "+
				"(restore the store from a backup, or run `coordhost repair` with this configuration to start with an empty store)",
				path, ErrMissing, MarkerPath(path))
		}
	} else if statErr == nil && fi.Size() == 0 {
		return nil, fmt.Errorf("store %s: %w: the file is empty (0 bytes) %s", path, ErrCorrupt, repairHint)
	}
	var db *bolt.DB
	defer func() {
		if p := recover(); p != nil { // bbolt panics on some corrupted pages
			if db != nil {
				db.Close() // releases the file lock
			}
			s, err = nil, fmt.Errorf("store %s: %w: %v %s", path, ErrCorrupt, p, repairHint)
		}
	}()
	if !fresh {
		if err := checkMetaPages(path); err != nil {
			return nil, err
		}
	}
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("store %s: locked by another process (is another coordhost running on this data directory?)", path)
		}
		return nil, fmt.Errorf("store %s: %w: %v %s", path, ErrCorrupt, err, repairHint)
	}
	s = &Store{path: path, db: db, maxRecord: MaxRecordSize}
	if err := s.init(fresh, background); err != nil {
		db.Close()
		return nil, err
	}
	if err := writeMarker(path); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// init checks an existing store read-only (a damaged file is never
// written to) and lays out a new one. With background, a store of the
// current format leaves bbolt's consistency check running
// (checkInBackground) once every other check passed.
func (s *Store) init(fresh, background bool) error {
	empty, format, deferred := false, uint32(0), false
	err := s.db.View(func(tx *bolt.Tx) error {
		// First, before bbolt reads a page's elements: every page in use
		// spans pages below the high-water mark, and its elements lie
		// inside it (checkPageSpans).
		if !fresh {
			if err := s.checkPageSpans(tx); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			if !fresh && bucketCount(tx) > 0 {
				return s.corrupt("the file is a bbolt database but not a coordhost store (no meta bucket)")
			}
			// A file without buckets is a store whose creation did not
			// finish — unless the marker shows it was created: then its
			// buckets were lost (a damaged root page), and starting empty
			// would drop every record.
			if _, err := os.Stat(MarkerPath(s.path)); !fresh && err == nil {
				return s.corrupt(fmt.Sprintf("the file holds no buckets, but %s shows the store was created", MarkerPath(s.path)))
			}
			empty = true
			return nil
		}
		v := meta.Get(keyFormat)
		if len(v) != 4 || binary.BigEndian.Uint32(v) < formatVersion || binary.BigEndian.Uint32(v) > formatVersionLogs {
			return s.corrupt(fmt.Sprintf("unknown store format %x (this coordhost reads formats %d to %d)", v, formatVersion, formatVersionLogs))
		}
		format = binary.BigEndian.Uint32(v)
		if format >= formatVersionPartitioned {
			if err := s.initPartitions(tx, format); err != nil {
				return err
			}
		}
		n := meta.Get(keyNextSeq)
		if format == formatVersionLogs {
			if len(n) != 8 || tx.Bucket(bucketKeys) == nil {
				return s.corrupt("missing sequence counter or keys bucket")
			}
		} else if len(n) != 8 || tx.Bucket(bucketRecords) == nil || tx.Bucket(bucketBySeq) == nil {
			return s.corrupt("missing sequence counter or record buckets")
		}
		s.nextSeq = binary.BigEndian.Uint64(n)
		// Every page is read first, here and in checkRecords, under
		// recovery, where a panic of bbolt on a damaged page becomes
		// ErrCorrupt; bbolt's consistency check runs on a goroutine of
		// its own, where nothing could recover it, and only after.
		walkBuckets(tx, format)
		if err := s.checkRecords(tx, format); err != nil {
			return err
		}
		if background && format == formatVersionLogs {
			deferred = true
			return nil
		}
		return s.consistency(tx)
	})
	if err != nil {
		return err
	}
	if deferred {
		return s.checkInBackground()
	}
	if format == formatVersionPartitioned || format == formatVersionHashedKeys {
		return s.convertToLogs()
	}
	if !empty {
		return nil
	}
	return s.db.Update(s.create)
}

// convertToLogs converts a checked store of format 2 or 3 to format 4
// in one transaction: each partition's records move into its log.
func (s *Store) convertToLogs() error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketPartitions)
		return s.toLogs(tx, s.parts, func(p int) *bolt.Bucket {
			if p >= s.parts {
				return nil
			}
			return root.Bucket(partName(p))
		}, func(p int, _, _ []byte) (int, error) { return p, nil })
	})
	if err != nil {
		return fmt.Errorf("store %s: converting to one log per partition: %w", s.path, err)
	}
	return nil
}

// checkPageSpans refuses a file whose high-water mark lies past its
// end, or in which a page in use says it spans pages past the mark, or
// holds an element (or an element's key or value) outside its span. It
// walks the pages in file order, skipping each page's own overflow, so
// it visits at most one page per page of the file. bbolt's check loops
// over every page a header claims (a damaged header saying millions made
// it run for tens of seconds), and bbolt turns an element's position
// into a slice without a bound: one pointing past the page can fault on
// a goroutine where no one recovers it, or point into Go's heap, which
// the collector treats as a fatal error. A free page's header is not
// read: its overflow pages are free too, and their bytes are whatever
// was there before.
func (s *Store) checkPageSpans(tx *bolt.Tx) error {
	free := func(id int) (bool, error) {
		p, err := tx.Page(id)
		if err == nil && p == nil {
			err = errors.New("no such page")
		}
		return err == nil && p.Type == "free", err
	}
	err := walkPages(s.path, tx.Size(), tx.DB().Info().PageSize, free, func(id int, why string) error {
		return s.corrupt(fmt.Sprintf("page %d: %s", id, why))
	})
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	return err
}

// walkPages is checkPageSpans' walk of the bbolt file at path, of size
// bytes below its high-water mark: it calls damaged for each page in use
// that is wrong, and stops at its error. free says whether a page is
// free (nil: none is, every page's header is read). It maps the file
// read-only to read the pages. The walk of the tree of pages
// (treeDamage) needs nothing of the walk in file order: it runs beside
// it, on a goroutine of its own, and its finding is given to damaged
// after the other's, as if it had run after it.
func walkPages(path string, size int64, pageSize int, free func(id int) (bool, error), damaged func(id int, why string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	hwm := int(size / int64(pageSize))
	if size > fi.Size() {
		return damaged(hwm, fmt.Sprintf("the high-water mark is past the file's end (%d pages)", fi.Size()/int64(pageSize)))
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return err
	}
	defer syscall.Munmap(data)
	tree := treeDamageBeside(data, pageSize, hwm)
	defer func() { <-tree.done }() // before the unmap, on every return
	for id := 2; id < hwm; {
		if free != nil {
			isFree, err := free(id)
			if err != nil {
				return damaged(id, err.Error())
			}
			if isFree {
				id++
				continue
			}
		}
		overflow := int(binary.LittleEndian.Uint32(data[id*pageSize+12:]))
		if overflow >= hwm-id {
			if err := damaged(id, fmt.Sprintf("it spans %d more pages, past the high-water mark %d", overflow, hwm)); err != nil {
				return err
			}
			id++
			continue
		}
		if why := elementDamage(data[id*pageSize:(id+overflow+1)*pageSize], 0); why != "" {
			if err := damaged(id, why); err != nil {
				return err
			}
		}
		id += overflow + 1
	}
	if id, why := tree.wait(); why != "" {
		return damaged(id, why)
	}
	return nil
}

// treeWalk is treeDamage running on a goroutine of its own.
type treeWalk struct {
	done     chan struct{}
	id       int
	why      string
	panicked any // what treeDamage panicked with, if it did
}

// treeDamageBeside starts treeDamage on the mapped file data.
func treeDamageBeside(data []byte, pageSize, hwm int) *treeWalk {
	w := &treeWalk{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer func() { w.panicked = recover() }()
		debug.SetPanicOnFault(true)
		w.id, w.why = treeDamage(data, pageSize, hwm)
	}()
	return w
}

// wait returns treeDamage's finding once it is done; a panic of it is
// raised again here, on the caller's goroutine, where open recovers it
// as it did when the walk ran there.
func (w *treeWalk) wait() (int, string) {
	<-w.done
	if p := w.panicked; p != nil {
		panic(p)
	}
	return w.id, w.why
}

// treeDamage walks the tree of pages from the root bucket that the
// newer meta page of the mapped file data names, down every branch and
// every sub-bucket (inline ones included), and says which page is wrong
// when one lies outside the file's pages, is no branch or leaf page
// (bbolt's cursor reads any other as a branch), holds elements outside
// its span, or is referenced twice (a cycle would send bbolt, and the bucket
// walks at open, into endless recursion: a fatal stack overflow). It
// needs no recursion of its own.
func treeDamage(data []byte, pageSize, hwm int) (int, string) {
	const branchFlag, leafFlag, bucketFlag, elem, header = 0x01, 0x02, 0x01, 16, 16
	meta := data[:80]
	if binary.LittleEndian.Uint64(data[pageSize+64:]) > binary.LittleEndian.Uint64(meta[64:]) { // txid
		meta = data[pageSize : pageSize+80]
	}
	seen := make([]bool, hwm)
	type ref struct{ id, from uint64 }                          // a page, and the page naming it (0: the meta page)
	stack := []ref{{id: binary.LittleEndian.Uint64(meta[32:])}} // the root bucket's page
	for len(stack) > 0 {
		id, from := stack[len(stack)-1].id, stack[len(stack)-1].from
		stack = stack[:len(stack)-1]
		if id < 2 || id >= uint64(hwm) {
			return int(from), fmt.Sprintf("it names page %d, outside the pages in use", id)
		}
		at := int(id) * pageSize
		overflow := int(binary.LittleEndian.Uint32(data[at+12:]))
		if overflow >= hwm-int(id) {
			return int(id), fmt.Sprintf("it spans %d more pages, past the high-water mark %d", overflow, hwm)
		}
		for i := int(id); i <= int(id)+overflow; i++ {
			if seen[i] {
				return int(from), fmt.Sprintf("it names page %d, which another page names too", i)
			}
			seen[i] = true
		}
		page := data[at : at+(overflow+1)*pageSize]
		if f := binary.LittleEndian.Uint16(page[8:]); f != branchFlag && f != leafFlag {
			return int(from), fmt.Sprintf("it names page %d, which is no branch or leaf page (flags %#x)", id, f)
		}
		if why := elementDamage(page, 0); why != "" {
			return int(id), why
		}
		// The children: a branch's pages, a leaf's sub-buckets (those
		// inline in a value hold their own leaf page, searched the same
		// way, a few levels deep at most: elementDamage bounded them).
		for pages := [][]byte{page}; len(pages) > 0; {
			p := pages[len(pages)-1]
			pages = pages[:len(pages)-1]
			flags, count := binary.LittleEndian.Uint16(p[8:]), int(binary.LittleEndian.Uint16(p[10:]))
			for i := range count {
				e := header + i*elem
				switch {
				case flags&branchFlag != 0:
					stack = append(stack, ref{binary.LittleEndian.Uint64(p[e+8:]), id})
				case flags&leafFlag != 0 && binary.LittleEndian.Uint32(p[e:])&bucketFlag != 0:
					pos, ksize, vsize := int(binary.LittleEndian.Uint32(p[e+4:])), int(binary.LittleEndian.Uint32(p[e+8:])), int(binary.LittleEndian.Uint32(p[e+12:]))
					v := p[e+pos+ksize : e+pos+ksize+vsize]
					if len(v) < 16 {
						return int(id), fmt.Sprintf("leaf element %d: a bucket header of %d bytes", i, len(v))
					}
					if root := binary.LittleEndian.Uint64(v); root != 0 {
						stack = append(stack, ref{root, id})
					} else {
						pages = append(pages, v[16:])
					}
				}
			}
		}
	}
	return 0, ""
}

// elementDamage says which element of the bbolt page p (its whole span:
// a page and its overflow, or an inline bucket's page) lies outside it,
// "" when none does. depth bounds the inline buckets it follows.
func elementDamage(p []byte, depth int) string {
	const header, elem, branchFlag, leafFlag, bucketFlag = 16, 16, 0x01, 0x02, 0x01
	if len(p) < header {
		return "shorter than a page header"
	}
	flags, count := binary.LittleEndian.Uint16(p[8:]), int(binary.LittleEndian.Uint16(p[10:]))
	if flags&(branchFlag|leafFlag) == 0 {
		return ""
	}
	if header+count*elem > len(p) {
		return fmt.Sprintf("%d elements, more than fit", count)
	}
	for i := range count {
		at := header + i*elem
		if flags&branchFlag != 0 { // pos(4) ksize(4) pgid(8)
			pos, ksize := int64(binary.LittleEndian.Uint32(p[at:])), int64(binary.LittleEndian.Uint32(p[at+4:]))
			if int64(at)+pos+ksize > int64(len(p)) {
				return fmt.Sprintf("branch element %d lies past the page's end", i)
			}
			continue
		}
		// flags(4) pos(4) ksize(4) vsize(4)
		eflags := binary.LittleEndian.Uint32(p[at:])
		pos, ksize, vsize := int64(binary.LittleEndian.Uint32(p[at+4:])), int64(binary.LittleEndian.Uint32(p[at+8:])), int64(binary.LittleEndian.Uint32(p[at+12:]))
		end := int64(at) + pos + ksize + vsize
		if end > int64(len(p)) {
			return fmt.Sprintf("leaf element %d lies past the page's end", i)
		}
		// An inline bucket: root page 0, its page in the value after the
		// bucket header (root 8, sequence 8).
		if v := p[end-vsize : end]; eflags&bucketFlag != 0 && len(v) >= 16 && binary.LittleEndian.Uint64(v) == 0 {
			if depth >= 8 {
				return "inline buckets nested too deep"
			}
			if why := elementDamage(v[16:], depth+1); why != "" {
				return fmt.Sprintf("inline bucket in leaf element %d: %s", i, why)
			}
		}
	}
	return ""
}

// checkMetaPages refuses a file whose two meta pages do not both verify
// (metaDamage).
func checkMetaPages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	defer f.Close()
	err = metaDamage(f)
	if err == nil {
		err = freelistDamage(f)
	}
	if err != nil {
		return fmt.Errorf("store %s: %w: %v %s", path, ErrCorrupt, err, repairHint)
	}
	return nil
}

// freelistDamage says what is wrong with the header of the free-page
// list's page that the newer meta page of f names: bbolt's consistency
// check reads that page on a goroutine of its own, where a page that
// does not identify as itself is a panic no one can recover. (Every
// other page it reads, the walks at open read first: walkBuckets, and
// checkLogs the logs and the keys index.)
// Call it after metaDamage.
func freelistDamage(f *os.File) error {
	const freelistFlag, noFreelist = 0x10, ^uint64(0)
	var metas [2][80]byte
	for id := range metas {
		if _, err := f.ReadAt(metas[id][:], int64(id)*int64(os.Getpagesize())); err != nil {
			return err
		}
	}
	pageSize := int64(binary.LittleEndian.Uint32(metas[0][24:]))
	m := metas[0][:]
	if binary.LittleEndian.Uint64(metas[1][64:]) > binary.LittleEndian.Uint64(m[64:]) { // txid
		m = metas[1][:]
	}
	id := binary.LittleEndian.Uint64(m[48:])
	if id == noFreelist {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if pageSize < 512 || id >= uint64(fi.Size()/pageSize) {
		return fmt.Errorf("the free-page list is at page %d, past the file's end", id)
	}
	var h [24]byte
	if _, err := f.ReadAt(h[:], int64(id)*pageSize); err != nil {
		return fmt.Errorf("reading the free-page list's page %d: %v", id, err)
	}
	if pid, flags := binary.LittleEndian.Uint64(h[:]), binary.LittleEndian.Uint16(h[8:]); pid != id || flags != freelistFlag {
		return fmt.Errorf("the free-page list's page %d is damaged (id %d, flags %#x)", id, pid, flags)
	}
	// Its ids must lie inside its pages, and its pages inside the file:
	// bbolt reads them while it opens the file, before a consistency
	// check, and a fault there leaves the file open and locked.
	count, ids := uint64(binary.LittleEndian.Uint16(h[10:])), uint64(0)
	if count == 0xffff { // the count is the first id's slot
		count, ids = binary.LittleEndian.Uint64(h[16:]), 1
	}
	span := uint64(binary.LittleEndian.Uint32(h[12:])) + 1
	if span > uint64(fi.Size()/pageSize)-id || count > (span*uint64(pageSize)-16)/8-ids {
		return fmt.Errorf("the free-page list's page %d says it holds %d ids on %d pages, more than fit", id, count, span)
	}
	return nil
}

// metaDamage says what is wrong with the two meta pages of the bbolt
// file f, nil when both verify. A meta page that does not say it is
// meta page 0 or 1 makes bbolt open the file from the other one, and its
// consistency check then panics on a goroutine of its own. One that
// fails its checksum (FNV-1a over its fields) makes bbolt open the other
// one silently: bbolt writes the two in turn, so that is the state before
// the last transaction, without acknowledged records. A crash during a
// meta write cannot leave a page failing its checksum: the page header
// and the meta fields lie in its first 80 bytes, inside one disk sector,
// which a drive writes whole, and bbolt fsyncs the data before the meta.
func metaDamage(f *os.File) error {
	const metaMagic, metaFlag, metaStart, sumAt = 0xED0CDAED, 0x04, 16, 72
	buf := make([]byte, 80)
	pageSize := int64(os.Getpagesize())
	for id := int64(0); id < 2; id++ {
		if _, err := f.ReadAt(buf, id*pageSize); err != nil {
			return fmt.Errorf("reading meta page %d: %v", id, err)
		}
		pid, flags := binary.LittleEndian.Uint64(buf), binary.LittleEndian.Uint16(buf[8:])
		if pid != uint64(id) || flags != metaFlag || binary.LittleEndian.Uint32(buf[16:]) != metaMagic {
			return fmt.Errorf("meta page %d is damaged (id %d, flags %#x)", id, pid, flags)
		}
		h := fnv.New64a()
		h.Write(buf[metaStart:sumAt])
		if h.Sum64() != binary.LittleEndian.Uint64(buf[sumAt:]) {
			return fmt.Errorf("meta page %d fails its checksum (bbolt would read the state before the last write)", id)
		}
		if id == 0 {
			if ps := int64(binary.LittleEndian.Uint32(buf[24:])); ps >= 512 && ps <= 1<<16 && ps&(ps-1) == 0 {
				pageSize = ps
			}
		}
	}
	return nil
}

// walkBuckets reads every byte of every key and value of every bucket
// of tx but the records and logs, and in format 4 the keys index (a
// damaged length faults here, under SetPanicOnFault); checkRecords reads
// those, the logs and the keys index in parallel (checkLogs), each under
// its own recovery, so a walk here would only read the largest bucket
// of the file once more, on one core.
func walkBuckets(tx *bolt.Tx, format uint32) {
	var walk func(b *bolt.Bucket)
	walk = func(b *bolt.Bucket) {
		b.ForEach(func(k, v []byte) error {
			crc32.Update(crc32.Checksum(k, castagnoli), castagnoli, v)
			if v == nil {
				if nb := b.Bucket(k); nb != nil {
					walk(nb)
				}
			}
			return nil
		})
	}
	tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if !bytes.Equal(name, bucketRecords) && !bytes.Equal(name, bucketLogs) &&
			(format != formatVersionLogs || !bytes.Equal(name, bucketKeys)) {
			walk(b)
		}
		return nil
	})
}

// checkRecords is the integrity pass over the records at open: every
// record's header and checksum, and as many sequence index entries (the
// global index, and the partitions' together) as records. It counts the
// records (RecordsAtOpen), so a start needs no pass of its own to count
// them.
func (s *Store) checkRecords(tx *bolt.Tx, format uint32) error {
	if format == formatVersionLogs {
		n, err := s.checkLogs()
		s.atOpen = n
		return err
	}
	n := 0
	c := tx.Bucket(bucketRecords).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			return s.corrupt(fmt.Sprintf("record key %q holds a bucket", shortKey(k)))
		}
		if len(v) < valueHeader {
			return s.corrupt(fmt.Sprintf("record %q is %d bytes, shorter than its header", shortKey(k), len(v)))
		}
		if crc32.Checksum(v[valueHeader:], castagnoli) != binary.BigEndian.Uint32(v[8:12]) {
			return s.corrupt(fmt.Sprintf("key %q (sequence %d): checksum mismatch", shortKey(k), binary.BigEndian.Uint64(v)))
		}
		n++
	}
	if m := keyCount(tx.Bucket(bucketBySeq)); m != n {
		return s.corrupt(fmt.Sprintf("%d records but %d sequence index entries", n, m))
	}
	if s.parts > 0 {
		m, root := 0, tx.Bucket(bucketPartitions)
		for p := 0; p < s.parts; p++ {
			m += keyCount(root.Bucket(partName(p)))
		}
		if m != n {
			return s.corrupt(fmt.Sprintf("%d records but %d entries in the partitions' sequence indexes", n, m))
		}
	}
	s.atOpen = n
	return nil
}

// keyCount counts the entries of b.
func keyCount(b *bolt.Bucket) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// RecordsAtOpen is the number of live records Open found (and checked).
func (s *Store) RecordsAtOpen() int { return s.atOpen }

func bucketCount(tx *bolt.Tx) int {
	n := 0
	tx.ForEach(func([]byte, *bolt.Bucket) error { n++; return nil })
	return n
}

func (s *Store) create(tx *bolt.Tx) error {
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketRecords); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketBySeq); err != nil {
		return err
	}
	s.nextSeq = 1
	if err := meta.Put(keyFormat, binary.BigEndian.AppendUint32(nil, formatVersion)); err != nil {
		return err
	}
	return meta.Put(keyNextSeq, binary.BigEndian.AppendUint64(nil, s.nextSeq))
}

func (s *Store) corrupt(why string) error {
	return fmt.Errorf("store %s: %w: %s %s", s.path, ErrCorrupt, why, repairHint)
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Append writes a batch of records in one transaction and fsyncs it before
// returning (group commit: the caller batches every record of one event-loop
// round into one call). Records get consecutive sequence numbers in batch
// order; a later record of the same key wins. It returns the last sequence
// number written. On error nothing of the batch is stored. A partitioned
// store takes appends per partition only (AppendPartitions).
func (s *Store) Append(batch []Record) (uint64, error) {
	for i, r := range batch {
		if len(r.Key) == 0 {
			return 0, fmt.Errorf("store append: record %d has an empty key", i)
		}
		if hashedKey(r.Key) {
			return 0, fmt.Errorf("store append: record %d: %w: a key of %d bytes is held by a partitioned store only", i, runtime.ErrInvalidRecord, len(r.Key))
		}
	}
	if err := s.Verified(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(batch) == 0 {
		return s.nextSeq - 1, nil
	}
	if s.parts > 0 {
		return 0, fmt.Errorf("store %s: partitioned into %d partitions: append through a partition", s.path, s.parts)
	}
	next := s.nextSeq
	err := s.db.Update(func(tx *bolt.Tx) error {
		var err error
		if next, err = s.put(tx, batch, next); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyNextSeq, binary.BigEndian.AppendUint64(nil, next))
	})
	if err != nil {
		return 0, fmt.Errorf("store %s: append of %d records: %w", s.path, len(batch), err)
	}
	s.nextSeq = next
	return next - 1, nil
}

// put writes batch into an unpartitioned store from sequence number
// next on and returns the next free one.
func (s *Store) put(tx *bolt.Tx, batch []Record, next uint64) (uint64, error) {
	recs, bySeq := tx.Bucket(bucketRecords), tx.Bucket(bucketBySeq)
	for _, r := range batch {
		key := r.Key // Append refuses a key stored under its hash
		if old := recs.Get(key); old != nil {
			if len(old) < valueHeader {
				return 0, s.corrupt(fmt.Sprintf("record %q is %d bytes, shorter than its header", shortKey(key), len(old)))
			}
			if err := bySeq.Delete(old[:8]); err != nil {
				return 0, err
			}
		}
		if r.Value == nil {
			if err := recs.Delete(key); err != nil {
				return 0, err
			}
			next++
			continue
		}
		seq := binary.BigEndian.AppendUint64(nil, next)
		if err := recs.Put(key, encodeValue(next, r.Key, r.Value)); err != nil {
			return 0, err
		}
		if err := bySeq.Put(seq, key); err != nil {
			return 0, err
		}
		next++
	}
	return next, nil
}

// Replay calls fn for every live record in sequence order (the order of
// their last writes). A record that fails its checksum, or an index entry
// that does not match its record, stops the replay with ErrCorrupt.
func (s *Store) Replay(fn func(Entry) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = s.corrupt(fmt.Sprintf("reading: %v", p))
		}
	}()
	return s.db.View(func(tx *bolt.Tx) error {
		if s.Partitions() > 0 {
			return s.replayLogs(tx, fn)
		}
		recs := tx.Bucket(bucketRecords)
		if err := s.replayIndex(recs, tx.Bucket(bucketBySeq), fn); err != nil {
			return err
		}
		if n, m := recs.Stats().KeyN, tx.Bucket(bucketBySeq).Stats().KeyN; n != m {
			return s.corrupt(fmt.Sprintf("%d records but %d sequence index entries", n, m))
		}
		return nil
	})
}

// replayIndex calls fn for the record of every entry of the sequence
// index idx, in sequence order.
func (s *Store) replayIndex(recs, idx *bolt.Bucket, fn func(Entry) error) error {
	// One cursor seeks every record: Bucket.Get builds a new cursor,
	// and its search stack, a call.
	c, rc := idx.Cursor(), recs.Cursor()
	for k, key := c.First(); k != nil; k, key = c.Next() {
		found, raw := rc.Seek(key)
		if !bytes.Equal(found, key) {
			raw = nil
		}
		e, err := s.decode(k, key, raw)
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) decode(seqKey, key, raw []byte) (Entry, error) {
	if len(seqKey) != 8 {
		return Entry{}, s.corrupt(fmt.Sprintf("sequence index key of %d bytes", len(seqKey)))
	}
	seq := binary.BigEndian.Uint64(seqKey)
	if len(raw) < valueHeader {
		return Entry{}, s.corrupt(fmt.Sprintf("sequence %d points to key %q with a %d-byte record", seq, shortKey(key), len(raw)))
	}
	if !bytes.Equal(raw[:8], seqKey) {
		return Entry{}, s.corrupt(fmt.Sprintf("key %q: index says sequence %d, record says %d", shortKey(key), seq, binary.BigEndian.Uint64(raw)))
	}
	payload := raw[valueHeader:]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(raw[8:12]) {
		return Entry{}, s.corrupt(fmt.Sprintf("key %q (sequence %d): checksum mismatch", shortKey(key), seq))
	}
	k, v, err := splitValue(key, payload)
	if err != nil {
		return Entry{}, s.corrupt(fmt.Sprintf("sequence %d: %v", seq, err))
	}
	// One copy holds both (the page memory is valid only inside the
	// transaction): one allocation a record instead of two.
	kv := make([]byte, len(k)+len(v))
	copy(kv, k)
	copy(kv[len(k):], v)
	e := Entry{Seq: seq, Key: kv[:len(k):len(k)], Value: kv[len(k):]}
	if v == nil {
		e.Value = nil
	}
	return e, nil
}

// Close flushes and closes the file, after the background consistency
// check (OpenForLoad) has finished.
func (s *Store) Close() error {
	if s.check != nil {
		<-s.check.done
	}
	return s.db.Close()
}
