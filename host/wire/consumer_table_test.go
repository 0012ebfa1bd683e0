package wire

import (
	"context"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerGroupKeysServed: ConsumerGroupHeartbeat and
// ConsumerGroupDescribe are served v0–1 as group requests, reach the group
// backend, and a table Without them neither serves them nor advertises
// group.version.
func TestConsumerGroupKeysServed(t *testing.T) {
	full := NewTable(kafka44)
	for _, k := range ConsumerGroupKeys {
		e, ok := full.Lookup(int16(k))
		if !ok || e.Min != 0 || e.Max != 1 || e.Route != RouteGroup {
			t.Fatalf("%s: %+v served=%v", kmsg.NameForKey(int16(k)), e, ok)
		}
	}
	addr, rec := startServer(t, 0)
	c := dial(t, addr)
	c.send(kmsg.NewPtrConsumerGroupHeartbeatRequest(), 1, 1)
	c.recv(kmsg.NewPtrConsumerGroupHeartbeatRequest())
	c.send(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}}, 0, 2)
	c.recv(kmsg.NewPtrConsumerGroupDescribeRequest())
	if _, g := rec.keys(); len(g) != 2 || g[0] != int16(kmsg.ConsumerGroupHeartbeat) || g[1] != int16(kmsg.ConsumerGroupDescribe) {
		t.Fatalf("group backend saw %v", g)
	}

	without := full.Without(ConsumerGroupKeys...)
	for _, k := range ConsumerGroupKeys {
		if without.Serves(int16(k), 0) {
			t.Fatalf("%s still served", kmsg.NameForKey(int16(k)))
		}
	}
	if !full.Serves(int16(kmsg.ConsumerGroupHeartbeat), 1) {
		t.Fatal("Without changed the original table")
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	s := NewServer(ln, Config{Table: without, Features: &Features{
		Finalized: []kmsg.ApiVersionsResponseFinalizedFeature{{Name: "group.version", MinVersionLevel: 1, MaxVersionLevel: 1}},
	}})
	defer s.Shutdown(context.Background())
	d := dial(t, ln.Addr().String())
	req := kmsg.NewPtrApiVersionsRequest()
	d.send(req, 3, 1)
	_, raw := d.recv(req)
	r := raw.(*kmsg.ApiVersionsResponse)
	if len(r.FinalizedFeatures) != 0 {
		t.Fatalf("group.version advertised without consumer groups: %+v", r.FinalizedFeatures)
	}
	for _, k := range r.ApiKeys {
		if k.ApiKey == int16(kmsg.ConsumerGroupHeartbeat) {
			t.Fatal("ConsumerGroupHeartbeat advertised")
		}
	}
}
