package store

import (
	goruntime "runtime"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// TestAppendTimedReportsCPU: on Linux an append reports the committer's
// CPU time for its transaction (nonzero: building and syncing a page
// takes some), elsewhere 0; and an empty append costs nothing.
func TestAppendTimedReportsCPU(t *testing.T) {
	_, l := partitionedLog(t, 2)
	var took time.Duration
	for i := range 20 { // a single write may take less than the clock's tick
		d, err := l.AppendTimed(0, []runtime.Record{{Key: []byte{'k', byte(i)}, Value: make([]byte, 4096)}})
		if err != nil {
			t.Fatal(err)
		}
		took += d
	}
	if goruntime.GOOS == "linux" && took <= 0 {
		t.Fatalf("20 appends: took %v", took)
	}
	if goruntime.GOOS != "linux" && took != 0 {
		t.Fatalf("no thread CPU time to read: took %v", took)
	}
	if d, err := l.AppendTimed(1, nil); err != nil || d != 0 {
		t.Fatalf("empty append: %v, %v", d, err)
	}
}

// TestSharesSplitByBytes: a transaction's time goes to its batches by
// their records' bytes.
func TestSharesSplitByBytes(t *testing.T) {
	big := &appendReq{batch: PartitionBatch{Records: []runtime.Record{{Key: []byte("k"), Value: make([]byte, 299)}}}}
	small := &appendReq{batch: PartitionBatch{Records: []runtime.Record{{Key: []byte("k"), Value: make([]byte, 99)}}}}
	shares(400*time.Microsecond, []*appendReq{big, small})
	if big.took != 300*time.Microsecond || small.took != 100*time.Microsecond {
		t.Fatalf("shares of 400µs for 300 and 100 bytes: %v, %v", big.took, small.took)
	}
}
