package gateway

import (
	"context"
	"errors"
	"net"
	"sync"
)

// memAddr is the embedded data plane's address. It names no host any
// resolver knows (.invalid, RFC 2606), so were it ever shown to a client
// (every broker address is rewritten to a coordhost listener) it would
// lead nowhere.
const memAddr = "embedded-data-plane.invalid:9092"

// memListener is the embedded data plane's listener: its connections are
// in-memory pipes that only this process opens (dial), so no other
// process — no local client either — can reach the embedded cluster
// around coordhost's listeners. net.Pipe is unbuffered and synchronous;
// the embedded cluster reads and writes each connection on goroutines of
// their own, and every coordhost side either reads on its own goroutine
// (kgo) or writes one request and then reads its answer (a Link), so a
// write always meets a reader.
type memListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once

	mu     sync.Mutex
	listen bool // Listen handed this listener out
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

var errMemClosed = errors.New("the embedded data plane's in-memory listener is closed")

// Listen is kfake.ListenFn: it hands this listener out once (the
// embedded cluster has one broker).
func (l *memListener) Listen(_, _ string) (net.Listener, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listen {
		return nil, errors.New("the embedded data plane has one in-memory listener")
	}
	l.listen = true
	return l, nil
}

// Accept returns the next connection dial opened.
func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, errMemClosed
	}
}

// Close stops Accept and dial; open connections stay until closed.
func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr is memAddr.
func (l *memListener) Addr() net.Addr { return memNetAddr{} }

// dial opens a connection to the listener.
func (l *memListener) dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		err := errMemClosed
		client.Close()
		server.Close()
		return nil, err
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

// dialer is kgo.Dialer for the embedded cluster: every address is it.
func (l *memListener) dialer(ctx context.Context, _, _ string) (net.Conn, error) { return l.dial(ctx) }

type memNetAddr struct{}

func (memNetAddr) Network() string { return "memory" }
func (memNetAddr) String() string  { return memAddr }
