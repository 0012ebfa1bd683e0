package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recorder is a fake data plane and group coordinator that records which
// keys reached it.
type recorder struct {
	mu       sync.Mutex
	upstream []int16
	group    []int16
}

func (r *recorder) Forward(_ context.Context, _ *string, req kmsg.Request) (kmsg.Response, error) {
	r.mu.Lock()
	r.upstream = append(r.upstream, req.Key())
	r.mu.Unlock()
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, nil
	}
	return ErrorResponse(req, 0), nil
}

func (r *recorder) Close() error { return nil }

func (r *recorder) keys() (up, group []int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int16(nil), r.upstream...), append([]int16(nil), r.group...)
}

// kafka44 is a data plane advertising Kafka 4.4's ranges for the keys used here.
var kafka44 = map[int16]VersionRange{
	int16(kmsg.Produce): {3, 13}, int16(kmsg.Fetch): {4, 18}, int16(kmsg.Metadata): {0, 13},
	int16(kmsg.FindCoordinator): {0, 6}, int16(kmsg.DescribeConfigs): {1, 4}, int16(kmsg.IncrementalAlterConfigs): {0, 1},
	int16(kmsg.JoinGroup): {0, 9}, int16(kmsg.ConsumerGroupHeartbeat): {0, 1}, int16(kmsg.ShareGroupHeartbeat): {1, 1},
	int16(kmsg.SASLAuthenticate): {0, 2},
}

func startServer(t *testing.T, maxBytes int32) (string, *recorder) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	s := NewServer(ln, Config{
		Table: NewTable(kafka44), MaxRequestBytes: maxBytes,
		Dial: func(context.Context) (Upstream, error) { return rec, nil },
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			rec.mu.Lock()
			rec.group = append(rec.group, req.Key)
			rec.mu.Unlock()
			return ErrorResponse(req.Body, kerr.CoordinatorNotAvailable.Code), nil
		},
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return ln.Addr().String(), rec
}

type client struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second)) // every wait is bounded
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

func (c *client) send(req kmsg.Request, version, corr int16) {
	c.t.Helper()
	req.SetVersion(version)
	if _, err := c.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, int32(corr))); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) recv(req kmsg.Request) (int32, kmsg.Response) {
	c.t.Helper()
	frame, err := ReadFrame(c.br, 1<<20)
	if err != nil {
		c.t.Fatalf("reading response to %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	corr, resp, err := ParseResponse(frame, req)
	if err != nil {
		c.t.Fatal(err)
	}
	return corr, resp
}

// expectClosed asserts the server closed the connection without answering.
func (c *client) expectClosed() {
	c.t.Helper()
	if _, err := c.br.ReadByte(); !errors.Is(err, io.EOF) {
		c.t.Fatalf("want a clean close (EOF), got %v", err)
	}
}

func TestApiVersionsAdvertisesExactlyTheTable(t *testing.T) {
	addr, _ := startServer(t, 0)
	c := dial(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	c.send(req, 3, 1)
	_, raw := c.recv(req)
	resp := raw.(*kmsg.ApiVersionsResponse)
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	want := map[int16][2]int16{}
	for _, e := range NewTable(kafka44).Entries() {
		want[e.Key] = [2]int16{e.Min, e.Max}
	}
	if len(got) != len(want) {
		t.Fatalf("advertised %v, table %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: advertised %v, table %v", kmsg.NameForKey(k), got[k], v)
		}
	}
	for _, k := range NotServed {
		if _, ok := got[int16(k)]; ok {
			t.Errorf("%s is advertised", kmsg.NameForKey(int16(k)))
		}
	}
	// Produce is clamped to the data plane's minimum (3), Metadata to kmsg's maximum.
	if got[int16(kmsg.Produce)][0] != 3 || got[int16(kmsg.JoinGroup)] != [2]int16{0, 9} {
		t.Errorf("Produce %v, JoinGroup %v", got[int16(kmsg.Produce)], got[int16(kmsg.JoinGroup)])
	}
	if _, ok := got[int16(kmsg.CreateTopics)]; ok {
		t.Error("CreateTopics advertised although the data plane does not serve it")
	}
}

func TestApiVersionsTooNewGetsV0Error(t *testing.T) {
	addr, _ := startServer(t, 0)
	c := dial(t, addr)
	// ApiVersions v99: the body cannot be decoded; the answer is a v0
	// response with UNSUPPORTED_VERSION and the key list (KIP-511).
	frame := []byte{0, 18, 0, 99, 0, 0, 0, 5, 0, 1, 'x'}
	c.c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(frame))))
	c.c.Write(frame)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	corr, raw := c.recv(req)
	resp := raw.(*kmsg.ApiVersionsResponse)
	if corr != 5 || resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) == 0 {
		t.Fatalf("corr %d, %+v", corr, resp)
	}
}

// TestUnsupportedAndNotServedGetUnsupportedVersion: a served key at a
// version outside the table, and share-group keys at any version, get
// UNSUPPORTED_VERSION and reach neither backend.
func TestUnsupportedAndNotServedGetUnsupportedVersion(t *testing.T) {
	addr, rec := startServer(t, 0)
	c := dial(t, addr)
	cases := []struct {
		req kmsg.Request
		v   int16
	}{
		{produceOne(), 2},
		{kmsg.NewPtrShareGroupHeartbeatRequest(), 1},
	}
	for i, tc := range cases {
		c.send(tc.req, tc.v, int16(i))
		corr, resp := c.recv(tc.req)
		if corr != int32(i) {
			t.Fatalf("correlation %d, want %d", corr, i)
		}
		if code := errorCode(resp); code != kerr.UnsupportedVersion.Code {
			t.Errorf("%s v%d: error code %d, want UNSUPPORTED_VERSION", kmsg.NameForKey(tc.req.Key()), tc.v, code)
		}
	}
	if up, g := rec.keys(); len(up)+len(g) != 0 {
		t.Fatalf("unsupported requests reached backends: upstream %v, group %v", up, g)
	}
}

func produceOne() *kmsg.ProduceRequest {
	p := kmsg.NewPtrProduceRequest()
	p.Acks = -1
	p.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0}}}}
	return p
}

func errorCode(r kmsg.Response) int16 {
	switch r := r.(type) {
	case *kmsg.ProduceResponse:
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			return r.Topics[0].Partitions[0].ErrorCode
		}
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return r.ErrorCode
	case *kmsg.ShareGroupHeartbeatResponse:
		return r.ErrorCode
	case *kmsg.ConsumerGroupDescribeResponse:
		if len(r.Groups) == 1 && r.Groups[0].Group == "g" {
			return r.Groups[0].ErrorCode
		}
	case *kmsg.JoinGroupResponse:
		return r.ErrorCode
	}
	return -1
}

// TestRoutingNeverForwardsGroupAPIs: group keys go to the coordinator,
// data keys to the data plane; FindCoordinator and DescribeConfigs split
// by coordinator type and resource type.
func TestRoutingNeverForwardsGroupAPIs(t *testing.T) {
	addr, rec := startServer(t, 0)
	c := dial(t, addr)
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType = "g", "consumer"
	c.send(jg, 9, 1)
	if _, r := c.recv(jg); r.(*kmsg.JoinGroupResponse).ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatal("JoinGroup not answered by the coordinator")
	}
	md := kmsg.NewPtrMetadataRequest()
	c.send(md, 12, 2)
	c.recv(md)
	fcg := kmsg.NewPtrFindCoordinatorRequest()
	fcg.CoordinatorKeys = []string{"g"}
	c.send(fcg, 6, 3)
	c.recv(fcg)
	fct := kmsg.NewPtrFindCoordinatorRequest()
	fct.CoordinatorType, fct.CoordinatorKeys = 1, []string{"txn"}
	c.send(fct, 6, 4)
	c.recv(fct)
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t1"},
		{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g1"},
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t2"},
	}
	c.send(dc, 4, 5)
	_, r := c.recv(dc)
	res := r.(*kmsg.DescribeConfigsResponse).Resources
	if len(res) != 3 || res[0].ResourceName != "t1" || res[1].ResourceName != "g1" || res[2].ResourceName != "t2" ||
		res[1].ErrorCode != kerr.CoordinatorNotAvailable.Code || res[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs merge: %+v", res)
	}
	up, g := rec.keys()
	wantUp := []int16{int16(kmsg.Metadata), int16(kmsg.FindCoordinator), int16(kmsg.DescribeConfigs)}
	wantG := []int16{int16(kmsg.JoinGroup), int16(kmsg.FindCoordinator), int16(kmsg.DescribeConfigs)}
	if !equal(up, wantUp) || !equal(g, wantG) {
		t.Fatalf("upstream %v (want %v), group %v (want %v)", up, wantUp, g, wantG)
	}
}

func equal(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPipelinedAnsweredInOrder: many requests written at once, answered in
// order; a Produce with acks=0 in the middle gets no response.
func TestPipelinedAnsweredInOrder(t *testing.T) {
	addr, _ := startServer(t, 0)
	c := dial(t, addr)
	var buf []byte
	f := kmsg.NewRequestFormatter()
	var reqs []kmsg.Request
	for i := 0; i < 30; i++ {
		var r kmsg.Request
		switch i % 3 {
		case 0:
			r = kmsg.NewPtrApiVersionsRequest()
			r.SetVersion(3)
		case 1:
			r = kmsg.NewPtrMetadataRequest()
			r.SetVersion(12)
		default:
			p := kmsg.NewPtrProduceRequest()
			p.SetVersion(9)
			p.Acks = 0
			r = p
		}
		buf = append(buf, f.AppendRequest(nil, r, int32(i))...) // AppendRequest sizes from dst[0]
		reqs = append(reqs, r)
	}
	c.c.Write(buf)
	for i, r := range reqs {
		if i%3 == 2 {
			continue
		}
		if corr, _ := c.recv(r); corr != int32(i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
	}
}

// TestBadInputClosesCleanly: unknown keys, oversized and malformed frames
// close the connection without an answer, and the server keeps serving.
func TestBadInputClosesCleanly(t *testing.T) {
	addr, _ := startServer(t, 1024)
	frames := map[string][]byte{
		"unknown key":     frameOf([]byte{0, 200, 0, 0, 0, 0, 0, 1, 0, 0}),
		"negative key":    frameOf([]byte{0x80, 0, 0, 0, 0, 0, 0, 1, 0, 0}),
		"oversized":       binary.BigEndian.AppendUint32(nil, 1025),
		"negative size":   {0xff, 0xff, 0xff, 0xfe},
		"short header":    frameOf([]byte{0, 18, 0}),
		"truncated body":  frameOf([]byte{0, 11, 0, 5, 0, 0, 0, 1, 0, 1, 'x', 0, 5, 'g'}),
		"too-new produce": frameOf([]byte{0, 0, 0, 99, 0, 0, 0, 1, 0, 0}),
	}
	for name, f := range frames {
		t.Run(name, func(t *testing.T) {
			c := dial(t, addr)
			c.c.Write(f)
			c.expectClosed()
		})
	}
	c := dial(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	c.send(req, 3, 9)
	if corr, _ := c.recv(req); corr != 9 {
		t.Fatal("server stopped serving after bad input")
	}
}

func frameOf(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// TestShutdownFinishesInFlight: a request being served when Shutdown starts
// still gets its response; the connection is closed afterwards.
func TestShutdownFinishesInFlight(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	started, release := make(chan struct{}), make(chan struct{})
	s := NewServer(ln, Config{
		Table: NewTable(kafka44),
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			close(started)
			<-release
			return ErrorResponse(req.Body, 0), nil
		},
	})
	c := dial(t, ln.Addr().String())
	jg := kmsg.NewPtrJoinGroupRequest()
	c.send(jg, 9, 77)
	<-started
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- s.Shutdown(ctx)
	}()
	time.Sleep(50 * time.Millisecond) // let Shutdown begin while the request is in flight
	close(release)
	if corr, _ := c.recv(jg); corr != 77 {
		t.Fatal("in-flight response lost")
	}
	c.expectClosed()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRequestCarriesListenerAndClient: the group coordinator learns which
// advertised listener and client host a request came from, the host as
// Kafka records it ("/" and the IP, no port).
func TestRequestCarriesListenerAndClient(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	got := make(chan *Request, 1)
	rec := &recorder{}
	s := NewServer(ln, Config{
		Table: NewTable(kafka44), Advertised: Broker{NodeID: 4, Host: "coord.example", Port: 19092},
		Dial: func(context.Context) (Upstream, error) { return rec, nil },
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			got <- req
			return ErrorResponse(req.Body, 0), nil
		},
	})
	defer s.Shutdown(context.Background())
	c := dial(t, ln.Addr().String())
	hb := kmsg.NewPtrHeartbeatRequest()
	c.send(hb, 4, 1)
	c.recv(hb)
	r := <-got
	if r.Listener != (Broker{4, "coord.example", 19092}) || r.ClientHost != "/127.0.0.1" || r.ClientIDString() != "test" || r.Authenticated {
		t.Fatalf("request context: %+v", r)
	}
	sa := kmsg.NewPtrSASLAuthenticateRequest()
	c.send(sa, 2, 2) // the fake data plane accepts it
	c.recv(sa)
	c.send(hb, 4, 3)
	c.recv(hb)
	if r := <-got; !r.Authenticated {
		t.Fatal("Authenticated not set after a successful SaslAuthenticate")
	}
}

// TestApiVersionsFeatures: the data plane's features are advertised,
// except share.version (share groups are not served); group.version is
// advertised while consumer groups are served (consumer_table_test.go
// checks a table without them).
func TestApiVersionsFeatures(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	s := NewServer(ln, Config{Table: NewTable(kafka44), Features: &Features{
		Supported: []kmsg.ApiVersionsResponseSupportedFeature{{Name: "transaction.version", MinVersion: 0, MaxVersion: 2}, {Name: "group.version", MaxVersion: 1}},
		Finalized: []kmsg.ApiVersionsResponseFinalizedFeature{{Name: "transaction.version", MinVersionLevel: 2, MaxVersionLevel: 2}, {Name: "share.version", MinVersionLevel: 1, MaxVersionLevel: 1}},
		Epoch:     3,
	}})
	defer s.Shutdown(context.Background())
	c := dial(t, ln.Addr().String())
	req := kmsg.NewPtrApiVersionsRequest()
	c.send(req, 3, 1)
	_, raw := c.recv(req)
	r := raw.(*kmsg.ApiVersionsResponse)
	if len(r.SupportedFeatures) != 2 || r.SupportedFeatures[0].Name != "transaction.version" || r.SupportedFeatures[1].Name != "group.version" ||
		len(r.FinalizedFeatures) != 1 || r.FinalizedFeatures[0].Name != "transaction.version" || r.FinalizedFeaturesEpoch != 3 {
		t.Fatalf("features: %+v / %+v", r.SupportedFeatures, r.FinalizedFeatures)
	}
}

// TestShutdownCancelsStuckHandlers: when the drain deadline passes, a
// handler still running sees its context cancelled and Shutdown returns.
func TestShutdownCancelsStuckHandlers(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	started := make(chan struct{})
	s := NewServer(ln, Config{
		Table: NewTable(kafka44),
		Group: func(ctx context.Context, req *Request) (kmsg.Response, error) {
			close(started)
			<-ctx.Done() // e.g. a JoinGroup waiting for a rebalance
			return nil, ctx.Err()
		},
	})
	c := dial(t, ln.Addr().String())
	c.send(kmsg.NewPtrJoinGroupRequest(), 9, 1)
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown hung on a stuck handler")
	}
	c.expectClosed()
}

// TestTableLookup: the table's index answers as the list of its entries
// says, for keys outside kmsg's range too, and Without leaves the table
// it copies unchanged.
func TestTableLookup(t *testing.T) {
	tab := NewTable(map[int16]VersionRange{int16(kmsg.Produce): {Min: 3, Max: 9}, int16(kmsg.Fetch): {Min: 4, Max: 12}})
	entries := tab.Entries()
	byKey := map[int16]Entry{}
	for i, e := range entries {
		if i > 0 && entries[i-1].Key >= e.Key {
			t.Fatalf("Entries not in key order: %v then %v", entries[i-1], e)
		}
		byKey[e.Key] = e
	}
	if _, ok := byKey[int16(kmsg.Produce)]; !ok || len(byKey) < 10 {
		t.Fatalf("Entries: %v", entries)
	}
	for k := int16(-3); k <= int16(kmsg.MaxKey)+3; k++ {
		e, ok := tab.Lookup(k)
		want, wantOK := byKey[k]
		if ok != wantOK || e != want {
			t.Fatalf("Lookup(%d) = %v %v, want %v %v", k, e, ok, want, wantOK)
		}
		if ok && (!tab.Serves(k, e.Min) || !tab.Serves(k, e.Max) || tab.Serves(k, e.Max+1) || tab.Serves(k, e.Min-1)) {
			t.Fatalf("Serves(%d) disagrees with %v", k, e)
		}
	}
	less := tab.Without(kmsg.Produce, kmsg.Key(kmsg.MaxKey+1))
	if _, ok := less.Lookup(int16(kmsg.Produce)); ok {
		t.Fatal("Without(Produce) still serves Produce")
	}
	if _, ok := tab.Lookup(int16(kmsg.Produce)); !ok {
		t.Fatal("Without changed the table it copied")
	}
	if len(less.Entries()) != len(entries)-1 {
		t.Fatalf("Without(Produce): %d entries, want %d", len(less.Entries()), len(entries)-1)
	}
}
