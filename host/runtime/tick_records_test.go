package runtime_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/coordhost/coordhost/host/runtime"
)

// sliceShard is a Shard whose only work is one Tick, due at once, that
// writes n records and remembers the array it handed back.
type sliceShard struct {
	n      int
	ticked atomic.Bool
	handed atomic.Pointer[runtime.Record] // the returned slice's first element
}

func (s *sliceShard) Replay(runtime.Record) error { return nil }

func (s *sliceShard) Step(_ int64, in any) []runtime.Record {
	if _, ok := in.(runtime.Tick); !ok || s.ticked.Swap(true) {
		return nil
	}
	recs := make([]runtime.Record, s.n)
	for i := range recs {
		recs[i] = runtime.Record{Key: fmt.Appendf(nil, "mass/m%d", i), Value: []byte("fenced"), Owner: "mass"}
	}
	s.handed.Store(unsafe.SliceData(recs))
	return recs
}

func (s *sliceShard) Commit()        {}
func (s *sliceShard) Rollback(error) {}
func (s *sliceShard) Unload()        {}
func (s *sliceShard) NextDeadline() (int64, bool) {
	if s.ticked.Load() {
		return 0, false
	}
	return time.Now().UnixMilli() - 1, true
}

// arrayLog is a MemLog that reports the array of every append's records.
type arrayLog struct {
	*runtime.MemLog
	appended chan *runtime.Record
}

func (l arrayLog) Append(p int, recs []runtime.Record) error {
	l.appended <- unsafe.SliceData(recs)
	return l.MemLog.Append(p, recs)
}

// TestTickRecordsAppendedWithoutCopy: a round of one Tick appends the
// records the Tick returned in the array the shard handed over (a mass
// expiry's slice: hundreds of records), not in a copy. Before, the round
// copied every step's records into an array of its own, a second array
// of the whole slice's records for the garbage collector.
func TestTickRecordsAppendedWithoutCopy(t *testing.T) {
	sh := &sliceShard{n: 300}
	log := arrayLog{MemLog: runtime.NewMemLog(), appended: make(chan *runtime.Record, 1)}
	startCfg(t, runtime.Config{Partitions: 1, Workers: 1, Log: log,
		NewShard: func(int) (runtime.Shard, error) { return sh, nil }})
	select {
	case got := <-log.appended:
		if want := sh.handed.Load(); got != want {
			t.Fatalf("the Tick's %d records were appended from a copy (array %p), not the array the shard returned (%p)", sh.n, got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Tick's records were never appended")
	}
}
