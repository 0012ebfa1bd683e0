package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coordhost/coordhost/host/runtime"
)

// testGroup routes keys "group/rest" to group.
func testGroup(key []byte) (string, error) {
	g, _, ok := bytes.Cut(key, []byte("/"))
	if !ok {
		return "", fmt.Errorf("no group in key %q", key)
	}
	return string(g), nil
}

func partitionEntries(t *testing.T, s *Store, p int) string {
	t.Helper()
	var es []Entry
	if err := s.ReplayPartition(p, func(e Entry) error { es = append(es, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return render(es)
}

// TestPartitionConvertsAnUnpartitionedStoreOnce: a store written before
// partitions (one log) is converted when first opened with a partition
// count: each record joins its group's partition, in sequence order; the
// count is recorded, so the next open does not convert again, and another
// count is refused.
func TestPartitionConvertsAnUnpartitionedStoreOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	s := openT(t, path)
	groups := []string{"a", "b", "my-group", "polygenelubricants"}
	for i := 0; i < 3; i++ {
		var batch []Record
		for _, g := range groups {
			batch = append(batch, Record{Key: []byte(fmt.Sprintf("%s/%d", g, i%2)), Value: []byte(fmt.Sprintf("%s-v%d", g, i))})
		}
		if _, err := s.Append(batch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append([]Record{{Key: []byte("b/0"), Value: nil}}); err != nil {
		t.Fatal(err)
	}
	before := render(replayAll(t, s))
	s.Close()

	s = openT(t, path)
	if s.Partitions() != 0 {
		t.Fatalf("an old store reports %d partitions", s.Partitions())
	}
	if err := s.Partition(5, testGroup); err != nil {
		t.Fatal(err)
	}
	want := map[int]string{}
	for _, e := range replayAll(t, s) {
		g, _ := testGroup(e.Key)
		p := runtime.PartitionFor(g, 5)
		want[p] += render([]Entry{e})
	}
	for p := 0; p < 5; p++ {
		if got := partitionEntries(t, s, p); got != want[p] {
			t.Errorf("partition %d: %s, want %s", p, got, want[p])
		}
	}
	if got := render(replayAll(t, s)); got != before {
		t.Fatalf("the whole log changed in the conversion: %s, was %s", got, before)
	}
	s.Close()

	s = openT(t, path)
	defer s.Close()
	if s.Partitions() != 5 {
		t.Fatalf("reopened: %d partitions, want 5", s.Partitions())
	}
	noConversion := func([]byte) (string, error) { return "", errors.New("converted twice") }
	if err := s.Partition(5, noConversion); err != nil {
		t.Fatal(err)
	}
	err := s.Partition(7, testGroup)
	if !errors.Is(err, ErrPartitionCount) || !strings.Contains(err.Error(), "created with 5 partitions") {
		t.Fatalf("another partition count: %v", err)
	}
	if _, err := s.Append([]Record{{Key: []byte("a/9"), Value: []byte("x")}}); err == nil {
		t.Fatal("an append outside the partitions was accepted")
	}
}

// TestPartitionConversionFailureLeavesTheStore: a key whose group cannot
// be told fails the conversion and leaves the old store as it was.
func TestPartitionConversionFailureLeavesTheStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	s := openT(t, path)
	if _, err := s.Append([]Record{{Key: []byte("a/1"), Value: []byte("1")}, {Key: []byte("nogroup"), Value: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Partition(3, testGroup); err == nil || !strings.Contains(err.Error(), "nogroup") {
		t.Fatalf("conversion with an unroutable key: %v", err)
	}
	s.Close()
	s = openT(t, path)
	defer s.Close()
	if s.Partitions() != 0 {
		t.Fatal("a failed conversion was recorded")
	}
	if got := render(replayAll(t, s)); got != "1 a/1=1;2 nogroup=2;" {
		t.Fatalf("after a failed conversion: %s", got)
	}
}

func partitionedLog(t *testing.T, n int) (*Store, *Log) {
	t.Helper()
	s := openT(t, filepath.Join(t.TempDir(), "coordhost.db"))
	if err := s.Partition(n, testGroup); err != nil {
		t.Fatal(err)
	}
	l, err := NewLog(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); s.Close() })
	return s, l
}

// TestLogSharesCommitsAndIsolatesInvalidRecords: partitions appending at
// once all land (in fewer transactions than appends when they overlap);
// a record over what one bbolt value holds (lowered here from 2 GiB)
// fails its own append only, with ErrInvalidRecord, and nothing of that
// append is stored.
func TestLogSharesCommitsAndIsolatesInvalidRecords(t *testing.T) {
	const parts, rounds = 8, 20
	s, l := partitionedLog(t, parts)
	s.maxRecord = 1 << 16
	var wg sync.WaitGroup
	errs := make(chan error, parts*rounds+1)
	for p := 0; p < parts; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				errs <- l.Append(p, []runtime.Record{{Key: []byte(fmt.Sprintf("p%d/%d", p, i)), Value: []byte("v")}})
			}
		}(p)
	}
	huge := []runtime.Record{{Key: []byte("x/ok"), Value: []byte("1")}, {Key: []byte("x/big"), Value: bytes.Repeat([]byte("v"), 1<<16+1)}}
	wg.Add(1)
	go func() { defer wg.Done(); errs <- l.Append(1, huge) }()
	wg.Wait()
	close(errs)
	invalid := 0
	for err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, runtime.ErrInvalidRecord):
			invalid++
		default:
			t.Fatalf("append failed: %v", err)
		}
	}
	if invalid != 1 {
		t.Fatalf("%d invalid appends, want 1", invalid)
	}
	n := 0
	for p := 0; p < parts; p++ {
		if err := l.Replay(p, func(r runtime.Record) error {
			if string(r.Key) == "x/ok" {
				t.Error("a record of the refused append was stored")
			}
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n != parts*rounds {
		t.Fatalf("%d records stored, want %d", n, parts*rounds)
	}
	if c := l.Commits(); c > parts*rounds {
		t.Fatalf("%d commits for %d appends", c, parts*rounds)
	}
	t.Logf("%d appends in %d transactions", parts*rounds, l.Commits())
}

// TestAppendPartitionsIsOneTransaction: the batches of several partitions
// written together are stored together or not at all.
func TestAppendPartitionsIsOneTransaction(t *testing.T) {
	s, _ := partitionedLog(t, 4)
	err := s.AppendPartitions([]PartitionBatch{
		{Partition: 0, Records: []Record{{Key: []byte("a/1"), Value: []byte("1")}}},
		{Partition: 9, Records: []Record{{Key: []byte("b/1"), Value: []byte("1")}}},
	})
	if !errors.Is(err, runtime.ErrInvalidRecord) {
		t.Fatalf("a batch for a partition the store does not have: %v", err)
	}
	if got := partitionEntries(t, s, 0); got != "" {
		t.Fatalf("partition 0 kept %s from a refused write", got)
	}
	if err := s.AppendPartitions([]PartitionBatch{
		{Partition: 0, Records: []Record{{Key: []byte("a/1"), Value: []byte("1")}}},
		{Partition: 3, Records: []Record{{Key: []byte("b/1"), Value: []byte("2")}, {Key: []byte("b/1"), Value: nil}}},
	}); err != nil {
		t.Fatal(err)
	}
	if got := partitionEntries(t, s, 0) + "|" + partitionEntries(t, s, 3); got != "1 a/1=1;|" {
		t.Fatalf("after a shared write: %s", got)
	}
}

// TestAppendOfRewrittenKeysEqualsOneAppendEach: a batch that writes some
// keys more than once (a put, a tombstone, a put again; a hashed long key
// too) leaves the partition's log — its entries, their sequence numbers
// and order, the key index — as appending each record alone does, which
// is what appending them one after another in a transaction means; the
// writes a later one in the batch undoes are skipped.
func TestAppendOfRewrittenKeysEqualsOneAppendEach(t *testing.T) {
	long := "g/" + strings.Repeat("x", 600)
	before := []Record{{Key: []byte("g/a"), Value: []byte("a0")}, {Key: []byte("g/b"), Value: []byte("b0")}, {Key: []byte(long), Value: []byte("l0")}}
	batch := []Record{
		{Key: []byte("g/meta"), Value: []byte("m1")}, {Key: []byte("g/a")}, {Key: []byte("g/meta"), Value: []byte("m2")},
		{Key: []byte("g/b"), Value: []byte("b1")}, {Key: []byte("g/c"), Value: []byte("c1")}, {Key: []byte(long), Value: []byte("l1")},
		{Key: []byte("g/b")}, {Key: []byte("g/c"), Value: []byte("c2")}, {Key: []byte("g/meta"), Value: []byte("m3")},
		{Key: []byte("g/a"), Value: []byte("a1")}, {Key: []byte(long)}, {Key: []byte("g/d"), Value: []byte("d1")}, {Key: []byte("g/d")},
	}
	open := func(name string) *Store {
		s := openT(t, filepath.Join(t.TempDir(), name))
		t.Cleanup(func() { s.Close() })
		if err := s.Partition(1, testGroup); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendPartitions([]PartitionBatch{{Records: before}}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	together, alone := open("together.db"), open("alone.db")
	if err := together.AppendPartitions([]PartitionBatch{{Records: batch}}); err != nil {
		t.Fatal(err)
	}
	for _, r := range batch {
		if err := alone.AppendPartitions([]PartitionBatch{{Records: []Record{r}}}); err != nil {
			t.Fatal(err)
		}
	}
	got, want := partitionEntries(t, together, 0), partitionEntries(t, alone, 0)
	if got != want {
		t.Fatalf("one batch left\n%s\none append each left\n%s", got, want)
	}
	if live := "11 g/c=c2;12 g/meta=m3;13 g/a=a1;"; got != live {
		t.Fatalf("one batch left\n%s\nwant\n%s", got, live)
	}
	// Reopened, the same.
	path := together.Path()
	together.Close()
	reopened := openT(t, path)
	defer reopened.Close()
	if again := partitionEntries(t, reopened, 0); again != got {
		t.Fatalf("reopened, the log is\n%s\nwas\n%s", again, got)
	}
}
