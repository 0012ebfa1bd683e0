package wire

import (
	"fmt"
	"io"
	"net"
	"syscall"
	"unsafe"
)

// pipeChainPipe is the size of each pipe of a pipeChain: Linux's default
// most an unprivileged process may ask for (/proc/sys/fs/pipe-max-size).
const pipeChainPipe = 1 << 20

const (
	fSetPipeSize = 1031 // F_SETPIPE_SZ
	spliceMove   = 1    // SPLICE_F_MOVE
	spliceNonblk = 2    // SPLICE_F_NONBLOCK
)

// pipeChain holds the bytes of a frame in kernel pipes, read from a TCP
// socket and written to another with splice(2): they never pass through
// the process's memory. Its pipes are made before anything is read, so a
// system that refuses them (a user's pipe pages used up, descriptors
// used up) costs nothing but the frame's ordinary read.
//
// A pipe holds 256 pieces of what a socket received, not 1 MiB of bytes:
// bytes that came in small pieces (a network card's packets) fill its
// slots first. What the pipes cannot hold then is read into memory, the
// chain's tail, within the request budget that granted the whole frame.
type pipeChain struct {
	pipes [][2]int // read end, write end
	fill  []int    // bytes in each pipe
	at    int      // the pipe Read is reading
	tail  []byte   // the bytes after the pipes', read into memory
}

// newPipeChain makes the pipes for n bytes.
func newPipeChain(n int64) (*pipeChain, error) {
	p := &pipeChain{}
	for held := int64(0); held < n; held += pipeChainPipe {
		var fds [2]int
		if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
			p.Close()
			return nil, fmt.Errorf("pipe: %w", err)
		}
		p.pipes, p.fill = append(p.pipes, fds), append(p.fill, 0)
		size, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fds[1]), fSetPipeSize, pipeChainPipe)
		if errno != 0 || size < pipeChainPipe {
			p.Close()
			return nil, fmt.Errorf("sizing a pipe to %d bytes: %v", pipeChainPipe, errno)
		}
	}
	return p, nil
}

// Close closes the pipes, dropping what they hold.
func (p *pipeChain) Close() {
	for _, fds := range p.pipes {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
	}
	p.pipes, p.fill, p.tail = nil, nil, nil
}

// fillFrom moves n bytes, all the chain was made for, from tc's socket
// into the pipes, and what they cannot hold into its tail, waiting for
// them in tc's poller (its read deadline holds).
func (p *pipeChain) fillFrom(tc *net.TCPConn, n int64) error {
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	for i := 0; n > 0; i++ {
		if i == len(p.pipes) {
			return p.readTail(tc, n)
		}
		want, in := int(min(n, pipeChainPipe)), 0
		var serr error
		err := rc.Read(func(fd uintptr) bool {
			for in < want {
				k, errno := syscall.Splice(int(fd), nil, p.pipes[i][1], nil, want-in, spliceMove|spliceNonblk)
				switch {
				case errno == syscall.EINTR:
					continue
				case errno == syscall.EAGAIN:
					// The socket is empty, or the pipe's slots are all
					// taken by small pieces: then the next pipe goes on.
					return queued(fd) > 0
				case errno != nil:
					serr = errno
				case k == 0:
					serr = io.ErrUnexpectedEOF
				}
				if serr != nil {
					return true
				}
				in += int(k)
			}
			return true
		})
		p.fill[i] += in
		n -= int64(in)
		if err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readTail reads the chain's last n bytes from tc into memory.
func (p *pipeChain) readTail(tc *net.TCPConn, n int64) error {
	p.tail = make([]byte, n)
	if _, err := io.ReadFull(tc, p.tail); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}

// queued is the bytes in socket fd's receive queue (TIOCINQ, which is SIOCINQ on a socket); 0 when the
// kernel will not say.
func queued(fd uintptr) int {
	var q int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&q))); errno != 0 {
		return 0
	}
	return int(q)
}

// SpliceTo moves the bytes held to tc's socket, waiting for room in tc's
// poller (its write deadline holds). It is KernelReader's: the link of a
// Produce read into pipes writes them on without copying them.
func (p *pipeChain) SpliceTo(tc *net.TCPConn) (int64, error) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var done int64
	for ; p.at < len(p.pipes); p.at++ {
		var serr error
		err := rc.Write(func(fd uintptr) bool {
			for p.fill[p.at] > 0 {
				k, errno := syscall.Splice(p.pipes[p.at][0], nil, int(fd), nil, p.fill[p.at], spliceMove|spliceNonblk)
				switch {
				case errno == syscall.EINTR:
					continue
				case errno == syscall.EAGAIN: // the pipe is not empty: the socket is full
					return false
				case errno != nil:
					serr = errno
					return true
				}
				p.fill[p.at] -= int(k)
				done += k
			}
			return true
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return done, err
		}
	}
	if len(p.tail) > 0 {
		k, err := tc.Write(p.tail)
		done += int64(k)
		p.tail = p.tail[k:]
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// Read reads the bytes held, in order: for a link that is not a plain
// TCP socket (TLS to the cluster), and for a frame served whole after
// all.
func (p *pipeChain) Read(b []byte) (int, error) {
	for p.at < len(p.pipes) && p.fill[p.at] == 0 {
		p.at++
	}
	if p.at == len(p.pipes) {
		if len(p.tail) == 0 {
			return 0, io.EOF
		}
		k := copy(b, p.tail)
		p.tail = p.tail[k:]
		return k, nil
	}
	k, err := syscall.Read(p.pipes[p.at][0], b[:min(len(b), p.fill[p.at])])
	if err != nil {
		return 0, fmt.Errorf("reading a pipe: %w", err)
	}
	p.fill[p.at] -= k
	return k, nil
}
