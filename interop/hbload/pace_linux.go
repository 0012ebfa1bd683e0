package main

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// sleeper sleeps to absolute times with sub-millisecond precision: on a
// locked OS thread with a timer slack of 1 ns, by clock_nanosleep on
// CLOCK_MONOTONIC with TIMER_ABSTIME (Go's own timers wait in epoll, whose
// timeout is in milliseconds).
type sleeper struct {
	wall time.Time // a reading of time.Now ...
	mono int64     // ... and of CLOCK_MONOTONIC at about the same instant, in ns
	ok   bool      // false: fall back to time.Sleep
}

func newSleeper() *sleeper {
	runtime.LockOSThread()
	s := &sleeper{}
	// A failed prctl only costs precision (the default slack is 50 µs).
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	var ts unix.Timespec
	s.wall = time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err == nil {
		s.mono, s.ok = ts.Nano(), true
	}
	return s
}

func (s *sleeper) now() time.Time { return time.Now() }

func (s *sleeper) sleepUntil(t time.Time) {
	if !s.ok {
		time.Sleep(time.Until(t))
		return
	}
	// t's place on CLOCK_MONOTONIC: Go's time.Time differences use its
	// monotonic reading.
	ts := unix.NsecToTimespec(s.mono + t.Sub(s.wall).Nanoseconds())
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
