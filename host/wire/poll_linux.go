package wire

import (
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// poller watches the sockets it adopted with one edge-triggered epoll
// instance of its own, waited on by one goroutine (run), outside Go's
// poller: a socket is in one poller only, so data arriving wakes one
// thread. A pollConn is a net.Conn over an adopted socket; its reads and
// writes are raw system calls, and a read or write that finds the socket
// empty or full waits for the poller's next edge on it.
//
// The poller's goroutine blocks in epoll_wait as an ordinary system call,
// keeping its P. Go's monitor thread (sysmon) takes a goroutine that has
// run on the same time slice for 10 ms for a long-running one: it
// preempts it and takes its P at each later system call, and keeps its
// own 20 µs period while doing so (docs/BENCHMARKS.md, "One goroutine
// with its own epoll"). run gives its P back (runtime.Gosched) once every
// pollerSlice of running, which starts a new time slice.
type poller struct {
	ep   int
	stop int // an eventfd: written by close to end run
	done chan struct{}

	mu    sync.Mutex
	conns map[int32]*pollConn // by tag, the epoll events' data
	next  int32

	// saturated is set while run spends more than pollerBusy of its time
	// serving parked connections: one goroutine then serves less than the
	// connections' own goroutines would on every core, so parked
	// connections are handed back and no connection parks until it
	// falls below pollerIdle.
	saturated atomic.Bool

	// engaged is set while the process serves at least pollerOn
	// heartbeats a second (note), and cleared below pollerOff: only then
	// do connections move into the poller and park. Below that it saves
	// little CPU, and one goroutine serving every parked connection
	// answers later at the tail than Go's poller, which wakes any idle
	// thread (docs/BENCHMARKS.md, "The process's own poller"); at a few
	// hundred a second the P its goroutine keeps while it waits costs
	// more than it saves (Go's monitor thread takes it back after 10 ms
	// and then polls every 20 µs for a while).
	engaged atomic.Bool
	beats   atomic.Int64 // heartbeats since rateAt
	rateAt  atomic.Int64 // start of the current rate window, in Unix ns
	// cost is the CPU time the poller's thread spends, in ns, per request
	// it answers (measure): the unit of the heartbeat rate note compares
	// it with, whether an edge brings one request or several pipelined
	// ones (a cost per edge, taken in a closed loop's pipelining, kept
	// it off at rates it serves well). answered counts the current slice's
	// answers (serveFrame, which also runs on a connection's goroutine as
	// it parks: hence atomic); busy, wall and reqs are the CPU time, wall
	// time and answers of the slices measured, each decayed by
	// pollerDecay. Only run's goroutine uses those.
	cost             atomic.Int64
	costAt           atomic.Int64 // when cost was last measured, in Unix ns
	answered         atomic.Int64
	busy, wall, reqs float64
	// offUntil, in Unix ns, keeps the poller disengaged for
	// pollerCooldown after it gave its connections back for not keeping
	// up, so that a load it cannot serve does not move them back and
	// forth.
	offUntil atomic.Int64
	// force is PollerOn's forceOn, which engages the poller whatever the
	// rate (still not while it does not keep up), or forceOff, which
	// keeps it off; 0 (PollerAuto) leaves it to the rate.
	force atomic.Int32
}

const (
	forceOn  = 1
	forceOff = 2
)

// The heartbeat rate that engages the poller, and the one below which it
// disengages, measured over windows of at least pollerRateWindow.
// pollerFits is the share of its time the poller is predicted to spend
// serving below which it engages (under pollerBusy, where it gives
// connections back). The poller measures its cost only while it serves,
// so a cost older than pollerCostFor no longer decides: taken under
// other conditions (a closed loop that saturated it, a busier machine),
// it would keep the poller off for good. Past it the rate alone
// engages, and a load the poller cannot serve saturates it again within
// about a second and costs one more cooldown.
const (
	pollerOn         = 5000
	pollerOff        = 3000
	pollerRateWindow = 100 * time.Millisecond
	pollerFits       = 0.5
	pollerCostReqs   = 32
	pollerCostFor    = 10 * time.Second
	pollerCooldown   = 5 * time.Second
)

// note counts a heartbeat served at now, by either path, and re-decides
// engaged at the end of a rate window.
func (p *poller) note(now time.Time) {
	force := p.force.Load()
	if force == forceOff {
		p.engage(false)
		return
	}
	p.beats.Add(1)
	from := p.rateAt.Load()
	ns := now.UnixNano()
	if ns-from < int64(pollerRateWindow) || !p.rateAt.CompareAndSwap(from, ns) {
		return
	}
	rate := float64(p.beats.Swap(0)) / time.Duration(ns-from).Seconds()
	if p.engaged.Load() {
		if p.saturated.Load() {
			p.offUntil.Store(ns + int64(pollerCooldown))
			p.engage(false)
			return
		}
		p.engage(force == forceOn || rate >= pollerOff)
		return
	}
	// Engage where one goroutine keeps up: the rate times what a request
	// costs the poller, while that cost is recent (none before it ever
	// served).
	fits := true
	if ns-p.costAt.Load() < int64(pollerCostFor) {
		fits = rate*time.Duration(p.cost.Load()).Seconds() < pollerFits
	}
	p.engage((force == forceOn || rate >= pollerOn) && fits && ns >= p.offUntil.Load())
}

// engage sets engaged to on, counting the times it engages.
func (p *poller) engage(on bool) {
	if p.engaged.Swap(on) != on && on {
		pollStats.engagements.Add(1)
	}
}

// pollerState reports whether the process's poller is engaged, and its
// cost.
func pollerState() (engaged bool, cost time.Duration) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.p == nil {
		return false, 0
	}
	return shared.p.engaged.Load(), time.Duration(shared.p.cost.Load())
}

// forceOn engages the poller whatever the rate (PollerOn).
func (p *poller) forceOn() {
	p.force.Store(forceOn)
	p.engage(true)
}

// serves reports whether parked connections are served here now.
func (p *poller) serves() bool { return p.engaged.Load() && !p.saturated.Load() }

// The poller's load, measured at the end of each of its goroutine's time
// slices over the recent ones (measure): saturated from pollerBusy of
// its time spent on the CPU, back below pollerIdle.
const (
	pollerBusy  = 0.7
	pollerIdle  = 0.4
	pollerDecay = 100 * time.Millisecond
)

// pollerSlice is how long the poller's goroutine runs before it gives its
// P back: well under sysmon's 10 ms.
const pollerSlice = 8 * time.Millisecond

// stopTag is the epoll data of the poller's eventfd.
const stopTag = -1

// The process's poller, shared by every listener: its goroutine keeps a
// P while it waits, so there is one, and none on one P (sharedPoller).
var shared struct {
	mu    sync.Mutex
	p     *poller
	users int
}

// sharedPoller returns the process's poller, started on first use; a
// process with one P gets none (nil, nil): its goroutine waiting in
// epoll_wait would keep the only P, and every other goroutine would wait
// for sysmon to take it. release gives the reference back; the last
// closes the poller.
func sharedPoller() (p *poller, release func(), err error) {
	if runtime.GOMAXPROCS(0) < 2 {
		return nil, func() {}, nil
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.p == nil {
		if shared.p, err = newPoller(); err != nil {
			return nil, nil, err
		}
	}
	shared.users++
	p = shared.p
	var once sync.Once
	return p, func() {
		once.Do(func() {
			shared.mu.Lock()
			defer shared.mu.Unlock()
			if shared.users--; shared.users == 0 {
				shared.p.close()
				shared.p = nil
			}
		})
	}, nil
}

// newPoller starts a poller.
func newPoller() (*poller, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(ep)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: stopTag}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, stop, &ev); err != nil {
		unix.Close(stop)
		unix.Close(ep)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	p := &poller{ep: ep, stop: stop, done: make(chan struct{}), conns: make(map[int32]*pollConn)}
	go p.run()
	return p, nil
}

// close ends run and releases the poller's descriptors. The pollConns it
// adopted stay open (their reads and writes then wait for no edge): close
// them first.
func (p *poller) close() {
	one := [8]byte{1}
	unix.Write(p.stop, one[:])
	<-p.done
	unix.Close(p.stop)
	unix.Close(p.ep)
}

func (p *poller) run() {
	defer close(p.done)
	evs := make([]unix.EpollEvent, 128)
	slice := p.startSlice(time.Now())
	for {
		n, err := unix.EpollWait(p.ep, evs, -1)
		if now := time.Now(); now.Sub(slice.at) >= pollerSlice {
			p.endSlice(slice, now)
			runtime.Gosched()
			slice = p.startSlice(time.Now())
		}
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			panic("wire: epoll_wait: " + err.Error()) // EBADF, EFAULT, EINVAL: a bug
		}
		for _, ev := range evs[:n] {
			if ev.Fd == stopTag {
				return
			}
			p.mu.Lock()
			c := p.conns[ev.Fd]
			p.mu.Unlock()
			if c != nil {
				c.edge(ev.Events)
			}
		}
	}
}

// slice is one of run's time slices, between two Gosched: its start, and
// the thread run was on then and that thread's CPU time.
type slice struct {
	at  time.Time
	tid int
	cpu time.Duration
}

func (p *poller) startSlice(now time.Time) slice {
	p.answered.Store(0)
	cpu, tid := threadCPU()
	return slice{at: now, tid: tid, cpu: cpu}
}

// endSlice measures the slice s ending at now by the CPU time its thread
// spent, not by the wall time: a thread preempting the poller's would
// inflate that. run gives its P back only between slices, so it stays on
// one thread through a slice unless a lock parked it or the collector
// preempted it; such a slice, seen by the thread's change, is not
// measured.
func (p *poller) endSlice(s slice, now time.Time) {
	cpu, tid := threadCPU()
	p.endSliceWith(s, now, cpu, tid)
}

// pollerSkew is how much more CPU time than wall time a slice may show:
// each clock is read a little after the wall clock, so a slice spent
// running all along can show a few microseconds more. More is a clock
// read on another thread, and the slice is not measured.
const pollerSkew = time.Millisecond

// endSliceWith is endSlice with the thread's CPU time and id read at now.
func (p *poller) endSliceWith(s slice, now time.Time, cpu time.Duration, tid int) {
	busy, wall := cpu-s.cpu, now.Sub(s.at)
	if tid != s.tid || tid == 0 || busy < 0 || busy > wall+pollerSkew {
		return
	}
	p.measure(now, min(busy, wall), wall, int(p.answered.Load()))
}

// measure takes a slice of wall time, ending at end, in which run's
// thread spent busy CPU time and answered requests: it decides saturated
// and the cost of a request. The share and the cost are over the recent
// slices, each weighed down by e every pollerDecay since it ended: a
// slice's spike (the collector's assist, a stop of the world) does not
// decide alone.
func (p *poller) measure(end time.Time, busy, wall time.Duration, answered int) {
	d := math.Exp(-float64(wall) / float64(pollerDecay))
	p.busy = p.busy*d + float64(busy)
	p.wall = p.wall*d + float64(wall)
	p.reqs = p.reqs*d + float64(answered)
	if p.reqs >= pollerCostReqs {
		p.cost.Store(int64(p.busy / p.reqs))
		p.costAt.Store(end.UnixNano())
	}
	share := p.busy / p.wall
	switch {
	case runtime.GOMAXPROCS(0) < 2: // lowered since: serve nothing here
		p.saturated.Store(true)
	case p.saturated.Load():
		p.saturated.Store(share >= pollerIdle)
	case share >= pollerBusy:
		p.saturated.Store(true)
		pollStats.saturations.Add(1)
	}
}

// threadCPU is the CPU time of the calling goroutine's thread, and the
// thread's id; tid is 0 when the goroutine changed threads meanwhile.
func threadCPU() (cpu time.Duration, tid int) {
	tid = unix.Gettid()
	var ts unix.Timespec
	err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	if err != nil || unix.Gettid() != tid {
		return 0, 0
	}
	return time.Duration(ts.Nano()), tid
}

// adopt moves tc's socket into the poller: a duplicate of its descriptor
// is registered, and tc is closed, which takes the socket out of Go's
// poller. On an error tc is left as it was.
func (p *poller) adopt(tc *net.TCPConn) (*pollConn, error) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl", derr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	c := &pollConn{p: p, fd: fd, laddr: tc.LocalAddr(), raddr: tc.RemoteAddr()}
	c.rd.sig = make(chan struct{}, 1)
	c.wr.sig = make(chan struct{}, 1)
	p.mu.Lock()
	for p.conns[p.next] != nil || p.next == stopTag {
		p.next++
	}
	c.tag = p.next
	p.conns[c.tag] = c
	p.next++
	p.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: c.tag}
	if err := unix.EpollCtl(p.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		p.forget(c.tag)
		unix.Close(fd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	tc.Close()
	return c, nil
}

func (p *poller) forget(tag int32) {
	p.mu.Lock()
	delete(p.conns, tag)
	p.mu.Unlock()
}

// pollConn is a net.Conn over a socket a poller adopted. One Read and one
// Write may run at once (as a connection's goroutine and its writer use
// it); deadlines and Close may be called from any goroutine.
type pollConn struct {
	p            *poller
	fd           int
	tag          int32
	laddr, raddr net.Addr

	mu      sync.Mutex
	rd, wr  waiter
	refs    int  // reads and writes in their system calls
	closing bool // Close was called; the last of refs closes fd

	// While the connection's goroutine waits in park, the poller's
	// goroutine serves the socket's bytes itself (serve), one run at a
	// time: parked between runs, serving during one.
	state   parkState
	serveFn func() bool
	// pending are bytes a serve took from the socket and handed back
	// (handBack): Read returns them first.
	pending []byte
}

type parkState uint8

const (
	unparked parkState = iota
	parked
	serving
)

// waiter is one direction's readiness: an edge the poller saw that no
// read or write has acted on yet, a read or write waiting for one, and
// the deadline.
type waiter struct {
	edge     bool
	waiting  bool
	sig      chan struct{} // capacity 1: wakes the waiting read or write
	deadline time.Time
}

// wake wakes w's waiting read or write, if any; it looks again at the
// socket, the deadline and whether the connection closed.
func (w *waiter) wake() {
	if w.waiting {
		w.waiting = false
		select {
		case w.sig <- struct{}{}:
		default:
		}
	}
}

// edge records the poller's events for c; a read edge of a parked
// connection is served on the poller's goroutine.
func (c *pollConn) edge(events uint32) {
	c.mu.Lock()
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.rd.edge = true
		switch {
		case c.state == parked && !c.p.serves(): // its goroutine serves it
			c.state = unparked
			c.rd.wake()
		case c.state == parked:
			c.state = serving
			if events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.wr.edge = true
			}
			c.mu.Unlock()
			c.runServe()
			return
		case c.state == unparked:
			c.rd.wake()
		}
	}
	if events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.wr.edge = true
		c.wr.wake()
	}
	c.mu.Unlock()
}

func (c *pollConn) incref() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.refs++
	return true
}

func (c *pollConn) decref() {
	c.mu.Lock()
	c.refs--
	last := c.closing && c.refs == 0
	c.mu.Unlock()
	if last {
		unix.Close(c.fd)
	}
}

// wait waits for w's next edge, w's deadline or Close. It returns nil when
// the read or write should be tried again.
func (c *pollConn) wait(w *waiter) error {
	c.mu.Lock()
	switch {
	case c.closing:
		c.mu.Unlock()
		return net.ErrClosed
	case w.edge: // seen since the last try began: try again
		w.edge = false
		c.mu.Unlock()
		return nil
	}
	deadline := w.deadline
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		c.mu.Unlock()
		return os.ErrDeadlineExceeded
	}
	w.waiting = true
	c.mu.Unlock()
	c.sleep(w, deadline)
	return nil
}

// park lends the connection to the poller until serve, run on the
// poller's goroutine for each read edge (and here once first: bytes may
// be waiting already), returns false; it returns true to stay parked.
// serve reads and writes the socket with readRaw and writeRaw and hands
// back the bytes it took and did not serve with handBack. park returns
// nil once serve handed the connection back, or the error that ends the
// wait: net.ErrClosed, or os.ErrDeadlineExceeded when the read deadline
// passed while parked.
func (c *pollConn) park(serve func() bool) error {
	c.mu.Lock()
	switch {
	case c.closing:
		c.mu.Unlock()
		return net.ErrClosed
	case len(c.pending) > 0:
		c.mu.Unlock()
		return nil
	}
	c.serveFn, c.state = serve, serving
	c.mu.Unlock()
	c.runServe()
	for {
		c.mu.Lock()
		switch {
		case c.state == unparked:
			c.mu.Unlock()
			return nil
		case c.state == parked && c.closing:
			c.state = unparked
			c.mu.Unlock()
			return net.ErrClosed
		case c.state == parked && !c.rd.deadline.IsZero() && !time.Now().Before(c.rd.deadline):
			c.state = unparked
			c.mu.Unlock()
			return os.ErrDeadlineExceeded
		}
		deadline := c.rd.deadline
		c.rd.waiting = true
		c.mu.Unlock()
		c.sleep(&c.rd, deadline)
	}
}

// runServe runs serveFn, the connection being serving, until it stays
// parked with no read edge since its last run, or hands the connection
// back.
func (c *pollConn) runServe() {
	if !c.incref() {
		c.mu.Lock()
		c.state = unparked
		c.rd.wake()
		c.mu.Unlock()
		return
	}
	defer c.decref()
	for {
		c.mu.Lock()
		c.rd.edge = false // this run sees everything that arrived before it
		c.mu.Unlock()
		stay := c.serveFn()
		c.mu.Lock()
		switch {
		case !stay || c.closing:
			c.state = unparked
			c.rd.wake()
		case c.rd.edge:
			c.mu.Unlock()
			continue
		default:
			c.state = parked
		}
		c.mu.Unlock()
		return
	}
}

// sleep waits for w's signal or, if set, its deadline.
func (c *pollConn) sleep(w *waiter, deadline time.Time) {
	if deadline.IsZero() {
		<-w.sig
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-w.sig:
	case <-t.C:
		c.mu.Lock()
		w.waiting = false
		c.mu.Unlock()
	}
}

// readRaw is one read(2) of the socket into b, for serve: n bytes, or
// the error number (EAGAIN when it is empty; n and errno 0 at its end).
func (c *pollConn) readRaw(b []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}

// writeRaw writes b to the socket until it is full, for serve: the bytes
// written, and the error number that stopped it (EAGAIN when full).
func (c *pollConn) writeRaw(b []byte) (int, syscall.Errno) {
	done := 0
	for done < len(b) {
		rest := b[done:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(unsafe.SliceData(rest))), uintptr(len(rest)))
		switch e {
		case 0:
			done += int(n)
		case syscall.EINTR:
		default:
			return done, e
		}
	}
	return done, 0
}

// hasPending reports whether bytes handed back wait to be read.
func (c *pollConn) hasPending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// handBack keeps a copy of b, bytes serve took from the socket and did
// not serve, for the next Reads.
func (c *pollConn) handBack(b []byte) {
	c.mu.Lock()
	c.pending = append(c.pending, b...)
	c.mu.Unlock()
}

// Read reads into b as net.Conn's Read does: io.EOF at the end of the
// stream, a *net.OpError otherwise.
func (c *pollConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		if c.pending = c.pending[n:]; len(c.pending) == 0 {
			c.pending = nil
		}
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	if !c.incref() {
		return 0, c.opError("read", net.ErrClosed)
	}
	defer c.decref()
	for {
		c.mu.Lock()
		c.rd.edge = false // this try sees everything that arrived before it
		c.mu.Unlock()
		n, e := c.readRaw(b)
		switch {
		case e == 0 && n == 0:
			return 0, io.EOF
		case e == 0:
			return n, nil
		case e == syscall.EAGAIN:
			if err := c.wait(&c.rd); err != nil {
				return 0, c.opError("read", err)
			}
		default:
			return 0, c.opError("read", os.NewSyscallError("read", e))
		}
	}
}

// Write writes all of b as net.Conn's Write does.
func (c *pollConn) Write(b []byte) (int, error) {
	if !c.incref() {
		return 0, c.opError("write", net.ErrClosed)
	}
	defer c.decref()
	done := 0
	for {
		c.mu.Lock()
		c.wr.edge = false // this try sees all the room made before it
		c.mu.Unlock()
		n, e := c.writeRaw(b[done:])
		done += n
		switch e {
		case 0:
			return done, nil
		case syscall.EAGAIN:
			if err := c.wait(&c.wr); err != nil {
				return done, c.opError("write", err)
			}
		default:
			return done, c.opError("write", os.NewSyscallError("write", e))
		}
	}
}

// Close closes the connection: reads and writes waiting return
// net.ErrClosed, and the descriptor is closed once none is in a system
// call (so its number is never reused under one).
func (c *pollConn) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return c.opError("close", net.ErrClosed)
	}
	c.closing = true
	c.rd.wake()
	c.wr.wake()
	last := c.refs == 0
	c.mu.Unlock()
	unix.EpollCtl(c.p.ep, unix.EPOLL_CTL_DEL, c.fd, nil)
	c.p.forget(c.tag)
	if last {
		return unix.Close(c.fd)
	}
	return nil
}

// detach takes the socket out of the poller and returns it as a
// *net.TCPConn in Go's poller; c is closed. Its goroutine calls it
// between requests, with nothing handed back left to read.
func (c *pollConn) detach() (net.Conn, error) {
	c.mu.Lock()
	if c.closing || c.refs > 0 || c.state != unparked || len(c.pending) > 0 {
		c.mu.Unlock()
		return nil, net.ErrClosed
	}
	c.closing = true // the descriptor is the new connection's now
	c.mu.Unlock()
	unix.EpollCtl(c.p.ep, unix.EPOLL_CTL_DEL, c.fd, nil)
	c.p.forget(c.tag)
	f := os.NewFile(uintptr(c.fd), "tcp")
	defer f.Close()
	return net.FileConn(f)
}

func (c *pollConn) LocalAddr() net.Addr  { return c.laddr }
func (c *pollConn) RemoteAddr() net.Addr { return c.raddr }

func (c *pollConn) SetDeadline(t time.Time) error {
	c.setDeadline(&c.rd, t)
	c.setDeadline(&c.wr, t)
	return nil
}

func (c *pollConn) SetReadDeadline(t time.Time) error {
	c.setDeadline(&c.rd, t)
	return nil
}

func (c *pollConn) SetWriteDeadline(t time.Time) error {
	c.setDeadline(&c.wr, t)
	return nil
}

// setDeadline sets w's deadline; a read or write waiting looks at it again.
func (c *pollConn) setDeadline(w *waiter, t time.Time) {
	c.mu.Lock()
	w.deadline = t
	w.wake()
	c.mu.Unlock()
}

func (c *pollConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.laddr, Addr: c.raddr, Err: err}
}
