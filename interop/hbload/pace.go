package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// An open-loop phase releases its requests by one of two pacings:
//
//   - even (the default): request i is due at start + i/rate and is
//     released at its due time, to within tens of microseconds, by a
//     goroutine on its own OS thread that sleeps to each due time
//     (sleepUntil) — at 2,000/s one request every 500 µs, as members
//     heartbeating on their own timers send them;
//   - tick: every due time up to now is released on a 1 ms ticker, so at
//     2,000/s the requests leave in pairs every millisecond and at
//     20,000/s in bursts of 20 (the generator's pacing before even was
//     added, kept for comparison).
const (
	paceEven = "even"
	paceTick = "tick"
)

func parsePace(s string) (string, error) { return parseChoice("pace", s, paceEven, paceTick) }

// parseChoice returns s if it is one of the flag's choices.
func parseChoice(flag, s string, choices ...string) (string, error) {
	if slices.Contains(choices, s) {
		return s, nil
	}
	return "", fmt.Errorf("-%s %q: want %s", flag, s, strings.Join(choices, " or "))
}

// evenDue is request i's due time at rate per second from start.
func evenDue(start time.Time, rate float64, i int64) time.Time {
	return start.Add(time.Duration(float64(i) * float64(time.Second) / rate))
}

// tickStep is the tick pacing's spacing of due times (truncated to the
// nanosecond, as it always was).
func tickStep(rate float64) time.Duration {
	return time.Duration(float64(time.Second) / rate)
}

// tickDue returns the due times a tick at now releases when sent requests
// have gone: every one from the sent-th up to now.
func tickDue(start time.Time, step time.Duration, sent int64, now time.Time) []time.Time {
	var out []time.Time
	for due := start.Add(time.Duration(sent) * step); !due.After(now); due = start.Add(time.Duration(sent) * step) {
		out = append(out, due)
		sent++
	}
	return out
}

// schedule sends the due time of every request of an open-loop phase:
// rate per second from now until ctx ends, then closes ticks.
func schedule(ctx context.Context, pace string, rate float64, ticks chan<- time.Time) {
	if pace == paceTick {
		scheduleTick(ctx, rate, ticks)
		return
	}
	scheduleEven(ctx, rate, ticks)
}

func scheduleTick(ctx context.Context, rate float64, ticks chan<- time.Time) {
	defer close(ticks)
	start := time.Now()
	step := tickStep(rate)
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	var sent int64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tk.C:
			for _, due := range tickDue(start, step, sent, now) {
				select {
				case ticks <- due:
				case <-ctx.Done():
					return
				}
				sent++
			}
		}
	}
}

// scheduleEven releases request i at start + i/rate, sleeping to each due
// time on a thread of its own (sleeper): Go's timers wake about 1 ms late
// when the process is otherwise idle, which would pair the requests again.
func scheduleEven(ctx context.Context, rate float64, ticks chan<- time.Time) {
	defer close(ticks)
	s := newSleeper()
	defer s.close()
	start := s.now()
	for i := int64(0); ; i++ {
		due := evenDue(start, rate, i)
		// Sleep in slices of at most 50 ms so a slow rate still sees the
		// phase end.
		for {
			if ctx.Err() != nil {
				return
			}
			if until := time.Until(due); until > 50*time.Millisecond {
				s.sleepUntil(time.Now().Add(50 * time.Millisecond))
				continue
			}
			s.sleepUntil(due)
			break
		}
		select {
		case ticks <- due:
		case <-ctx.Done():
			return
		}
	}
}

// paceStats is how a phase's requests really left: each one's release
// (when a sender took it to send) minus its due time, and the gaps between
// consecutive releases, in microseconds.
type paceStats struct {
	LagP50us float64 `json:"lagP50us"`
	LagP99us float64 `json:"lagP99us"`
	LagMaxUs float64 `json:"lagMaxUs"`
	GapP1us  float64 `json:"gapP1us"`
	GapP10us float64 `json:"gapP10us"`
	GapP50us float64 `json:"gapP50us"`
	GapP90us float64 `json:"gapP90us"`
	GapP99us float64 `json:"gapP99us"`
	Burst    float64 `json:"burstFrac"` // fraction of gaps shorter than a tenth of 1/rate: requests sent together
}

// measurePace computes paceStats from matching due and release times of
// a phase at rate per second.
func measurePace(due, rel []time.Time, rate float64) paceStats {
	var st paceStats
	if len(due) == 0 || len(due) != len(rel) {
		return st
	}
	lag := make([]float64, len(due))
	for i := range due {
		lag[i] = float64(rel[i].Sub(due[i]).Nanoseconds()) / 1e3
	}
	sort.Float64s(lag)
	st.LagP50us, st.LagP99us, st.LagMaxUs = pctF(lag, 0.5), pctF(lag, 0.99), pctF(lag, 1)
	r := make([]int64, len(rel))
	for i, t := range rel {
		r[i] = t.UnixNano()
	}
	sort.Slice(r, func(i, j int) bool { return r[i] < r[j] })
	if len(r) < 2 {
		return st
	}
	gaps := make([]float64, len(r)-1)
	under := 0
	for i := 1; i < len(r); i++ {
		gaps[i-1] = float64(r[i]-r[i-1]) / 1e3
		if gaps[i-1] < 0.1e6/rate {
			under++
		}
	}
	sort.Float64s(gaps)
	st.GapP1us, st.GapP10us, st.GapP50us, st.GapP90us, st.GapP99us = pctF(gaps, 0.01), pctF(gaps, 0.1), pctF(gaps, 0.5), pctF(gaps, 0.9), pctF(gaps, 0.99)
	st.Burst = math.Round(float64(under)/float64(len(gaps))*1e4) / 1e4
	return st
}

func pctF(sorted []float64, p float64) float64 {
	return math.Round(sorted[int(float64(len(sorted)-1)*p)]*10) / 10
}
