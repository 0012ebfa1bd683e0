package main

import (
	"testing"
	"time"
)

func TestParsePace(t *testing.T) {
	for _, s := range []string{paceEven, paceTick} {
		if got, err := parsePace(s); err != nil || got != s {
			t.Errorf("parsePace(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "poisson", "Even"} {
		if _, err := parsePace(s); err == nil {
			t.Errorf("parsePace(%q): want an error", s)
		}
	}
}

// TestEvenDue: at a rate, request i is due i/rate after the start — one
// every 500 µs at 2,000/s, every 50 µs at 20,000/s — with no rounding
// drift over a long phase, and a window of d holds rate × d due times.
func TestEvenDue(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, c := range []struct {
		rate float64
		gap  time.Duration
	}{{2000, 500 * time.Microsecond}, {20000, 50 * time.Microsecond}, {3, 333333333 * time.Nanosecond}} {
		prev := evenDue(start, c.rate, 0)
		if !prev.Equal(start) {
			t.Fatalf("rate %v: request 0 due %v, want the start", c.rate, prev.Sub(start))
		}
		for i := int64(1); i < 1000; i++ {
			due := evenDue(start, c.rate, i)
			if g := due.Sub(prev); g < c.gap || g > c.gap+time.Nanosecond {
				t.Fatalf("rate %v: gap %d→%d is %v, want %v", c.rate, i-1, i, g, c.gap)
			}
			prev = due
		}
		// A 10 s window [start, start+10s) holds exactly rate × 10 due times.
		n := int64(c.rate * 10)
		if last, next := evenDue(start, c.rate, n-1), evenDue(start, c.rate, n); !last.Before(start.Add(10*time.Second)) || next.Before(start.Add(10*time.Second)) {
			t.Errorf("rate %v: request %d due at %v, %d at %v; want the 10 s window to end between them", c.rate, n-1, last.Sub(start), n, next.Sub(start))
		}
	}
}

// TestTickDue: the tick pacing releases, on each 1 ms tick, every request
// due by then — two per tick at 2,000/s, twenty at 20,000/s, all due at or
// before the tick, none twice.
func TestTickDue(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, c := range []struct {
		rate    float64
		perTick int
	}{{2000, 2}, {20000, 20}} {
		step := tickStep(c.rate)
		var sent int64
		// The first tick, 1 ms in, also releases request 0 (due at the start).
		for k := 1; k <= 100; k++ {
			now := start.Add(time.Duration(k) * time.Millisecond)
			got := tickDue(start, step, sent, now)
			want := c.perTick
			if k == 1 {
				want++
			}
			if len(got) != want {
				t.Fatalf("rate %v tick %d: %d released, want %d", c.rate, k, len(got), want)
			}
			for j, due := range got {
				if due.After(now) || !due.Equal(start.Add(time.Duration(sent+int64(j))*step)) {
					t.Fatalf("rate %v tick %d: release %d due %v", c.rate, k, j, due.Sub(start))
				}
			}
			sent += int64(len(got))
		}
		if want := int64(c.rate/10) + 1; sent != want {
			t.Errorf("rate %v: %d released in 100 ms, want %d", c.rate, sent, want)
		}
	}
}

// TestMeasurePace: lag is release minus due, gaps are between consecutive
// releases in time order, and a burst is a gap under a tenth of 1/rate.
func TestMeasurePace(t *testing.T) {
	start := time.Unix(1000, 0)
	var due, rel []time.Time
	// Pairs released together every millisecond (rate 2,000/s), the
	// second of each pair 500 µs late, out of order as senders report.
	for k := 0; k < 100; k++ {
		d0, d1 := start.Add(time.Duration(k)*time.Millisecond), start.Add(time.Duration(k)*time.Millisecond+500*time.Microsecond)
		r := start.Add(time.Duration(k+1) * time.Millisecond)
		due, rel = append(due, d1, d0), append(rel, r.Add(time.Microsecond), r)
	}
	st := measurePace(due, rel, 2000)
	if st.LagP50us != 501 || st.LagMaxUs != 1000 {
		t.Errorf("lag p50 %v max %v µs, want 501 and 1000", st.LagP50us, st.LagMaxUs)
	}
	if st.GapP10us != 1 || st.GapP90us != 999 {
		t.Errorf("gaps p10 %v p90 %v µs, want 1 and 999", st.GapP10us, st.GapP90us)
	}
	if st.Burst < 0.5 || st.Burst > 0.51 {
		t.Errorf("burst fraction %v, want 100/199", st.Burst)
	}
	if measurePace(nil, nil, 2000) != (paceStats{}) {
		t.Error("no requests must give zero stats")
	}
}
