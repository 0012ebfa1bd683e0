package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// maxResponseBytes bounds one response frame read from the data plane.
const maxResponseBytes = 1 << 30

// Link is one client connection's own connection to one data-plane node:
// requests are written with the client's id and answered in order, and
// every broker address in a response is rewritten to a coordhost listener.
// A Link is used by one goroutine at a time (its client connection's).
type Link struct {
	dp   *DataPlane
	node int32
	nc   net.Conn
	br   *bufio.Reader
	corr int32
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
	return &Link{dp: d, node: node, nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}, nil
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
	deadline := time.Now().Add(l.dp.cfg.RequestTimeout + requestWait(req))
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	l.nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { l.nc.SetDeadline(time.Now()) }) // cancellation unblocks I/O
	defer stop()
	l.corr++
	var opts []kmsg.RequestFormatterOpt
	if clientID != nil {
		opts = append(opts, kmsg.FormatterClientID(*clientID))
	}
	buf := kmsg.NewRequestFormatter(opts...).AppendRequest(nil, req, l.corr)
	if _, err := l.nc.Write(buf); err != nil {
		return nil, fmt.Errorf("data-plane node %d: writing %s: %w", l.node, kmsg.NameForKey(req.Key()), err)
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, nil
	}
	frame, err := wire.ReadFrame(l.br, maxResponseBytes)
	if err != nil {
		return nil, fmt.Errorf("data-plane node %d: reading %s response: %w", l.node, kmsg.NameForKey(req.Key()), err)
	}
	corr, resp, err := wire.ParseResponse(frame, req)
	if err != nil {
		return nil, fmt.Errorf("data-plane node %d: %w", l.node, err)
	}
	if corr != l.corr {
		return nil, fmt.Errorf("data-plane node %d: response correlation id %d, want %d", l.node, corr, l.corr)
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
