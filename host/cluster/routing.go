package cluster

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Synthetic broker ids: every node of a cluster answers FindCoordinator
// and Metadata as a broker of its own, with an id in
// [MinBrokerID, MaxBrokerID] so it never collides with a real broker of
// the backing cluster (whose ids must stay below MinBrokerID).
const (
	MinBrokerID = 1_000_000_000
	MaxBrokerID = 1_999_999_999
)

// BrokerIDFor derives a node's synthetic broker id from its node id when
// none is configured: MinBrokerID + FNV-1a(node id) mod 1e9. Two node
// ids may derive one broker id; a node that sees another member with
// its own id logs it, and cluster.node.broker.id settles it.
func BrokerIDFor(nodeID string) int32 {
	h := fnv.New32a()
	h.Write([]byte(nodeID))
	return int32(MinBrokerID + h.Sum32()%(MaxBrokerID-MinBrokerID+1))
}

// PairIDFor derives the synthetic broker id of node's listener for the
// data-plane broker upstream: MinBrokerID + FNV-1a(node id, upstream id)
// mod 1e9, like BrokerIDFor.
func PairIDFor(nodeID string, upstream int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(nodeID))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(int(upstream))))
	return int32(MinBrokerID + h.Sum32()%(MaxBrokerID-MinBrokerID+1))
}

// Peer is one node of the cluster as clients reach it.
type Peer struct {
	Node     string `json:"node"`
	BrokerID int32  `json:"broker_id"`
	Host     string `json:"host"`
	Port     int32  `json:"port"`
	// Listeners are the node's listeners, one per data-plane broker, as
	// the node bound them at its start (its broker id's is among them).
	Listeners []Listener `json:"listeners,omitempty"`
}

// Listener is a node's listener for one data-plane broker.
type Listener struct {
	Upstream int32 `json:"upstream_broker_id"`
	Port     int32 `json:"port"`
}

// Brokers lists the node as Metadata brokers: its broker id at its
// address, and for each of its other listeners a synthetic id of its own
// (PairIDFor), so a client reaches every data-plane broker through every
// node.
func (p Peer) Brokers() []Peer {
	out := []Peer{{Node: p.Node, BrokerID: p.BrokerID, Host: p.Host, Port: p.Port}}
	for _, l := range p.Listeners {
		if l.Port != p.Port {
			out = append(out, Peer{Node: p.Node, BrokerID: PairIDFor(p.Node, l.Upstream), Host: p.Host, Port: l.Port})
		}
	}
	return out
}

// peerPrefix starts the client id of every ownership group client: the
// client id carries the node's peer (the broker reports it in
// DescribeGroups in every group state, where member metadata and
// assignments are only reported while the group is stable).
const peerPrefix = "coordhost-node?"

// clientID encodes p as the ownership client's client id.
func (p Peer) clientID() string {
	v := url.Values{}
	v.Set("node", p.Node)
	v.Set("id", strconv.Itoa(int(p.BrokerID)))
	v.Set("addr", net.JoinHostPort(p.Host, strconv.Itoa(int(p.Port))))
	if len(p.Listeners) > 0 {
		ls := make([]string, len(p.Listeners))
		for i, l := range p.Listeners {
			ls[i] = fmt.Sprintf("%d:%d", l.Upstream, l.Port)
		}
		v.Set("l", strings.Join(ls, ","))
	}
	return peerPrefix + v.Encode()
}

// parseListeners decodes clientID's "l": upstream:port,...
func parseListeners(s string) ([]Listener, bool) {
	if s == "" {
		return nil, true
	}
	var out []Listener
	for _, e := range strings.Split(s, ",") {
		u, ps, ok := strings.Cut(e, ":")
		if !ok {
			return nil, false
		}
		up, err := strconv.ParseInt(u, 10, 32)
		if err != nil || up < 0 || strconv.Itoa(int(up)) != u {
			return nil, false
		}
		port, err := strconv.ParseUint(ps, 10, 16)
		if err != nil || strconv.Itoa(int(port)) != ps {
			return nil, false
		}
		out = append(out, Listener{Upstream: int32(up), Port: int32(port)})
	}
	return out, true
}

// parsePeer decodes a client id clientID wrote; ok is false for any
// other client id (a member that is not a coordhost node of this
// version).
func parsePeer(clientID string) (p Peer, ok bool) {
	if len(clientID) <= len(peerPrefix) || clientID[:len(peerPrefix)] != peerPrefix {
		return Peer{}, false
	}
	v, err := url.ParseQuery(clientID[len(peerPrefix):])
	if err != nil {
		return Peer{}, false
	}
	id, err := strconv.ParseInt(v.Get("id"), 10, 32)
	if err != nil || id < 0 {
		return Peer{}, false
	}
	h, ps, err := net.SplitHostPort(v.Get("addr"))
	if err != nil {
		return Peer{}, false
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil || h == "" {
		return Peer{}, false
	}
	ls, ok := parseListeners(v.Get("l"))
	if !ok {
		return Peer{}, false
	}
	return Peer{Node: v.Get("node"), BrokerID: int32(id), Host: h, Port: int32(port), Listeners: ls}, true
}

// routes is one reading of the ownership group: the nodes in it and
// which node holds which partition.
type routes struct {
	peers map[string]Peer // by member id
	owner map[int]string  // partition -> member id
}

// refreshRoutes reads the ownership group (DescribeGroups) into
// n.routes. While the group rebalances the broker reports members
// without assignments: the partitions of members still in the group
// keep their last known owner, the others have none until the group is
// stable again.
func (n *Node) refreshRoutes(ctx context.Context) error {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{n.Group()}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.SessionTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, n.cl)
	if err != nil {
		return err
	}
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return fmt.Errorf("describing the ownership group: %+v", resp.Groups)
	}
	g := resp.Groups[0]
	next := routes{peers: map[string]Peer{}, owner: map[int]string{}}
	for _, m := range g.Members {
		if p, ok := parsePeer(m.ClientID); ok {
			next.peers[m.MemberID] = p
		}
	}
	n.checkIDs(next.peers)
	stable := g.State == "Stable"
	if prev := n.routes.Load(); prev != nil && !stable {
		for p, m := range prev.owner {
			if _, ok := next.peers[m]; ok {
				next.owner[p] = m
			}
		}
	}
	if stable {
		for _, m := range g.Members {
			var a kmsg.ConsumerMemberAssignment
			if len(m.MemberAssignment) == 0 || a.ReadFrom(m.MemberAssignment) != nil {
				continue
			}
			for _, t := range a.Topics {
				if t.Topic != n.cfg.Topic {
					continue
				}
				for _, p := range t.Partitions {
					next.owner[int(p)] = m.MemberID
				}
			}
		}
	}
	n.routes.Store(&next)
	return nil
}

// checkIDs logs members that advertise this node's broker id: clients
// could not tell them apart.
func (n *Node) checkIDs(peers map[string]Peer) {
	for _, p := range peers {
		if p.BrokerID == n.self.BrokerID && p.Node != n.self.Node {
			n.cfg.Log.Error("another node of the cluster advertises this node's broker id; set cluster.node.broker.id apart",
				"node", n.self.Node, "other", p.Node, "broker_id", p.BrokerID)
		}
	}
}

// routeLoop keeps n.routes fresh: every heartbeat period and when this
// node's assignment changed.
func (n *Node) routeLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	for {
		if err := n.refreshRoutes(n.ctx); err != nil && n.ctx.Err() == nil {
			n.cfg.Log.Debug("reading the ownership group's members", "node", n.self.Node, "err", err)
		}
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.reroute:
		}
	}
}

// Self is this node as clients reach it.
func (n *Node) Self() Peer { return n.self }

// Route returns the node clients should ask about partition p's groups:
// this node while it may answer for p, else the node the ownership
// group last assigned p to. ok is false while p has no owner this node
// knows of (unassigned, moving, or assigned to this node that no longer
// answers for it): Kafka answers COORDINATOR_NOT_AVAILABLE then.
func (n *Node) Route(p int) (Peer, bool) {
	if n.Serving(p) == nil {
		return n.self, true
	}
	r := n.routes.Load()
	if r == nil {
		return Peer{}, false
	}
	m, ok := r.owner[p]
	if !ok {
		return Peer{}, false
	}
	peer := r.peers[m]
	if peer.BrokerID == n.self.BrokerID {
		return Peer{}, false
	}
	return peer, true
}

// Peers returns every node of the cluster this node knows of, itself
// included, by broker id.
func (n *Node) Peers() []Peer {
	seen := map[int32]Peer{n.self.BrokerID: n.self}
	if r := n.routes.Load(); r != nil {
		for _, p := range r.peers {
			if _, ok := seen[p.BrokerID]; !ok {
				seen[p.BrokerID] = p
			}
		}
	}
	out := make([]Peer, 0, len(seen))
	for _, p := range seen {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BrokerID < out[j].BrokerID })
	return out
}

// routeStatus is Status's view of the routes: each node with the
// partitions the group last assigned it.
func (n *Node) routeStatus() []PeerStatus {
	r := n.routes.Load()
	if r == nil {
		return []PeerStatus{}
	}
	byMember := map[string]*PeerStatus{}
	for m, p := range r.peers {
		byMember[m] = &PeerStatus{Peer: p, Member: m, Partitions: []int{}}
	}
	for p, m := range r.owner {
		if ps, ok := byMember[m]; ok {
			ps.Partitions = append(ps.Partitions, p)
		}
	}
	out := make([]PeerStatus, 0, len(byMember))
	for _, ps := range byMember {
		sort.Ints(ps.Partitions)
		out = append(out, *ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BrokerID < out[j].BrokerID })
	return out
}

// PeerStatus is one node of the cluster in Status.
type PeerStatus struct {
	Peer
	Member string `json:"member_id"`
	// Partitions are the ones the ownership group last assigned it.
	Partitions []int `json:"partitions"`
}
