//go:build !linux

package main

import "time"

// sleeper falls back to time.Sleep off Linux (precision about a
// millisecond or worse, depending on the system).
type sleeper struct{}

func newSleeper() *sleeper                { return &sleeper{} }
func (s *sleeper) now() time.Time         { return time.Now() }
func (s *sleeper) sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }
func (s *sleeper) close()                 {}
