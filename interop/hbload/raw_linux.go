package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// rawSender is the open loop's sender over raw sockets (see raw.go): the
// sockets are made with plain syscalls, never handed to Go's poller, so no
// Go thread is woken for their traffic; one locked OS thread writes each
// request at its due time and reads every answer (load). A request costs
// the generator a write, its share of a read and of an epoll wait, and a
// timerfd rearm, where the closed loop through kgo costs a hand-off
// between goroutines each way.
type rawSender struct {
	version int16
	fmtr    *kmsg.RequestFormatter
	conns   []*rawConn
}

// rawConn is one connection and what is in flight on it, oldest first:
// a Kafka server answers a connection's requests in order.
type rawConn struct {
	fd      int
	tag     int32 // its place in rawSender.conns: the epoll events' data
	corr    int32
	in      []byte // bytes read and not yet parsed, at in[:len(in)]
	out     []byte // bytes the socket did not take yet
	polling bool   // EPOLLOUT is registered
	queue   []rawPending
}

type rawPending struct {
	m    *member
	corr int32
	due  time.Time
}

// newRawSender opens n raw connections to addr for StreamsGroupHeartbeat
// version v.
func newRawSender(addr string, n int, v int16) (*rawSender, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	var sa unix.Sockaddr
	family := unix.AF_INET
	if ip4 := ta.IP.To4(); ip4 != nil {
		s4 := &unix.SockaddrInet4{Port: ta.Port}
		copy(s4.Addr[:], ip4)
		sa = s4
	} else {
		s6 := &unix.SockaddrInet6{Port: ta.Port}
		copy(s6.Addr[:], ta.IP.To16())
		sa, family = s6, unix.AF_INET6
	}
	s := &rawSender{version: v, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
	for i := 0; i < n; i++ {
		fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Connect(fd, sa)
			if err == nil {
				// As Go's net package does for every TCP connection
				// (and kgo's therefore): no Nagle delay.
				err = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
			}
			if err == nil {
				err = unix.SetNonblock(fd, true)
			}
			if err != nil {
				unix.Close(fd)
			}
		}
		if err != nil {
			s.close()
			return nil, fmt.Errorf("raw connection to %s: %w", addr, err)
		}
		s.conns = append(s.conns, &rawConn{fd: fd, tag: int32(len(s.conns)), in: make([]byte, 0, 64<<10)})
	}
	return s, nil
}

func (s *rawSender) close() {
	for _, c := range s.conns {
		unix.Close(c.fd)
	}
	s.conns = nil
}

// load releases heartbeats at rate per second for d, paced as pace says,
// at most limit in flight (a due request waits for a free slot and its
// latency counts from its due time), members taken by pick, and then
// waits for the answers still in flight. It runs on an OS thread of its
// own for its whole length.
func (s *rawSender) load(ctx context.Context, rate float64, d time.Duration, pace string, limit int, pick func() *member) rawResult {
	done := make(chan rawResult, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is not unlocked: its timer slack is changed, and it
		// ends with the goroutine rather than go back to Go's pool.
		done <- s.loop(ctx, rate, d, pace, limit, pick)
	}()
	return <-done
}

// rawDrain bounds the wait for the answers in flight after the window.
const rawDrain = 30 * time.Second

func (s *rawSender) loop(ctx context.Context, rate float64, d time.Duration, pace string, limit int, pick func() *member) (r rawResult) {
	fineTimerSlack()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		r.err = fmt.Errorf("epoll_create1: %w", err)
		return r
	}
	defer unix.Close(ep)
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		r.err = fmt.Errorf("timerfd_create: %w", err)
		return r
	}
	defer unix.Close(tfd)
	const timerTag = -1
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, tfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: timerTag}); err != nil {
		r.err = fmt.Errorf("epoll_ctl timerfd: %w", err)
		return r
	}
	for _, c := range s.conns {
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: c.tag}); err != nil {
			r.err = fmt.Errorf("epoll_ctl: %w", err)
			return r
		}
	}
	clk, err := newMonoClock()
	if err != nil {
		r.err = fmt.Errorf("clock_gettime: %w", err)
		return r
	}

	start := time.Now()
	end := start.Add(d)
	var (
		sent     int64
		next     = start // request sent's due time
		inflight int
		armed    time.Time
		evs      = make([]unix.EpollEvent, len(s.conns)+1)
		scratch  []byte
		tbuf     [8]byte
	)
	due := func(i int64) time.Time {
		if pace == paceTick {
			return start.Add(time.Duration(i) * tickStep(rate))
		}
		return evenDue(start, rate, i)
	}
	send := func(m *member, at time.Time) error {
		req := m.request()
		req.Version = s.version
		c := s.conns[m.idx%len(s.conns)]
		c.corr++
		// AppendRequest writes the size at the slice's start: give it an
		// empty one.
		scratch = s.fmtr.AppendRequest(scratch[:0], req, c.corr)
		c.queue = append(c.queue, rawPending{m, c.corr, at})
		r.dues, r.rels = append(r.dues, at), append(r.rels, time.Now())
		return s.write(ep, c, scratch)
	}
	answer := func(c *rawConn, body []byte) error {
		corr, resp, err := parseHeartbeatResponse(body, s.version)
		if err != nil {
			return err
		}
		if len(c.queue) == 0 || c.queue[0].corr != corr {
			return fmt.Errorf("answer with correlation ID %d, none in flight with it first", corr)
		}
		p := c.queue[0]
		c.queue = c.queue[1:]
		inflight--
		r.lat = append(r.lat, time.Since(p.due))
		a, herr := p.m.apply(resp, nil)
		p.m.mu.Unlock()
		if herr != nil {
			r.errs++
		}
		if a.changed {
			r.changed++
		}
		return nil
	}

	for {
		now := time.Now()
		releasing := now.Before(end) && ctx.Err() == nil
		if releasing {
			for inflight < limit && !next.After(now) {
				if err := send(pick(), next); err != nil {
					r.err = err
					return r
				}
				inflight++
				sent++
				next = due(sent)
			}
		} else if inflight == 0 {
			return r
		} else if now.After(end.Add(rawDrain)) {
			r.err = fmt.Errorf("%d answers still in flight %v after the window", inflight, rawDrain)
			return r
		}
		// Wake for the next due request (tick: on the next millisecond
		// boundary of the phase at or after it), the window's end, or
		// the drain's bound.
		wake := end.Add(rawDrain)
		if releasing {
			wake = end
			if inflight < limit {
				w := next
				if pace == paceTick {
					w = start.Add((next.Sub(start) + time.Millisecond - 1).Truncate(time.Millisecond))
				}
				if w.Before(wake) {
					wake = w
				}
			}
		}
		if !wake.Equal(armed) {
			spec := unix.ItimerSpec{Value: unix.NsecToTimespec(clk.mono(wake))}
			if err := unix.TimerfdSettime(tfd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
				r.err = fmt.Errorf("timerfd_settime: %w", err)
				return r
			}
			armed = wake
		}
		n, err := unix.EpollWait(ep, evs, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			r.err = fmt.Errorf("epoll_wait: %w", err)
			return r
		}
		for _, ev := range evs[:n] {
			if ev.Fd == timerTag {
				// Clear the expiry; a later rearm makes it fire again.
				_, _ = unix.Read(tfd, tbuf[:])
				armed = time.Time{}
				continue
			}
			c := s.conns[ev.Fd]
			if ev.Events&unix.EPOLLOUT != 0 {
				if err := s.flush(ep, c); err != nil {
					r.err = err
					return r
				}
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
				if err := s.read(c, answer); err != nil {
					r.err = err
					return r
				}
			}
		}
	}
}

// write sends b on c: queued behind what the socket did not take yet, or
// written now, keeping what it does not take for EPOLLOUT.
func (s *rawSender) write(ep int, c *rawConn, b []byte) error {
	c.out = append(c.out, b...)
	if c.polling {
		return nil
	}
	return s.flush(ep, c)
}

// flush writes what c holds, as far as the socket takes it, and polls
// for room while some is left.
func (s *rawSender) flush(ep int, c *rawConn) error {
	off := 0
	for off < len(c.out) {
		n, err := unix.Write(c.fd, c.out[off:])
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		off += n
	}
	c.out = c.out[:copy(c.out, c.out[off:])]
	if on := len(c.out) > 0; on != c.polling {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: c.tag}
		if on {
			ev.Events |= unix.EPOLLOUT
		}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
			return fmt.Errorf("epoll_ctl: %w", err)
		}
		c.polling = on
	}
	return nil
}

// read takes what c's socket holds (one read: the loop comes back while
// more is there) and hands each whole frame to answer.
func (s *rawSender) read(c *rawConn, answer func(*rawConn, []byte) error) error {
	if cap(c.in)-len(c.in) < 16<<10 {
		grown := make([]byte, len(c.in), 2*cap(c.in))
		copy(grown, c.in)
		c.in = grown
	}
	n, err := unix.Read(c.fd, c.in[len(c.in):cap(c.in)])
	if err == unix.EAGAIN || err == unix.EINTR {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if n == 0 {
		return errors.New("the server closed a connection")
	}
	c.in = c.in[:len(c.in)+n]
	rest := c.in
	for {
		body, r, err := nextFrame(rest)
		if err == errShortFrame {
			break
		}
		if err != nil {
			return err
		}
		if err := answer(c, body); err != nil {
			return err
		}
		rest = r
	}
	// Keep the partial frame at the buffer's start.
	c.in = c.in[:copy(c.in, rest)]
	return nil
}
