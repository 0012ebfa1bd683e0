//go:build !linux

package main

import (
	"context"
	"errors"
	"time"
)

// rawSender needs epoll and timerfd: elsewhere -open raw says so.
type rawSender struct{}

var errRawLinux = errors.New("-open raw needs Linux (epoll, timerfd); use -open kgo")

func newRawSender(string, int, int16) (*rawSender, error) { return nil, errRawLinux }

func (*rawSender) close() {}

func (*rawSender) load(context.Context, float64, time.Duration, string, int, func() *member) rawResult {
	return rawResult{err: errRawLinux}
}
