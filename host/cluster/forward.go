package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Requests one node sends another on a client's behalf (the group
// configs of a partition the other node owns) reach the other node's
// Kafka listener as a client's would, with this client id, so the node
// answering them answers from its own partitions only and never
// forwards them again.
const forwardClientID = "coordhost-forward"

// Forwarded reports whether a request with this client id was sent by
// another node of the cluster through Forward.
func Forwarded(clientID string) bool {
	return clientID == forwardClientID || strings.HasPrefix(clientID, forwardClientID+"?")
}

// Forward sends req to the node to at its listener, with the cluster's
// client options (the credentials and TLS settings the node reaches the
// data plane with), and returns its answer. One client per node address
// is kept until Stop.
func (n *Node) Forward(ctx context.Context, to Peer, req kmsg.Request) (kmsg.Response, error) {
	addr := net.JoinHostPort(to.Host, strconv.Itoa(int(to.Port)))
	cl, err := n.forwardClient(addr)
	if err != nil {
		return nil, err
	}
	seeds := cl.SeedBrokers()
	if len(seeds) != 1 {
		return nil, fmt.Errorf("forwarding to node %q at %s: no connection", to.Node, addr)
	}
	resp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("forwarding %s to node %q at %s: %w", kmsg.NameForKey(req.Key()), to.Node, addr, err)
	}
	return resp, nil
}

func (n *Node) forwardClient(addr string) (*kgo.Client, error) {
	n.fwdMu.Lock()
	defer n.fwdMu.Unlock()
	if n.fwdClosed {
		return nil, errors.New("cluster node stopped")
	}
	if cl, ok := n.fwd[addr]; ok {
		return cl, nil
	}
	opts := append(append([]kgo.Opt(nil), n.cfg.ClientOpts...), kgo.SeedBrokers(addr),
		kgo.ClientID(forwardClientID+"?node="+url.QueryEscape(n.self.Node)))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("client for node at %s: %w", addr, err)
	}
	if n.fwd == nil {
		n.fwd = map[string]*kgo.Client{}
	}
	n.fwd[addr] = cl
	return cl, nil
}

// closeForward closes the forwarding clients (Stop).
func (n *Node) closeForward() {
	n.fwdMu.Lock()
	defer n.fwdMu.Unlock()
	n.fwdClosed = true
	for addr, cl := range n.fwd {
		cl.Close()
		delete(n.fwd, addr)
	}
}
