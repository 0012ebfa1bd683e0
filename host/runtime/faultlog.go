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
	fail    map[int]fault
	appends map[int]int
}

type fault struct {
	err   error
	times int
}

// NewFaultLog wraps l.
func NewFaultLog(l Log) *FaultLog {
	return &FaultLog{Log: l, fail: map[int]fault{}, appends: map[int]int{}}
}

// FailAppends makes the next n appends of partition p (-1: of any
// partition; n < 0: all of them until Clear) fail with err (wrap one of
// ErrFenced, ErrStorage, ErrInvalidRecord).
func (f *FaultLog) FailAppends(p, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[p] = fault{err: err, times: n}
}

// Clear stops every injected failure.
func (f *FaultLog) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.fail)
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
	var err error
	for _, key := range []int{p, -1} {
		ft, ok := f.fail[key]
		if !ok || ft.times == 0 {
			continue
		}
		if ft.times > 0 {
			ft.times--
			f.fail[key] = ft
		}
		err = ft.err
		break
	}
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("partition %d: injected: %w", p, err)
	}
	return f.Log.Append(p, recs)
}
