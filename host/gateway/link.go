package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// maxResponseBytes bounds one response frame read from the data plane.
const maxResponseBytes = 1 << 30

// Link is one client connection's own connection to one data-plane node:
// requests are written with the client's id and answered in order, and
// every broker address in a response is rewritten to a coordhost listener.
// A Link is used by its client connection: one goroutine sends (Send,
// SendFrame, or the first half of Forward and ForwardFrame) while at most
// one other reads the answers, in the order the requests were sent.
type Link struct {
	dp   *DataPlane
	node int32
	nc   net.Conn
	rw   io.ReadWriter // nc's socket I/O (wire.SocketIO)
	br   *bufio.Reader
	corr int32

	// The wait for the next answer (Await), guarded by amu.
	amu      sync.Mutex
	due      []time.Time // the deadlines of the answers not yet read, in order
	awaiting bool        // Await waits in br
	woken    bool        // Wake was called since Await last returned
}

// Dial opens a Link to data-plane node. It implements wire.Config.Dial for
// the listener of that node.
func (d *DataPlane) Dial(ctx context.Context, node int32) (*Link, error) {
	addr, ok := d.nodeAddr(node)
	if !ok {
		return nil, fmt.Errorf("data-plane node %d is unknown", node)
	}
	dctx, cancel := context.WithTimeout(ctx, d.cfg.DialTimeout)
	defer cancel()
	var nc net.Conn
	var err error
	switch {
	case d.mem != nil:
		nc, err = d.mem.dial(dctx)
	case d.cfg.TLS != nil:
		tc := d.cfg.TLS.Clone()
		if tc.ServerName == "" {
			tc.ServerName, _, _ = net.SplitHostPort(addr)
		}
		nc, err = (&tls.Dialer{Config: tc}).DialContext(dctx, "tcp", addr)
	default:
		nc, err = (&net.Dialer{}).DialContext(dctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("dialing data-plane node %d at %s: %w", node, addr, err)
	}
	return newLink(d, node, nc), nil
}

// newLink is the Link to node over nc, read and written through nc's
// socket I/O (wire.SocketIO).
func newLink(d *DataPlane, node int32, nc net.Conn) *Link {
	rw := wire.SocketIO(nc)
	return &Link{dp: d, node: node, nc: nc, rw: rw, br: bufio.NewReaderSize(rw, 64<<10)}
}

// Forward sends req and returns the rewritten response; it returns nil
// for a Produce with acks=0, which gets no response.
func (l *Link) Forward(ctx context.Context, clientID *string, req kmsg.Request) (kmsg.Response, error) {
	if l.dp.cluster == nil {
		return l.roundTrip(ctx, clientID, req)
	}
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		if resp := l.dp.fetchSessions.refuse(l.node, r); resp != nil {
			return resp, nil
		}
	case *kmsg.MetadataRequest:
		if r.AllowAutoTopicCreation && len(r.Topics) > 0 {
			return l.metadataCreating(ctx, clientID, r)
		}
	case *kmsg.CreateTopicsRequest:
		return l.createTopicsChecked(ctx, clientID, r)
	case *kmsg.CreateACLsRequest, *kmsg.DeleteACLsRequest, *kmsg.AlterUserSCRAMCredentialsRequest:
		if l.dp.cfg.Security != nil {
			return securityFromConfigOnly(req), nil
		}
	}
	return l.roundTrip(ctx, clientID, req)
}

// roundTrip writes req to the data plane and reads its answer.
func (l *Link) roundTrip(ctx context.Context, clientID *string, req kmsg.Request) (kmsg.Response, error) {
	recv, err := l.send(ctx, clientID, req)
	if err != nil || recv == nil {
		return nil, err
	}
	return recv()
}

// Send is Forward's first half (wire.Pipeliner): it writes req to the data
// plane and returns the reading of its answer, to call after the answers
// of the requests sent before it were read. The requests Forward answers
// otherwise than by one round trip (the embedded data plane's) are
// refused with wire.ErrNotPassable, nothing sent.
func (l *Link) Send(ctx context.Context, clientID *string, req kmsg.Request) (recv func() (kmsg.Response, error), err error) {
	if l.dp.cluster != nil {
		return nil, wire.ErrNotPassable
	}
	return l.send(ctx, clientID, req)
}

// send writes req and returns the reading of its answer.
func (l *Link) send(ctx context.Context, clientID *string, req kmsg.Request) (recv func() (kmsg.Response, error), err error) {
	deadline, stop := l.arm(ctx, requestWait(req))
	l.corr++
	corr := l.corr
	var opts []kmsg.RequestFormatterOpt
	if clientID != nil {
		opts = append(opts, kmsg.FormatterClientID(*clientID))
	}
	buf := kmsg.NewRequestFormatter(opts...).AppendRequest(nil, req, corr)
	if _, err := l.rw.Write(buf); err != nil {
		stop()
		return nil, fmt.Errorf("data-plane node %d: writing %s: %w", l.node, kmsg.NameForKey(req.Key()), err)
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		stop()
		return nil, nil
	}
	l.answerDue(deadline)
	return func() (kmsg.Response, error) {
		defer stop()
		if err := l.readBy(ctx, deadline); err != nil {
			return nil, err
		}
		return l.receive(req, corr)
	}, nil
}

// receive reads the answer of req, sent with correlation id corr.
func (l *Link) receive(req kmsg.Request, corr int32) (kmsg.Response, error) {
	frame, err := wire.ReadFrame(l.br, maxResponseBytes)
	if err != nil {
		return nil, fmt.Errorf("data-plane node %d: reading %s response: %w", l.node, kmsg.NameForKey(req.Key()), err)
	}
	got, resp, err := wire.ParseResponse(frame, req)
	if err != nil {
		return nil, fmt.Errorf("data-plane node %d: %w", l.node, err)
	}
	if got != corr {
		return nil, fmt.Errorf("data-plane node %d: response correlation id %d, want %d", l.node, got, corr)
	}
	if err := l.dp.rewrite(resp); err != nil {
		return nil, err
	}
	if l.dp.txns != nil {
		l.dp.txns.observe(req, resp)
	}
	if ct, ok := req.(*kmsg.CreateTopicsRequest); ok && l.dp.cfg.TopicsCreated != nil && !ct.ValidateOnly && anyCreated(resp.(*kmsg.CreateTopicsResponse)) {
		l.dp.cfg.TopicsCreated()
	}
	if fetch, ok := req.(*kmsg.FetchRequest); ok && l.dp.fetchSessions != nil {
		l.dp.fetchSessions.observe(l.node, fetch, resp.(*kmsg.FetchResponse))
	}
	return resp, nil
}

// arm bounds the link's I/O for one request the data plane may hold for
// wait: the request timeout beyond wait, or ctx's deadline if sooner, and
// ctx's cancellation. It sets the write deadline and returns the deadline
// for reading the answer, which the reader sets once the answers before
// it are read (a pipelined request's read deadline must not cut short
// the wait of one sent before it). The returned stop disarms the
// cancellation.
func (l *Link) arm(ctx context.Context, wait time.Duration) (deadline time.Time, stop func() bool) {
	deadline = time.Now().Add(l.dp.cfg.RequestTimeout + wait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	l.nc.SetWriteDeadline(deadline)
	return deadline, context.AfterFunc(ctx, func() { l.nc.SetDeadline(time.Now()) }) // cancellation unblocks I/O
}

// readBy sets the read deadline of an answer about to be read, unless
// ctx ended: its cancellation's deadline is not to be moved.
func (l *Link) readBy(ctx context.Context, deadline time.Time) error {
	l.answerRead()
	l.nc.SetReadDeadline(deadline)
	if err := ctx.Err(); err != nil {
		l.nc.SetDeadline(time.Now())
		return fmt.Errorf("data-plane node %d: %w", l.node, err)
	}
	return nil
}

// anyCreated reports whether a CreateTopics response created a topic.
func anyCreated(r *kmsg.CreateTopicsResponse) bool {
	for _, t := range r.Topics {
		if t.ErrorCode == 0 {
			return true
		}
	}
	return false
}

// Close closes the link.
func (l *Link) Close() error { return l.nc.Close() }

// requestWait is how long the data plane may legitimately hold req before
// answering (fetch long-poll, produce and admin timeouts).
func requestWait(req kmsg.Request) time.Duration {
	var ms int32
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		ms = r.MaxWaitMillis
	case *kmsg.ProduceRequest:
		ms = r.TimeoutMillis
	case kmsg.TimeoutRequest:
		ms = r.Timeout()
	}
	if ms < 0 {
		ms = 0
	}
	return time.Duration(ms) * time.Millisecond
}

// ForwardFrame forwards a Produce or Fetch request frame without decoding
// its body (wire.FrameForwarder): its correlation id is replaced in place
// by the link's, and the response frame comes back as the data plane sent
// it unless it names brokers (a partition whose leader moved, KIP-951),
// which are rewritten as in Forward. The embedded data plane's requests
// are decoded (wire.ErrNotPassable): it watches fetch sessions and
// transactional offsets on the way.
func (l *Link) ForwardFrame(ctx context.Context, req *wire.Request, frame []byte, bodyAt int) (resp []byte, done func(), err error) {
	recv, err := l.SendFrame(ctx, req, frame, bodyAt)
	if err != nil || recv == nil {
		return nil, nil, err
	}
	return recv()
}

// SendFrame is ForwardFrame's first half (wire.Pipeliner): it writes the
// frame and returns the reading of its answer, to call after the answers
// of the requests sent before it were read.
func (l *Link) SendFrame(ctx context.Context, req *wire.Request, frame []byte, bodyAt int) (recv func() (resp []byte, done func(), err error), err error) {
	hint, err := l.frameHint(req, frame, bodyAt)
	if err != nil {
		return nil, err
	}
	name := kmsg.NameForKey(req.Key)
	corr, deadline, stop, err := l.sendFrame(ctx, name, frame, hint)
	if err != nil {
		return nil, err
	}
	if hint.noResponse {
		return nil, nil
	}
	return func() ([]byte, func(), error) {
		defer stop()
		if err := l.readBy(ctx, deadline); err != nil {
			return nil, nil, err
		}
		return l.receiveFrame(req, name, corr)
	}, nil
}

// streamedFetchVersion is the version a Fetch goes to the data plane as
// when its answer is streamed (StreamFrame). Kafka 4.4's Fetch v16 to v18
// requests are v15's bytes but for tagged fields only a follower sets
// (v17's replica directory id, v18's high watermark), and their answers
// are v15's but for KIP-951's node endpoints (v16+): an answer to v15
// decodes as the same answer to the client's version, and it names no
// broker to rewrite, so it can be written on before it is read whole.
// The difference: a consumer learns where a moved partition leader is
// from a metadata refresh, not from the fetch's answer.
const streamedFetchVersion = 15

// StreamFrame is SendFrame for a Fetch to an external cluster, whose
// answer recv copies to the client as it arrives (wire.Streamer):
// spliced in the kernel when both connections are plain TCP, never held
// whole in memory. A Fetch of v16 or later goes as v15
// (streamedFetchVersion). Other requests are refused with
// wire.ErrNotPassable, nothing sent.
func (l *Link) StreamFrame(ctx context.Context, req *wire.Request, frame []byte, bodyAt int) (recv func(correlationID int32, begin func() io.Writer) error, err error) {
	if req.Key != int16(kmsg.Fetch) {
		return nil, wire.ErrNotPassable
	}
	hint, err := l.frameHint(req, frame, bodyAt)
	if err != nil {
		return nil, err
	}
	if req.Version > streamedFetchVersion {
		binary.BigEndian.PutUint16(frame[2:4], uint16(streamedFetchVersion))
	}
	name := kmsg.NameForKey(req.Key)
	corr, deadline, stop, err := l.sendFrame(ctx, name, frame, hint)
	if err != nil {
		return nil, err
	}
	return func(clientCorr int32, begin func() io.Writer) error {
		defer stop()
		if err := l.readBy(ctx, deadline); err != nil {
			return err
		}
		return l.streamFrame(name, corr, clientCorr, begin)
	}, nil
}

// frameHint reads what forwarding a frame needs from its body; a request
// the link must decode (the embedded data plane's, or a body too short
// for its hint: the decoded path refuses it as it always did) is refused
// with wire.ErrNotPassable.
func (l *Link) frameHint(req *wire.Request, frame []byte, bodyAt int) (forwardHint, error) {
	if l.dp.cluster != nil || bodyAt < 0 || bodyAt > len(frame) {
		return forwardHint{}, wire.ErrNotPassable
	}
	hint, ok := frameHint(req.Key, req.Version, frame[bodyAt:])
	if !ok {
		return forwardHint{}, wire.ErrNotPassable
	}
	return hint, nil
}

// sendFrame writes a request frame with the link's next correlation id
// and returns it, the deadline of its answer, and the disarming of the
// request's cancellation (Link.arm), which the send disarms itself when
// it fails or no answer is due.
func (l *Link) sendFrame(ctx context.Context, name string, frame []byte, hint forwardHint) (corr int32, deadline time.Time, stop func() bool, err error) {
	deadline, stop = l.arm(ctx, time.Duration(max(hint.waitMs, 0))*time.Millisecond)
	l.corr++
	corr = l.corr
	binary.BigEndian.PutUint32(frame[4:8], uint32(corr))
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(frame)))
	if _, err := wire.WriteTwo(l.rw, size[:], frame); err != nil {
		stop()
		return 0, time.Time{}, nil, fmt.Errorf("data-plane node %d: writing %s: %w", l.node, name, err)
	}
	if hint.noResponse {
		stop()
	} else {
		l.answerDue(deadline)
	}
	return corr, deadline, stop, nil
}

// Await waits until the link holds the start of an answer (wire.Awaiter):
// the connection's answerer waits here between answers, so that the
// request sent next needs no goroutine woken to read its answer. It
// returns an error if the link failed, or if the answer due first of a
// request sent during the wait is late (answerDue).
func (l *Link) Await() error {
	l.amu.Lock()
	if l.woken {
		l.woken = false
		l.amu.Unlock()
		return nil
	}
	l.awaiting = true
	var by time.Time // no answer due: no deadline
	if len(l.due) > 0 {
		by = l.due[0]
	}
	l.nc.SetReadDeadline(by)
	l.amu.Unlock()
	_, err := l.br.Peek(1)
	l.amu.Lock()
	defer l.amu.Unlock()
	l.awaiting = false
	if l.woken {
		l.woken = false
		return nil
	}
	if err != nil {
		return fmt.Errorf("data-plane node %d: waiting for an answer: %w", l.node, err)
	}
	return nil
}

// Wake makes an Await in progress, or the next one, return
// (wire.Awaiter).
func (l *Link) Wake() {
	l.amu.Lock()
	defer l.amu.Unlock()
	l.woken = true
	l.nc.SetReadDeadline(time.Now())
}

// answerDue notes a request sent whose answer is due by deadline: the
// first answer due bounds an Await, as it bounds its read (readBy).
func (l *Link) answerDue(deadline time.Time) {
	l.amu.Lock()
	defer l.amu.Unlock()
	l.due = append(l.due, deadline)
	if l.awaiting && len(l.due) == 1 && !l.woken {
		l.nc.SetReadDeadline(deadline)
	}
}

// answerRead notes that the answer due first is being read.
func (l *Link) answerRead() {
	l.amu.Lock()
	defer l.amu.Unlock()
	if n := len(l.due); n > 0 { // a few at most: the requests pipelined
		copy(l.due, l.due[1:])
		l.due = l.due[:n-1]
	}
}

// streamFrame reads the answer of a frame sent with correlation id corr
// and writes it on as it arrives, with the client's correlation id, to
// the writer begin returns once the answer's size and correlation id
// came.
func (l *Link) streamFrame(name string, corr, clientCorr int32, begin func() io.Writer) error {
	n, err := l.answerHead(name, corr)
	if err != nil {
		return err
	}
	l.br.Discard(4)
	w := begin()
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(n))
	binary.BigEndian.PutUint32(hdr[4:], uint32(clientCorr))
	rest := int(n) - 4
	// What the link's reader holds of the answer goes with the header;
	// the rest comes straight from the socket, a long one in pieces of
	// at least 256 KiB but its last (wire.CopyBulk).
	held, _ := l.br.Peek(min(l.br.Buffered(), rest))
	if _, err := wire.WriteTwo(w, hdr[:], held); err != nil {
		return fmt.Errorf("data-plane node %d: writing %s response to the client: %w", l.node, name, err)
	}
	rest -= len(held)
	l.br.Discard(len(held))
	if rest > 0 {
		if _, err := wire.CopyBulk(w, l.nc, int64(rest)); err != nil {
			return fmt.Errorf("data-plane node %d: streaming %s response: %w", l.node, name, err)
		}
	}
	return nil
}

// answerHead reads the size of the next answer and checks, without
// consuming it, that the correlation id after it is corr.
func (l *Link) answerHead(name string, corr int32) (size int32, err error) {
	n, err := wire.ReadFrameSize(l.br, maxResponseBytes)
	if err != nil {
		return 0, fmt.Errorf("data-plane node %d: reading %s response: %w", l.node, name, err)
	}
	if n < 4 {
		return 0, fmt.Errorf("data-plane node %d: %s response of %d bytes", l.node, name, n)
	}
	head, err := l.br.Peek(4)
	if err != nil {
		return 0, fmt.Errorf("data-plane node %d: reading %s response: %w", l.node, name, err)
	}
	if got := int32(binary.BigEndian.Uint32(head)); got != corr {
		return 0, fmt.Errorf("data-plane node %d: response correlation id %d, want %d", l.node, got, corr)
	}
	return n, nil
}

// receiveFrame reads the answer of a frame sent with correlation id corr.
func (l *Link) receiveFrame(req *wire.Request, name string, corr int32) (resp []byte, done func(), err error) {
	n, err := l.answerHead(name, corr)
	if err != nil {
		return nil, nil, err
	}
	buf, release := getFrame(int(n))
	if _, err := io.ReadFull(l.br, buf); err != nil {
		release()
		return nil, nil, fmt.Errorf("data-plane node %d: reading %s response: %w", l.node, name, err)
	}
	out, err := l.rewriteFrame(req, buf)
	if err != nil {
		release()
		return nil, nil, err
	}
	if &out[0] != &buf[0] {
		release()
		release = func() {}
	}
	return out, release, nil
}

// rewriteFrame returns a response frame as it came, or re-encoded when it
// names brokers to rewrite. Only flexible versions can name them (a tagged
// field), and only those are decoded.
func (l *Link) rewriteFrame(req *wire.Request, frame []byte) ([]byte, error) {
	kreq := kmsg.RequestForKey(req.Key)
	kreq.SetVersion(req.Version)
	if !kreq.IsFlexible() {
		return frame, nil
	}
	corr, resp, err := wire.ParseResponse(frame, kreq)
	if err != nil {
		return nil, fmt.Errorf("data-plane node %d: %w", l.node, err)
	}
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		if len(r.Brokers) == 0 {
			return frame, nil
		}
	case *kmsg.FetchResponse:
		if len(r.Brokers) == 0 {
			return frame, nil
		}
	}
	if err := l.dp.rewrite(resp); err != nil {
		return nil, err
	}
	return wire.AppendResponse(nil, corr, resp)[4:], nil
}

// forwardHint is what forwarding a request frame needs from its body.
type forwardHint struct {
	waitMs     int32 // how long the data plane may hold the request
	noResponse bool  // Produce with acks=0
}

// frameHint reads a Produce's acks and timeout or a Fetch's maximum wait
// from the start of its body (Produce v3+: transactional id, acks,
// timeout; Fetch: replica id before v15, maximum wait).
func frameHint(key, version int16, body []byte) (forwardHint, bool) {
	kreq := kmsg.RequestForKey(key)
	kreq.SetVersion(version)
	r := kbin.Reader{Src: body}
	var h forwardHint
	switch kmsg.Key(key) {
	case kmsg.Produce:
		if version < 3 {
			return h, false
		}
		if kreq.IsFlexible() {
			r.CompactNullableString()
		} else {
			r.NullableString()
		}
		acks := r.Int16()
		h.waitMs, h.noResponse = r.Int32(), acks == 0
	case kmsg.Fetch:
		if version < 15 {
			r.Int32()
		}
		h.waitMs = r.Int32()
	default:
		return h, false
	}
	return h, r.Complete() == nil
}
