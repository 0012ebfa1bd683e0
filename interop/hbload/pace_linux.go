package main

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// sleeper sleeps to absolute times with sub-millisecond precision: on a
// locked OS thread with a fine timer slack, by clock_nanosleep on
// CLOCK_MONOTONIC with TIMER_ABSTIME (Go's own timers wait in epoll, whose
// timeout is in milliseconds).
type sleeper struct {
	clk monoClock
	ok  bool // false: fall back to time.Sleep
}

func newSleeper() *sleeper {
	runtime.LockOSThread()
	fineTimerSlack()
	clk, err := newMonoClock()
	return &sleeper{clk: clk, ok: err == nil}
}

func (s *sleeper) now() time.Time { return time.Now() }

func (s *sleeper) sleepUntil(t time.Time) {
	if !s.ok {
		time.Sleep(time.Until(t))
		return
	}
	ts := unix.NsecToTimespec(s.clk.mono(t))
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		if err != unix.EINTR {
			return
		}
	}
}

func (s *sleeper) close() {
	// The thread's timer slack was changed: let it end with the goroutine
	// rather than return it to Go's pool.
}

// fineTimerSlack sets the calling thread's timer slack to 1 ns, so its
// sleeps and timers end when asked. A failed prctl only costs precision
// (the default slack is 50 µs). The thread must be locked and not be
// handed back to Go's pool.
func fineTimerSlack() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) }

// monoClock maps a time.Time to CLOCK_MONOTONIC nanoseconds, for the
// system calls that take an absolute time: Go's time differences use its
// monotonic reading, which is CLOCK_MONOTONIC on Linux.
type monoClock struct {
	wall time.Time // a reading of time.Now ...
	base int64     // ... and of CLOCK_MONOTONIC at about the same instant, in ns
}

func newMonoClock() (monoClock, error) {
	var ts unix.Timespec
	wall := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return monoClock{}, err
	}
	return monoClock{wall, ts.Nano()}, nil
}

func (k monoClock) mono(t time.Time) int64 { return k.base + t.Sub(k.wall).Nanoseconds() }
