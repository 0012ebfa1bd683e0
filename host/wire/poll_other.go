//go:build !linux

package wire

import (
	"errors"
	"time"
)

type poller struct{}

type pollConn struct{}

func newPoller() (*poller, error) { return nil, errors.New("wire: no poller on this system") }

func sharedPoller() (*poller, func(), error) { return nil, func() {}, nil }

func (p *poller) close() {}

func (p *poller) forceOn() {}

func pollerState() (bool, time.Duration) { return false, 0 }
