package experiment

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi/metrics"
)

// fillInts sets every int field under v (a struct) to next() and counts
// them.
func fillInts(v reflect.Value, next func() int) (n int) {
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.Struct:
			n += fillInts(f, next)
		case reflect.Int:
			f.SetInt(int64(next()))
			n++
		}
	}
	return n
}

// TestReportPacking: a history entry's packed metrics give back every
// count of the report (each a different value, so two swapped counts
// show) and its compute time; a count beyond an int32 is kept as it is.
func TestReportPacking(t *testing.T) {
	for _, big := range []bool{false, true} {
		var r metrics.Report
		k := 0
		n := fillInts(reflect.ValueOf(&r).Elem(), func() int {
			k++
			if big && k == 20 {
				return math.MaxInt32 + 1
			}
			return 1000 + k
		})
		r.ComputeTime = 1234567 * time.Nanosecond
		if n != reportCounts {
			t.Fatalf("metrics.Report has %d counts, the packing keeps %d", n, reportCounts)
		}
		p := packReport(r)
		if got := p.unpack(); got != r {
			t.Fatalf("big=%v: packed and unpacked %+v, want %+v", big, got, r)
		}
		if (p.full != nil) != big {
			t.Fatalf("big=%v: kept the full report: %v", big, p.full != nil)
		}
	}
}

// TestEntriesRing: a group's history keeps the last limit targets, oldest
// first, and never holds room for more.
func TestEntriesRing(t *testing.T) {
	const limit = 5
	var es entries
	for epoch := int32(1); epoch <= 12; epoch++ {
		es.add(entry{epoch: epoch}, limit)
		if cap(es.s) > limit {
			t.Fatalf("after %d targets the ring has room for %d", epoch, cap(es.s))
		}
		var got []int32
		es.all(func(e *entry) { got = append(got, e.epoch) })
		var want []int32
		for e := max(1, epoch-limit+1); e <= epoch; e++ {
			want = append(want, e)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %d targets: %v, want %v", epoch, got, want)
		}
	}
}
