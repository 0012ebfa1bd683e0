package cluster

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestPeerClientIDRoundTrip(t *testing.T) {
	for _, p := range []Peer{
		{Node: "a", BrokerID: MinBrokerID, Host: "127.0.0.1", Port: 9092},
		{Node: "node/with?odd=chars&x", BrokerID: MaxBrokerID, Host: "::1", Port: 1},
		{Node: "", BrokerID: BrokerIDFor("x"), Host: "kafka-0.example", Port: 65535},
		{Node: "b", BrokerID: MinBrokerID + 1, Host: "h", Port: 9092, Listeners: []Listener{{Upstream: 1, Port: 9092}, {Upstream: 7, Port: 9093}}},
	} {
		got, ok := parsePeer(p.clientID())
		if !ok || !reflect.DeepEqual(got, p) {
			t.Fatalf("%+v: parsed %+v %v from %q", p, got, ok, p.clientID())
		}
	}
	for _, id := range []string{"", "kgo", "coordhost-node?", "coordhost-node?id=x&addr=h:1", "coordhost-node?id=1&addr=h",
		"coordhost-node?id=-4&addr=h:1", "coordhost-node?id=1&addr=:1", "coordhost-node?id=1&addr=h:70000", "coordhost-node?%zz",
		"coordhost-node?id=1&addr=h:1&l=1", "coordhost-node?id=1&addr=h:1&l=1:70000", "coordhost-node?id=1&addr=h:1&l=-1:2", "coordhost-node?id=1&addr=h:1&l=1:2,"} {
		if p, ok := parsePeer(id); ok {
			t.Fatalf("%q parsed as %+v", id, p)
		}
	}
}

func TestBrokerIDForRange(t *testing.T) {
	seen := map[int32]string{}
	for _, n := range []string{"", "a", "b", "n0", "n1", "n2", "coordhost-1.example"} {
		id := BrokerIDFor(n)
		if id < MinBrokerID || id > MaxBrokerID {
			t.Fatalf("%q: %d out of range", n, id)
		}
		if BrokerIDFor(n) != id {
			t.Fatalf("%q: not stable", n)
		}
		if o, ok := seen[id]; ok {
			t.Fatalf("%q and %q derive %d", n, o, id)
		}
		seen[id] = n
	}
}

// FuzzParsePeer: a client id read from the ownership group never panics
// the parser, and what it accepts encodes back to a peer it parses the
// same way.
func FuzzParsePeer(f *testing.F) {
	f.Add(Peer{Node: "a", BrokerID: MinBrokerID, Host: "127.0.0.1", Port: 9092}.clientID())
	f.Add("coordhost-node?id=1&addr=[::1]:9&node=%41")
	f.Add("coordhost-node?")
	f.Add(Peer{Node: "b", BrokerID: MinBrokerID, Host: "h", Port: 1, Listeners: []Listener{{Upstream: 0, Port: 1}, {Upstream: 2, Port: 3}}}.clientID())
	f.Fuzz(func(t *testing.T, id string) {
		p, ok := parsePeer(id)
		if !ok {
			return
		}
		if q, ok := parsePeer(p.clientID()); !ok || !reflect.DeepEqual(q, p) {
			t.Fatalf("%q: %+v re-parsed as %+v %v", id, p, q, ok)
		}
	})
}

// TestRouteFromRoutes: a partition this node does not serve routes to
// the node the ownership group assigned it, and to nobody (Kafka's
// COORDINATOR_NOT_AVAILABLE) when it is unassigned or assigned to this
// node, which no longer answers for it.
func TestRouteFromRoutes(t *testing.T) {
	n, err := New(Config{ClusterID: "c", NodeID: "me", Topic: "t", AdvertisedHost: "127.0.0.1", AdvertisedPort: 1})
	if err != nil {
		t.Fatal(err)
	}
	other := Peer{Node: "other", BrokerID: MinBrokerID + 7, Host: "127.0.0.2", Port: 2}
	if _, ok := n.Route(0); ok {
		t.Fatal("routed before any reading of the group")
	}
	n.routes.Store(&routes{peers: map[string]Peer{"m-other": other, "m-me": n.Self()}, owner: map[int]string{0: "m-other", 1: "m-me"}})
	if p, ok := n.Route(0); !ok || !reflect.DeepEqual(p, other) {
		t.Fatalf("partition 0: %+v %v", p, ok)
	}
	for _, p := range []int{1, 2} {
		if got, ok := n.Route(p); ok {
			t.Fatalf("partition %d routed to %+v", p, got)
		}
	}
	peers := n.Peers()
	if len(peers) != 2 || peers[0].BrokerID > peers[1].BrokerID {
		t.Fatalf("peers %+v", peers)
	}
	if st := n.routeStatus(); len(st) != 2 {
		t.Fatalf("route status %+v", st)
	}
}

// TestPartitionStatusString: a partition's status in logs shows its
// replay progress when known, not the pointers' addresses.
func TestPartitionStatusString(t *testing.T) {
	at, end, lag := int64(3), int64(5), int64(2)
	ps := PartitionStatus{Partition: 4, State: "loading", ReplayOffset: &at, ReplayEndOffset: &end, ReplayLag: &lag}
	if got := fmt.Sprintf("%+v", ps); !strings.Contains(got, "partition 4 loading") || !strings.Contains(got, "replayed to offset 3 of 5 (lag 2)") {
		t.Fatalf("%s", got)
	}
	if got := (PartitionStatus{Partition: 1, State: "failed", Error: "boom"}).String(); strings.Contains(got, "offset") || !strings.HasSuffix(got, ": boom") {
		t.Fatalf("%s", got)
	}
}
