//go:build !linux

package wire

import (
	"errors"
	"net"
)

// pipeChain is Linux's; elsewhere a Produce is read whole.
type pipeChain struct{}

func newPipeChain(int64) (*pipeChain, error) {
	return nil, errors.New("pipe chain: splice(2) is Linux's")
}

func (p *pipeChain) Close()                               {}
func (p *pipeChain) fillFrom(*net.TCPConn, int64) error   { return errors.ErrUnsupported }
func (p *pipeChain) SpliceTo(*net.TCPConn) (int64, error) { return 0, errors.ErrUnsupported }
func (p *pipeChain) Read([]byte) (int, error)             { return 0, errors.ErrUnsupported }
