package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Upstream is one client connection's link to the data plane.
type Upstream interface {
	// Forward sends req and returns the data plane's response, or nil for
	// requests that get no response (Produce with acks=0).
	Forward(ctx context.Context, clientID *string, req kmsg.Request) (kmsg.Response, error)
	Close() error
}

// GroupFunc answers a group-coordination request.
type GroupFunc func(ctx context.Context, req *Request) (kmsg.Response, error)

// Wait waits for the answer to a request a BeginFunc started.
type Wait func(ctx context.Context) (kmsg.Response, error)

// BeginFunc answers a group-coordination request as a GroupFunc does,
// without waiting: the answer if it is ready at once, else a Wait for
// it, which the connection's goroutine calls.
type BeginFunc func(ctx context.Context, req *Request) (kmsg.Response, Wait, error)

// Observer is told about every request served (for metrics); it may be nil.
type Observer interface {
	Served(key int16, d time.Duration, err error)
	Conn(delta int)
}

// Config configures a Server.
type Config struct {
	// Table is what is served and advertised.
	Table *Table
	// MaxRequestBytes bounds a request frame; larger frames close the
	// connection before anything of them is allocated.
	MaxRequestBytes int32
	// Limits, shared by every listener of the process, bound the request
	// bytes in flight and the open connections; nil bounds neither.
	Limits *Limits
	// SASLRequired makes a connection authenticate before anything but
	// ApiVersions, SaslHandshake and SaslAuthenticate is served (Kafka's
	// SASL listener); until then frames over PreAuthMaxRequestBytes close
	// it.
	SASLRequired bool
	// PreAuthMaxRequestBytes bounds a frame before authentication (Kafka's
	// sasl.server.max.receive.size; default 512 KiB).
	PreAuthMaxRequestBytes int32
	// IdleTimeout closes connections that send nothing for this long
	// (Kafka's connections.max.idle.ms; default 10 minutes).
	IdleTimeout time.Duration
	// WriteTimeout bounds writing one response (default 30 s).
	WriteTimeout time.Duration
	// TLS, when set, wraps accepted connections.
	TLS *tls.Config
	// Dial opens the data-plane link of one new client connection. It is
	// called lazily, at the connection's first forwarded request.
	Dial func(ctx context.Context) (Upstream, error)
	// ForwardsFrames: Dial's links forward Produce frames as they came
	// (FrameForwarder) to a cluster that reads them, an external one. A
	// Produce over 1 MiB is then read as it arrives, not at the
	// large-frame pace: it is the data path, which the process forwards
	// without decoding, and the request budget bounds its memory as any
	// frame's (pace.go).
	ForwardsFrames bool
	// Group answers group-coordination requests.
	Group GroupFunc
	// Begin, when set, answers group requests as Group does without
	// waiting: with it and Poller on or auto, on Linux, a listener
	// without TLS, SASL or client certificates serves its connections'
	// heartbeats from the process's own poller (fast.go).
	Begin  BeginFunc
	Poller PollerMode
	// Log receives connection-level events.
	Log *slog.Logger
	// Observer, if set, counts requests and connections.
	Observer Observer
	// Advertised is this listener's node id and address as clients see it.
	Advertised Broker
	// Features, if set, are advertised in ApiVersions v3+.
	Features *Features
	// CertLogin, when set, authenticates a client that presented a
	// verified certificate as the certificate's principal, upstream too
	// (certauth.go); such a connection takes no SASL.
	CertLogin *CertLogin
	// MaxTopologySize returns a group's streams.max.topology.size: a large
	// StreamsGroupHeartbeat whose topology has more subtopologies is
	// answered INVALID_REQUEST before it is read into memory or decoded
	// (screen.go). nil leaves every such heartbeat to the group
	// coordinator.
	MaxTopologySize func(group string) int32
	// Quota, when set, holds the requests of a group over its quota unread
	// until its throttle ends (screen.go).
	Quota GroupQuota
	// MaxReauth caps the SASL session lifetime a client is told and held
	// to (Kafka's connections.max.reauth.ms); 0 leaves the cluster's.
	MaxReauth time.Duration
}

// Server is a Kafka listener: it frames requests, answers each connection's
// pipelined requests in order, and routes them by the version table.
type Server struct {
	cfg Config
	ln  net.Listener

	// base is every request's context; it ends when a Shutdown gives up
	// waiting, so handlers stop too.
	base   context.Context
	cancel context.CancelFunc
	// drain ends when Shutdown starts: connections waiting for request
	// budget stop waiting.
	drain     context.Context
	stopDrain context.CancelFunc
	refused   warnings // connections over a cap
	invalid   warnings // connections closed for an invalid request
	// decoding holds a slot for each frame over smallFrame being decoded
	// on this listener: at most GOMAXPROCS-1 (at least 1) at once, so
	// connections sending large requests cannot keep every core decoding
	// while the small requests of other connections wait for one. nil
	// bounds nothing.
	decoding chan struct{}
	// poll is the process's poller (fast.go), or nil; releasePoll gives
	// the listener's reference back.
	poll        *poller
	releasePoll func()

	mu       sync.Mutex
	conns    map[*conn]struct{}
	draining bool
	// drained is draining for the connections' per-request check,
	// without taking mu: set, under mu, before Shutdown resets their
	// read deadlines.
	drained atomic.Bool
	wg      sync.WaitGroup
}

// NewServer starts serving cfg on ln (which the Server then owns).
func NewServer(ln net.Listener, cfg Config) *Server {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.PreAuthMaxRequestBytes <= 0 {
		cfg.PreAuthMaxRequestBytes = DefaultPreAuthMaxRequestBytes
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	s := &Server{cfg: cfg, ln: ln, conns: make(map[*conn]struct{}), decoding: make(chan struct{}, max(1, goruntime.GOMAXPROCS(0)-1))}
	s.base, s.cancel = context.WithCancel(context.Background())
	s.drain, s.stopDrain = context.WithCancel(context.Background())
	if cfg.Begin != nil && cfg.Poller != PollerOff && cfg.TLS == nil && !cfg.SASLRequired && cfg.CertLogin == nil {
		p, release, err := sharedPoller()
		if err != nil {
			cfg.Log.Warn("kafka listener serves every request on its connection's goroutine", "err", err.Error())
		}
		s.poll, s.releasePoll = p, release
		if p != nil && cfg.Poller == PollerOn {
			p.forceOn()
		}
	}
	s.wg.Add(1)
	go s.accept()
	return s
}

// ctx is every request's context (s.base).
func (s *Server) ctx() context.Context {
	if s.base == nil { // a Server built without NewServer (tests)
		return context.Background()
	}
	return s.base
}

// Addr is the listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.cfg.Log.Error("kafka listener stopped", "addr", s.ln.Addr().String(), "err", err)
			}
			return
		}
		unadmit, err := s.cfg.Limits.admit(nc.RemoteAddr())
		if err != nil {
			nc.Close()
			s.refused.warn(s.cfg.Log.With("remote", nc.RemoteAddr().String()), "kafka connection refused", err)
			continue
		}
		c := &conn{s: s, nc: nc, unadmit: unadmit, log: s.cfg.Log.With("remote", nc.RemoteAddr().String())}
		c.nc, c.pc = s.adoptConn(nc)
		s.mu.Lock()
		if s.draining {
			s.mu.Unlock()
			nc.Close()
			unadmit()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// Shutdown stops accepting, lets every connection finish the request it is
// serving and write its response, then closes the connections. When ctx
// ends first, the requests still in flight are cancelled and the remaining
// connections closed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	s.drained.Store(true)
	if s.stopDrain != nil {
		s.stopDrain()
	}
	for c := range s.conns {
		c.nc.SetReadDeadline(time.Now()) // unblocks idle reads; in-flight requests finish
	}
	s.mu.Unlock()
	s.ln.Close()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		if s.releasePoll != nil {
			s.releasePoll()
		}
		close(done)
	}()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.cancel()
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

type conn struct {
	s       *Server
	nc      net.Conn
	unadmit func() // gives the connection's slot back to the Limits
	log     *slog.Logger
	up      Upstream
	// clientID is the client id of the request being served (Ask sends it).
	clientID *string
	// sasl is the connection's SASL as passed through (reauth.go).
	sasl      saslState
	principal string // of the client certificate (principal.go)
	// closeAfter, when set, closes the connection once the response being
	// served is written (a failed authentication, as Kafka does).
	closeAfter error
	// host is the client's host as Kafka names it, computed at the first
	// request; wbuf is the buffer responses are encoded into, kept between
	// responses up to keptWriteBuffer bytes.
	host string
	wbuf []byte
	// lastClientID is the client id of the last request screen parsed,
	// shared by the requests that name the same (keepClientID).
	lastClientID *string
	// groups: the groups of its recent group requests (throttle.go).
	groups groupsSeen
	// read is the time the frame being served took to copy in, when it
	// had arrived whole (Request.Wire); wrote and wroteFor the time the
	// last group request's response took to encode and write, and its
	// group, charged with that group's next request on the connection.
	read, wrote time.Duration
	wroteFor    string
	// readAt is when the frame being served was copied in, if readFrame
	// timed its copy (the request's start); wroteAt when the connection's
	// last answer was written, if timed and not muted after (the next
	// request's read deadline is extended from it). Each is taken once:
	// a clock read per request saved.
	readAt, wroteAt time.Time
	// rw is what the connection reads and writes (connIO): nc, or raw
	// system calls on its socket.
	rw io.ReadWriter
	// readBy and writeBy are the read and write deadlines last set
	// (extendRead, extendWrite).
	readBy, writeBy time.Time
	// grant is the request budget held by the frame being served, given
	// back by releaseFn (made once per connection: one frame at a time;
	// a frame sent ahead takes its grant along, detachGrant).
	grant     grant
	releaseFn func()
	// ahead are the requests sent upstream whose answers are still to be
	// written, in request order (ahead.go).
	ahead []*outstanding
	// answers writes those answers, one at a time, on a goroutine of its
	// own (ahead.go).
	answers answerer

	// pc is nc when the listener's poller adopted it (fast.go); hand is
	// what its goroutine finishes after a park, fbuf the bytes read while
	// parked, serveFast the park's serve.
	pc        *pollConn
	hand      handoff
	fbuf      []byte
	serveFast func() bool
}

// grant is the request budget of one frame.
type grant struct {
	l    *Limits
	n    int64
	held bool
}

// release gives the frame's bytes back, once.
func (g *grant) release() {
	if g.held {
		g.held = false
		g.l.release(g.n)
	}
}

// unread gives back the bytes of a frame none of whose body was read.
func (g *grant) unread() {
	if g.held {
		g.held = false
		g.l.releaseUnread(g.n)
	}
}

// deadlineSlack is the part of a timeout a deadline may have run down
// before it is moved again: setting a deadline costs a timer update in
// the runtime, and each request would otherwise set two or three, so a
// connection's idle timeout and a response's write timeout run between
// 7/8 of their length and their length.
const deadlineSlack = 8

// extendRead moves the read deadline to now plus the idle timeout unless
// it is still at least 7/8 of the timeout away. (Shutdown's reset of the
// deadline is not tracked here: a connection checks isDraining after
// extending, and a reset deadline is only sooner.)
func (c *conn) extendRead(now time.Time) {
	if moveDeadline(&c.readBy, now, c.s.cfg.IdleTimeout) {
		c.nc.SetReadDeadline(c.readBy)
	}
}

// extendWrite moves the write deadline as extendRead the read deadline,
// by the write timeout.
func (c *conn) extendWrite(now time.Time) {
	if moveDeadline(&c.writeBy, now, c.s.cfg.WriteTimeout) {
		c.nc.SetWriteDeadline(c.writeBy)
	}
}

// moveDeadline sets *by to now+d, reporting true, unless *by is still at
// least d-d/deadlineSlack after now.
func moveDeadline(by *time.Time, now time.Time, d time.Duration) bool {
	if by.Sub(now) >= d-d/deadlineSlack {
		return false
	}
	*by = now.Add(d)
	return true
}

// keptWriteBuffer bounds the response buffer a connection keeps between
// responses: a large response's buffer is dropped once written, so an
// idle connection holds at most this much.
const keptWriteBuffer = 16 << 10

// clientHost returns the client's host, computed once per connection.
func (c *conn) clientHost() string {
	if c.host == "" {
		c.host = javaHost(c.nc.RemoteAddr())
	}
	return c.host
}

// writeResponse encodes resp into the connection's buffer and writes it.
func (c *conn) writeResponse(correlationID int32, resp kmsg.Response) error {
	return c.writeResponseAt(time.Now(), correlationID, resp)
}

// writeResponseAt is writeResponse with the clock read at its call.
func (c *conn) writeResponseAt(now time.Time, correlationID int32, resp kmsg.Response) error {
	c.extendWrite(now)
	b := AppendResponse(c.wbuf[:0], correlationID, resp)
	w := c.rw
	if w == nil { // a conn built without serve (tests)
		w = c.nc
	}
	_, err := w.Write(b)
	c.keepWriteBuffer(b)
	return err
}

// keepWriteBuffer keeps b, a response just written, as the connection's
// buffer for the next one, unless it grew over keptWriteBuffer.
func (c *conn) keepWriteBuffer(b []byte) {
	if cap(b) <= keptWriteBuffer {
		c.wbuf = b
	} else {
		c.wbuf = nil
	}
}

// panicked logs p, a panic recovered while serving a request (a bug), and
// returns the error that closes the connection.
func (c *conn) panicked(p any) error {
	c.log.Error("BUG: panic while serving a request", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	return fmt.Errorf("panic: %v", p)
}

func (c *conn) serve() {
	s := c.s
	if s.cfg.Observer != nil {
		s.cfg.Observer.Conn(1)
		defer s.cfg.Observer.Conn(-1)
	}
	defer func() {
		if c.up != nil {
			c.up.Close()
		}
		c.answers.stop(false) // on every way out, settled or not (ahead.go)
		c.sasl.closeReauth()
		c.nc.Close()
		if c.unadmit != nil {
			c.unadmit()
		}
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	// A small buffer: frames are read straight into their own buffer, so
	// this only batches headers and small pipelined requests, and an open
	// connection costs little.
	c.rw = connIO(c.nc)
	br := bufio.NewReaderSize(c.rw, 8<<10)
	ctx := s.ctx()
	for {
		if err := c.repoll(br); err != nil {
			c.logClose(err)
			return
		}
		if c.parkable(br) {
			finished, err := c.parkAndServe(ctx)
			if err != nil {
				if aerr := c.settle(); aerr != nil {
					err = aerr
				}
				c.logClose(err)
				return
			}
			if finished {
				continue
			}
		}
		if err := c.serveOne(ctx, br); err != nil {
			// The answers of requests sent ahead are written first (as
			// they would have been before this one was read); one that
			// failed is why the connection closes.
			if aerr := c.settle(); aerr != nil {
				err = aerr
			}
			c.logClose(err)
			return
		}
	}
}

// serveOne reads, answers and writes one request, or sends it ahead of
// the answers still outstanding and leaves its answer to be written in
// turn (ahead.go); an error closes the connection. A panic while serving
// one request is a bug: it is logged with the request's key and closes
// only this connection.
func (c *conn) serveOne(ctx context.Context, br *bufio.Reader) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = c.panicked(p)
		}
	}()
	s := c.s
	c.groups.next()
	now := c.wroteAt // the answer before was written just now, if timed
	if c.wroteAt = (time.Time{}); now.IsZero() {
		now = time.Now()
	}
	c.extendRead(now)
	if s.isDraining() { // checked after setting the deadline: Shutdown resets it under s.mu
		return errDraining
	}
	if err := c.roomAhead(); err != nil { // ahead.go
		return err
	}
	frame, h, release, refused, err := c.readFrame(ctx, br)
	if err != nil {
		return err
	}
	if refused != nil {
		if err := c.settle(); err != nil {
			return err
		}
		return c.answerRefusal(ctx, refused)
	}
	defer release()
	start := c.readAt // the frame's copy just ended, if timed
	if c.readAt = (time.Time{}); start.IsZero() {
		start = time.Now()
	}
	if handled, err := c.passThrough(ctx, frame, start, release); handled {
		return err
	}
	decoded, err := s.decodeSlot(ctx, len(frame))
	if err != nil {
		return err
	}
	group := "" // of a one-group coordination request (GroupOf)
	req, perr := func() (*Request, error) {
		defer decoded() // even if parsing panics
		t0 := start
		if s.decoding != nil && len(frame) > smallFrame { // it may have waited for its slot
			t0 = time.Now()
		}
		req, err := h.parse(frame)
		if req != nil {
			req.Decode = time.Since(t0)
			group = GroupOf(req.Body)
			req.Wire = c.wireOf(group)
		}
		return req, err
	}()
	frame = nil
	ahead := len(c.ahead) > 0 && c.aheadable(req, perr)
	if !ahead {
		if err := c.settle(); err != nil {
			return err
		}
	}
	if req != nil {
		if err := c.admit(req); err != nil {
			return err
		}
	}
	if ahead {
		if handled, err := c.sendAhead(ctx, req, start); handled {
			return err
		}
		if err := c.settle(); err != nil {
			return err
		}
	}
	if req != nil {
		c.noteBeat(req.Key, start)
	}
	resp, err := c.respond(ctx, req, perr)
	if s.cfg.Observer != nil && req != nil {
		s.cfg.Observer.Served(req.Key, time.Since(start), err)
	}
	release() // the request is answered: its bytes are no longer in flight
	if err != nil || resp == nil {
		return err
	}
	if err := c.writeAnswer(ctx, req, resp, group); err != nil {
		return err
	}
	return c.closeAfter
}

// writeAnswer writes resp, the answer to req of group ("" for none), and
// mutes the connection for its throttle.
func (c *conn) writeAnswer(ctx context.Context, req *Request, resp kmsg.Response, group string) error {
	mute := c.throttleFor(req, resp) // throttle.go; before resp is written
	t0 := time.Now()
	if err := c.writeResponseAt(t0, req.CorrelationID, resp); err != nil {
		return err
	}
	c.wrote = 0
	c.noteWritten(group, t0, mute)
	c.mute(ctx, mute)
	return nil
}

// noteWritten notes the answer to a request of group, written from t0 to
// now: its time is charged with the group's next request on the
// connection (wireOf), and, unmuted, the next read deadline is extended
// from its end.
func (c *conn) noteWritten(group string, t0 time.Time, mute time.Duration) {
	if group == "" {
		return
	}
	if group != c.wroteFor {
		if group == c.groups.last {
			c.wroteFor = c.groups.last // screen's copy: shared, not cloned again
		} else {
			c.wroteFor = strings.Clone(group) // it may alias the frame
		}
	}
	end := time.Now()
	c.wrote = end.Sub(t0)
	if mute <= 0 {
		c.wroteAt = end
	}
}

// wireOf returns the Wire of a request of group (GroupOf; "" for none):
// the time its frame took to copy in, and the time the connection's last
// response took to write if it answered a request of the same group.
func (c *conn) wireOf(group string) time.Duration {
	d := c.read
	if group != "" && group == c.wroteFor {
		d += c.wrote
	}
	return d
}

// GroupOf is the group of a group-coordination request of one group
// (a classic group's join, sync, heartbeat or leave, a consumer or
// streams group heartbeat); "" for any other.
func GroupOf(body kmsg.Request) string {
	switch b := body.(type) {
	case *kmsg.StreamsGroupHeartbeatRequest:
		return b.Group
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return b.Group
	case *kmsg.JoinGroupRequest:
		return b.Group
	case *kmsg.SyncGroupRequest:
		return b.Group
	case *kmsg.HeartbeatRequest:
		return b.Group
	case *kmsg.LeaveGroupRequest:
		return b.Group
	}
	return ""
}

// answerRefusal answers a request screen refused, once it passed the
// connection's gates (admit).
func (c *conn) answerRefusal(ctx context.Context, r *refusal) error {
	if err := c.admit(r.req); err != nil {
		return err
	}
	if o := c.s.cfg.Observer; o != nil {
		o.Served(r.req.Key, 0, nil)
	}
	if err := c.writeResponse(r.req.CorrelationID, r.resp); err != nil {
		return err
	}
	c.mute(ctx, c.muteFor(r.req, r.resp)) // even on a shared connection: the request is invalid
	return c.closeAfter
}

// admit passes req through the connection's gates (client certificate,
// SASL session and re-authentication, authentication required on the
// listener) and gives it the connection's identity. Every request passes
// here, decoded or forwarded as a frame (passthrough.go).
func (c *conn) admit(req *Request) error {
	s := c.s
	c.certAuthenticate()
	if err := c.sasl.gate(req.Key); err != nil {
		return err
	}
	auth := c.sasl.authenticated()
	req.Listener, req.ClientHost, req.Authenticated = s.cfg.Advertised, c.clientHost(), auth
	if s.cfg.SASLRequired && !auth && !preAuthKeys[req.Key] {
		return fmt.Errorf("%w: %s before authentication", errUnauthenticated, kmsg.NameForKey(req.Key))
	}
	req.SASLUser, req.AuthGeneration, req.CertPrincipal, req.CertAuthenticated = c.sasl.user, c.sasl.gen, c.certPrincipal(), c.sasl.cert
	req.SharedConn = c.groups.sharedNow() // throttle.go
	if s.cfg.Dial != nil {
		req.Session, c.clientID = c, req.ClientID
	}
	return nil
}

// decodeSlot waits for a decoding slot for a frame of n bytes (frames up
// to smallFrame need none) and returns its release; the wait ends with ctx
// (a Shutdown that gave up waiting).
func (s *Server) decodeSlot(ctx context.Context, n int) (release func(), err error) {
	if s.decoding == nil || n <= smallFrame {
		return func() {}, nil
	}
	select {
	case s.decoding <- struct{}{}:
		return func() { <-s.decoding }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Server) isDraining() bool { return s.drained.Load() }

var (
	errDraining        = errors.New("server draining")
	errUnauthenticated = errors.New("request needs SASL authentication")
)

// preAuthKeys are what a connection may send before authenticating on a
// listener requiring SASL (Kafka closes the connection on anything else).
var preAuthKeys = map[int16]bool{
	int16(kmsg.ApiVersions): true, int16(kmsg.SASLHandshake): true, int16(kmsg.SASLAuthenticate): true,
}

// readFrame reads one request frame once the request budget grants its
// declared size: nothing of a frame is allocated before its size passed
// the frame limits (the smaller one before authentication), its start
// passed screen and the budget granted it. release, idempotent, gives the
// bytes back. A frame screen refused is read past, and returned as
// refused, without frame. h is the header screen parsed, if it did.
func (c *conn) readFrame(ctx context.Context, br *bufio.Reader) (frame []byte, h head, release func(), refused *refusal, err error) {
	s := c.s
	n, err := ReadFrameSize(br, s.cfg.MaxRequestBytes)
	if err != nil {
		return nil, head{}, nil, nil, err
	}
	if s.cfg.SASLRequired && !c.sasl.authenticated() && n > s.cfg.PreAuthMaxRequestBytes {
		return nil, head{}, nil, nil, fmt.Errorf("%w: %d bytes before authentication (maximum %d)", ErrFrameSize, n, s.cfg.PreAuthMaxRequestBytes)
	}
	refused, h, err = c.screen(ctx, br, n)
	if refused != nil || err != nil {
		return nil, head{}, nil, refused, err
	}
	drain := s.drain
	if drain == nil { // a Server built without NewServer (tests)
		drain = context.Background()
	}
	if err := s.cfg.Limits.acquire(drain, int64(n)); err != nil {
		if errors.Is(err, context.Canceled) {
			err = errDraining
		}
		return nil, head{}, nil, nil, err
	}
	c.grant = grant{l: s.cfg.Limits, n: int64(n), held: true}
	if c.releaseFn == nil {
		c.releaseFn = c.grant.release
	}
	release = c.releaseFn
	// The wait for budget is not idleness: the frame gets (nearly) a full
	// idle timeout to arrive (unless Shutdown, which resets deadlines
	// under s.mu, began). A frame already in the buffer reads nothing
	// more from the connection: the deadline does not matter to it.
	if br.Buffered() < int(n) {
		c.extendRead(time.Now())
	}
	if s.isDraining() {
		c.grant.unread()
		return nil, head{}, nil, nil, errDraining
	}
	whole := br.Buffered() >= int(n) // nothing to wait for: a copy
	t0 := time.Now()
	paced := n > largeFrame && !c.forwardedAsCame(br) // a small frame's head is not looked at
	frame, err = s.cfg.Limits.readBody(drain, br, n, paced)
	if c.read, c.readAt = 0, (time.Time{}); whole {
		end := time.Now()
		c.read, c.readAt = end.Sub(t0), end
	}
	if errors.Is(err, errFrameNotStarted) {
		c.grant.unread()
	}
	if err != nil {
		release()
		if errors.Is(err, context.Canceled) {
			err = errDraining
		}
		return nil, head{}, nil, nil, err
	}
	return frame, h, release, nil, nil
}

// respond decides the response to one parsed (or unparsable) request. A nil
// response with a nil error means "send nothing" (Produce acks=0).
func (c *conn) respond(ctx context.Context, req *Request, perr error) (kmsg.Response, error) {
	switch {
	case perr == nil:
	case errors.Is(perr, ErrUndecodableVersion) && req.Key == int16(kmsg.ApiVersions):
		return c.apiVersions(kerr.UnsupportedVersion.Code, 0), nil
	default: // unknown key, malformed, or a version no response can be encoded for
		return nil, perr
	}
	e, ok := c.s.cfg.Table.Lookup(req.Key)
	if !ok || req.Version < e.Min || req.Version > e.Max {
		if req.Key == int16(kmsg.ApiVersions) {
			return c.apiVersions(kerr.UnsupportedVersion.Code, 0), nil
		}
		c.log.Debug("unsupported API version", "api", kmsg.NameForKey(req.Key), "version", req.Version)
		return ErrorResponse(req.Body, kerr.UnsupportedVersion.Code), nil
	}
	switch e.Route {
	case RouteLocal:
		return c.apiVersions(0, req.Version), nil
	case RouteGroup:
		return c.s.cfg.Group(ctx, req)
	case RouteSplit:
		return splitters[req.Key](ctx, c, req)
	default:
		return c.forward(ctx, req, req.Body)
	}
}

// forward sends body over this connection's data-plane link (SASL
// requests: reauth.go).
func (c *conn) forward(ctx context.Context, req *Request, body kmsg.Request) (kmsg.Response, error) {
	switch b := body.(type) {
	case *kmsg.SASLHandshakeRequest:
		return c.handshake(ctx, req, b)
	case *kmsg.SASLAuthenticateRequest:
		return c.authenticate(ctx, req, b)
	}
	up, err := c.upstream(ctx)
	if err != nil {
		return nil, err
	}
	return up.Forward(ctx, req.ClientID, body)
}

// upstream is this connection's data-plane link, opened (and, for a
// client certificate, logged in) on first use.
func (c *conn) upstream(ctx context.Context) (Upstream, error) {
	if c.up != nil {
		return c.up, nil
	}
	if c.s.cfg.Dial == nil {
		return nil, errors.New("no data plane configured")
	}
	dial := func() (Upstream, error) {
		up, err := c.s.cfg.Dial(ctx)
		if err != nil {
			return nil, fmt.Errorf("connecting to the data plane: %w", err)
		}
		return up, nil
	}
	var up Upstream
	var err error
	if c.sasl.cert {
		up, err = c.certLogin(ctx, dial)
	} else {
		up, err = dial()
	}
	if err != nil {
		return nil, err
	}
	c.up = up
	return up, nil
}

func (c *conn) group(ctx context.Context, req *Request, body kmsg.Request) (kmsg.Response, error) {
	sub := *req
	sub.Body = body
	return c.s.cfg.Group(ctx, &sub)
}

func (c *conn) logClose(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, errDraining), errors.Is(err, net.ErrClosed):
		c.log.Debug("kafka connection closed", "reason", err.Error())
	case errors.Is(err, ErrUnknownKey), errors.Is(err, ErrUndecodableVersion):
		c.s.invalid.warn(c.log, "closing kafka connection: request cannot be served", err)
	case errors.Is(err, errSessionExpired), errors.Is(err, errReauth):
		c.log.Info("closing kafka connection", "reason", err.Error())
	case errors.Is(err, ErrFrameSize), errors.Is(err, ErrMalformed), errors.Is(err, errUnauthenticated):
		c.s.invalid.warn(c.log, "closing kafka connection: invalid request", err)
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.log.Debug("kafka connection closed", "reason", err.Error())
			return
		}
		c.log.Warn("closing kafka connection", "err", err.Error())
	}
}
