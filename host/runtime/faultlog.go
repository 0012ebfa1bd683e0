package runtime

import (
	"fmt"
	"sync"
)

// FaultLog wraps a Log and fails the appends a test chooses: for testing
// how the runtime and the coordinators behave when storage fails or a
// partition is fenced.
type FaultLog struct {
	Log
	mu sync.Mutex
	// fail maps a partition (-1: every partition) to the error its next
	// appends get, and how many of them (<0: until cleared).
	fail map[int]fault
	// owners maps a Record.Owner to the error the appends carrying one of
	// its records get, and how many of them.
	owners  map[string]fault
	appends map[int]int
}

type fault struct {
	err   error
	times int
}

// NewFaultLog wraps l.
func NewFaultLog(l Log) *FaultLog {
	return &FaultLog{Log: l, fail: map[int]fault{}, owners: map[string]fault{}, appends: map[int]int{}}
}

// FailAppends makes the next n appends of partition p (-1: of any
// partition; n < 0: all of them until Clear) fail with err (wrap one of
// ErrFenced, ErrStorage, ErrInvalidRecord).
func (f *FaultLog) FailAppends(p, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[p] = fault{err: err, times: n}
}

// FailOwnerAppends makes the next n appends that carry a record of owner
// (Record.Owner: a group) fail with err, whatever their partition; the
// appends of other groups on the same partition go through.
func (f *FaultLog) FailOwnerAppends(owner string, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.owners[owner] = fault{err: err, times: n}
}

// Clear stops every injected failure.
func (f *FaultLog) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.fail)
	clear(f.owners)
}

// Appends returns how many appends partition p attempted.
func (f *FaultLog) Appends(p int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appends[p]
}

// Append implements Log: an injected failure, or the wrapped log's append.
func (f *FaultLog) Append(p int, recs []Record) error {
	f.mu.Lock()
	f.appends[p]++
	err := f.injected(p, recs)
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("partition %d: injected: %w", p, err)
	}
	return f.Log.Append(p, recs)
}

// injected returns the failure the append of recs to partition p gets, if
// any, and counts it off; f.mu is held.
func (f *FaultLog) injected(p int, recs []Record) error {
	for _, key := range []int{p, -1} {
		if ft, ok := f.fail[key]; ok && ft.times != 0 {
			f.fail[key] = ft.taken()
			return ft.err
		}
	}
	for _, r := range recs {
		if ft, ok := f.owners[r.Owner]; ok && ft.times != 0 {
			f.owners[r.Owner] = ft.taken()
			return ft.err
		}
	}
	return nil
}

// taken is the fault after one more append took it.
func (ft fault) taken() fault {
	if ft.times > 0 {
		ft.times--
	}
	return ft
}
