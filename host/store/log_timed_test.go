package store

import (
	goruntime "runtime"
	"strings"
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

// TestCommitterWaitsUnwired: between transactions the committer is not
// wired to its thread (it is only for a transaction's length, to read
// the thread's CPU time), so waking it for the next append does not
// hand a processor to a parked thread (Log.transact).
func TestCommitterWaitsUnwired(t *testing.T) {
	_, l := partitionedLog(t, 2)
	if _, err := l.AppendTimed(0, []runtime.Record{{Key: []byte("k"), Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		buf := make([]byte, 1<<20)
		buf = buf[:goruntime.Stack(buf, true)]
		header, waiting := committerHeader(string(buf))
		if header == "" {
			t.Fatalf("no committer goroutine in\n%s", buf)
		}
		if waiting {
			if strings.Contains(header, "locked to thread") {
				t.Fatalf("the committer waits wired to its thread: %s", header)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the committer did not wait for an append within 5 s: %s", header)
		}
		time.Sleep(time.Millisecond)
	}
}

// committerHeader is the header line of the committer goroutine's stack
// in a dump of every goroutine's ("goroutine 7 [select]:"), and whether
// it is waiting for the next append (blocked in commit's select).
func committerHeader(dump string) (string, bool) {
	for _, g := range strings.Split(dump, "\n\n") {
		if !strings.Contains(g, "store.(*Log).commit(") {
			continue
		}
		header, _, _ := strings.Cut(g, "\n")
		return header, strings.Contains(header, "[select") && !strings.Contains(g, "store.(*Log).transact(")
	}
	return "", false
}
