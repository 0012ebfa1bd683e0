package cluster

import (
	"testing"
)

func TestPeerClientIDRoundTrip(t *testing.T) {
	for _, p := range []Peer{
		{Node: "a", BrokerID: MinBrokerID, Host: "127.0.0.1", Port: 9092},
		{Node: "node/with?odd=chars&x", BrokerID: MaxBrokerID, Host: "::1", Port: 1},
		{Node: "", BrokerID: BrokerIDFor("x"), Host: "kafka-0.example", Port: 65535},
	} {
		got, ok := parsePeer(p.clientID())
		if !ok || got != p {
			t.Fatalf("%+v: parsed %+v %v from %q", p, got, ok, p.clientID())
		}
	}
	for _, id := range []string{"", "kgo", "coordhost-node?", "coordhost-node?id=x&addr=h:1", "coordhost-node?id=1&addr=h",
		"coordhost-node?id=-4&addr=h:1", "coordhost-node?id=1&addr=:1", "coordhost-node?id=1&addr=h:70000", "coordhost-node?%zz"} {
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
	f.Fuzz(func(t *testing.T, id string) {
		p, ok := parsePeer(id)
		if !ok {
			return
		}
		if q, ok := parsePeer(p.clientID()); !ok || q != p {
			t.Fatalf("%q: %+v re-parsed as %+v %v", id, p, q, ok)
		}
	})
}
