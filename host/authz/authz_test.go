package authz_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/wire"
)

// fakeCluster answers the authorization probes as a Kafka broker with an
// authorizer would, from a table of allowed operations. notCoordinator
// makes DescribeGroups answer as a broker that is not the group's
// coordinator (no bitfield), so the per-operation probes are used.
type fakeCluster struct {
	mu             sync.Mutex
	allow          map[string]map[kmsg.ACLOperation]bool // "GROUP:g", "TOPIC:t", "TXN:x", "CLUSTER"
	notCoordinator bool
	asked          map[int16]int
}

func newFakeCluster() *fakeCluster {
	return &fakeCluster{allow: map[string]map[kmsg.ACLOperation]bool{}, asked: map[int16]int{}}
}

func (f *fakeCluster) grant(res string, ops ...kmsg.ACLOperation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.allow[res] == nil {
		f.allow[res] = map[kmsg.ACLOperation]bool{}
	}
	for _, op := range ops {
		f.allow[res][op] = true
	}
}

func (f *fakeCluster) revoke(res string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.allow, res)
}

func (f *fakeCluster) ok(res string, op kmsg.ACLOperation) bool {
	return f.allow[res][op]
}

func (f *fakeCluster) bits(res string, ops ...kmsg.ACLOperation) int32 {
	var b int32
	for _, op := range ops {
		if f.ok(res, op) {
			b |= 1 << uint(op)
		}
	}
	return b
}

func (f *fakeCluster) count(k kmsg.Key) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[int16(k)]
}

// session is one client connection's upstream session to the fake cluster.
type session struct {
	f *fakeCluster
	n int // distinguishes sessions
}

func (s *session) Ask(_ context.Context, body kmsg.Request) (kmsg.Response, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked[body.Key()]++
	gaf := func(g string, op kmsg.ACLOperation) int16 {
		if f.ok("GROUP:"+g, op) {
			return 0
		}
		return kerr.GroupAuthorizationFailed.Code
	}
	groupOps := []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	switch r := body.(type) {
	case *kmsg.DescribeGroupsRequest:
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range r.Groups {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode, dg.AuthorizedOperations = g, gaf(g, kmsg.ACLOperationDescribe), -2147483648
			switch {
			case dg.ErrorCode == 0 && f.notCoordinator:
				dg.ErrorCode = kerr.NotCoordinator.Code
			case dg.ErrorCode == 0 && r.IncludeAuthorizedOperations:
				dg.AuthorizedOperations = f.bits("GROUP:"+g, groupOps...)
			}
			resp.Groups = append(resp.Groups, dg)
		}
		return resp, nil
	case *kmsg.HeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = gaf(r.Group, kmsg.ACLOperationRead)
		if resp.ErrorCode == 0 {
			resp.ErrorCode = kerr.UnknownMemberID.Code
		}
		return resp, nil
	case *kmsg.OffsetDeleteRequest:
		resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = gaf(r.Group, kmsg.ACLOperationDelete)
		return resp, nil
	case *kmsg.DescribeConfigsRequest:
		resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, rr := range r.Resources {
			x := kmsg.NewDescribeConfigsResponseResource()
			x.ResourceName, x.ErrorCode = rr.ResourceName, gaf(rr.ResourceName, kmsg.ACLOperationDescribeConfigs)
			if rr.ResourceType == kmsg.ConfigResourceTypeBroker {
				x.ErrorCode = 0
				if !f.ok("CLUSTER", kmsg.ACLOperationDescribeConfigs) {
					x.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				}
			}
			resp.Resources = append(resp.Resources, x)
		}
		return resp, nil
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range r.Resources {
			x := kmsg.NewIncrementalAlterConfigsResponseResource()
			x.ResourceName, x.ErrorCode = rr.ResourceName, gaf(rr.ResourceName, kmsg.ACLOperationAlterConfigs)
			resp.Resources = append(resp.Resources, x)
		}
		return resp, nil
	case *kmsg.MetadataRequest:
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		for _, t := range r.Topics {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = t.Topic
			res := "TOPIC:" + *t.Topic
			switch {
			case !f.ok(res, kmsg.ACLOperationDescribe):
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case *t.Topic == "missing":
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				mt.AuthorizedOperations = f.bits(res, kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
			}
			resp.Topics = append(resp.Topics, mt)
		}
		return resp, nil
	case *kmsg.AddOffsetsToTxnRequest:
		resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.InvalidProducerIDMapping.Code
		if !f.ok("TXN:"+r.TransactionalID, kmsg.ACLOperationWrite) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		}
		return resp, nil
	case *kmsg.DescribeClusterRequest:
		resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
		if f.ok("CLUSTER", kmsg.ACLOperationDescribe) { // Kafka tells the bitfield only then
			resp.ClusterAuthorizedOperations = f.bits("CLUSTER", kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs)
		}
		return resp, nil
	}
	return nil, errors.New("unexpected probe " + kmsg.NameForKey(body.Key()))
}

// recorder is the wrapped coordinator: it records what reached it and
// answers success.
type recorder struct {
	mu  sync.Mutex
	got []kmsg.Request
}

func (r *recorder) Handle(_ context.Context, req *wire.Request) (kmsg.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, req.Body)
	if l, ok := req.Body.(*kmsg.ListGroupsRequest); ok {
		resp := l.ResponseKind().(*kmsg.ListGroupsResponse)
		for _, g := range []string{"g", "other"} {
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group = g
			resp.Groups = append(resp.Groups, lg)
		}
		return resp, nil
	}
	return wire.ErrorResponse(req.Body, 0), nil
}

type harness struct {
	t    *testing.T
	f    *fakeCluster
	rec  *recorder
	a    *authz.Coordinator
	now  time.Time
	log  *bytes.Buffer
	sess *session
	gen  uint64 // authentication generation of the requests
}

func newHarness(t *testing.T, ttl time.Duration) *harness {
	h := &harness{t: t, f: newFakeCluster(), rec: &recorder{}, now: time.Unix(1000, 0), log: &bytes.Buffer{}}
	h.sess = &session{f: h.f}
	h.a = authz.New(h.rec, authz.Config{TTL: ttl, Log: slog.New(slog.NewTextHandler(h.log, nil)), Now: func() time.Time { return h.now }})
	return h
}

func (h *harness) do(body kmsg.Request) kmsg.Response {
	h.t.Helper()
	resp, err := h.a.Handle(context.Background(), &wire.Request{Key: body.Key(), Version: body.GetVersion(), Body: body, Session: h.sess, Authenticated: true, SASLUser: "alice", AuthGeneration: h.gen})
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

func (h *harness) reached() []kmsg.Request {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	out := h.rec.got
	h.rec.got = nil
	return out
}

func heartbeat(group string) *kmsg.HeartbeatRequest {
	r := kmsg.NewPtrHeartbeatRequest()
	r.SetVersion(4)
	r.Group = group
	return r
}

func TestUnauthenticatedClosed(t *testing.T) {
	h := newHarness(t, time.Second)
	a := authz.New(h.rec, authz.Config{RequireAuth: true})
	_, err := a.Handle(context.Background(), &wire.Request{Key: 12, Body: heartbeat("g"), Session: h.sess})
	if !errors.Is(err, authz.ErrUnauthenticated) {
		t.Fatalf("err = %v, want ErrUnauthenticated", err)
	}
	if len(h.reached()) != 0 || h.f.count(kmsg.DescribeGroups) != 0 {
		t.Fatal("an unauthenticated request reached the coordinator or the cluster")
	}
}

func TestGroupReadDecides(t *testing.T) {
	for _, notCoord := range []bool{false, true} {
		h := newHarness(t, time.Second)
		h.f.notCoordinator = notCoord
		if code := h.do(heartbeat("g")).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
			t.Fatalf("no ACL: code %d", code)
		}
		if len(h.reached()) != 0 {
			t.Fatal("a refused heartbeat reached the coordinator")
		}
		if !strings.Contains(h.log.String(), "authorization denied") || !strings.Contains(h.log.String(), "resource=g") || !strings.Contains(h.log.String(), "operation=READ") || !strings.Contains(h.log.String(), "principal=User:alice") {
			t.Fatalf("no audit line: %s", h.log.String())
		}
		h.f.grant("GROUP:g", kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
		h.now = h.now.Add(time.Second) // the cached denial has expired
		probes := h.f.count(kmsg.Heartbeat)
		if code := h.do(heartbeat("g")).(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
			t.Fatalf("READ granted (not coordinator %v): code %d", notCoord, code)
		}
		if len(h.reached()) != 1 {
			t.Fatal("an allowed heartbeat did not reach the coordinator")
		}
		if got := h.f.count(kmsg.Heartbeat) > probes; got != notCoord { // the bitfield answers on the coordinator
			t.Fatalf("heartbeat probe used %v, want %v", got, notCoord)
		}
	}
}

func TestCacheBoundedByTTL(t *testing.T) {
	h := newHarness(t, 5*time.Second)
	h.f.grant("GROUP:g", kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
	h.do(heartbeat("g"))
	h.do(heartbeat("g"))
	if n := h.f.count(kmsg.DescribeGroups); n != 1 {
		t.Fatalf("asked %d times within the TTL, want 1", n)
	}
	h.f.revoke("GROUP:g")
	h.now = h.now.Add(4999 * time.Millisecond)
	if code := h.do(heartbeat("g")).(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
		t.Fatalf("within the TTL the cached decision stands, got %d", code)
	}
	h.now = h.now.Add(time.Millisecond)
	if code := h.do(heartbeat("g")).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("revoked ACL not enforced after the TTL: code %d", code)
	}
	// another session asks for itself
	h.f.grant("GROUP:g", kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
	h.sess = &session{f: h.f, n: 2}
	if code := h.do(heartbeat("g")).(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
		t.Fatalf("new session: code %d", code)
	}
}

// TestReauthenticationDropsCachedDecisions: a re-authentication on the
// same connection (a new authentication generation) asks the cluster
// again, even well within the TTL.
func TestReauthenticationDropsCachedDecisions(t *testing.T) {
	h := newHarness(t, time.Hour)
	h.gen = 1
	h.f.grant("GROUP:g", kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
	h.do(heartbeat("g"))
	h.f.revoke("GROUP:g")
	if code := h.do(heartbeat("g")).(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
		t.Fatalf("same authentication within the TTL: code %d, want the cached decision", code)
	}
	h.gen = 2
	if code := h.do(heartbeat("g")).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("after re-authentication: code %d, want the cluster's refusal", code)
	}
	if n := h.f.count(kmsg.DescribeGroups); n != 2 {
		t.Fatalf("asked the cluster %d times, want 2 (once per authentication)", n)
	}
}

func TestOffsetCommitPerTopic(t *testing.T) {
	h := newHarness(t, time.Second)
	h.f.grant("GROUP:g", kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
	h.f.grant("TOPIC:ok", kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
	h.f.grant("TOPIC:desc", kmsg.ACLOperationDescribe)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(9)
	req.Group = "g"
	for _, name := range []string{"ok", "desc", "none"} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = name
		rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}, {Partition: 1, Offset: 6}}
		req.Topics = append(req.Topics, rt)
	}
	resp := h.do(req).(*kmsg.OffsetCommitResponse)
	want := map[string]int16{"ok": 0, "desc": kerr.TopicAuthorizationFailed.Code, "none": kerr.TopicAuthorizationFailed.Code}
	if len(resp.Topics) != 3 {
		t.Fatalf("%d topics answered", len(resp.Topics))
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != want[rt.Topic] {
				t.Errorf("%s/%d: code %d, want %d", rt.Topic, p.Partition, p.ErrorCode, want[rt.Topic])
			}
		}
	}
	got := h.reached()
	if len(got) != 1 || len(got[0].(*kmsg.OffsetCommitRequest).Topics) != 1 || got[0].(*kmsg.OffsetCommitRequest).Topics[0].Topic != "ok" {
		t.Fatalf("the coordinator got %+v, want the allowed topic only", got)
	}
	h.f.revoke("GROUP:g")
	h.now = h.now.Add(time.Second)
	resp = h.do(req).(*kmsg.OffsetCommitResponse)
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != kerr.GroupAuthorizationFailed.Code {
				t.Errorf("group refused: %s/%d code %d", rt.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
	if len(h.reached()) != 0 {
		t.Fatal("a commit of a refused group reached the coordinator")
	}
}

func TestTxnOffsetCommitChecksTransactionalIDFirst(t *testing.T) {
	h := newHarness(t, time.Second)
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.SetVersion(3)
	req.TransactionalID, req.Group = "tx", "g"
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic, rt.Partitions = "ok", []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0}}
	req.Topics = append(req.Topics, rt)
	code := func() int16 { return h.do(req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode }
	if c := code(); c != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("nothing granted: %d", c)
	}
	h.f.grant("TXN:tx", kmsg.ACLOperationWrite)
	h.now = h.now.Add(time.Second)
	if c := code(); c != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("txn granted: %d", c)
	}
	h.f.grant("GROUP:g", kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
	h.f.grant("TOPIC:ok", kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
	h.now = h.now.Add(time.Second)
	if c := code(); c != 0 {
		t.Fatalf("all granted: %d", c)
	}
	if len(h.reached()) != 1 {
		t.Fatal("only the allowed commit reaches the coordinator")
	}
}

func TestDescribeListDelete(t *testing.T) {
	h := newHarness(t, time.Second)
	h.f.grant("GROUP:g", kmsg.ACLOperationDescribe, kmsg.ACLOperationRead)
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.SetVersion(5)
	d.Groups, d.IncludeAuthorizedOperations = []string{"g", "other"}, true
	codes := map[string]int16{}
	ops := map[string]int32{}
	for _, g := range h.do(d).(*kmsg.DescribeGroupsResponse).Groups {
		codes[g.Group], ops[g.Group] = g.ErrorCode, g.AuthorizedOperations
	}
	if codes["g"] != 0 || codes["other"] != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe codes %v", codes)
	}
	if want := int32(1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationDescribe); ops["g"] != want {
		t.Fatalf("authorized operations %b, want %b", ops["g"], want)
	}
	if got := h.reached(); len(got) != 1 || len(got[0].(*kmsg.DescribeGroupsRequest).Groups) != 1 {
		t.Fatalf("the coordinator got %+v", got)
	}

	l := kmsg.NewPtrListGroupsRequest()
	l.SetVersion(5)
	if gs := h.do(l).(*kmsg.ListGroupsResponse).Groups; len(gs) != 1 || gs[0].Group != "g" {
		t.Fatalf("listed %+v, want only g", gs)
	}
	h.f.grant("CLUSTER", kmsg.ACLOperationDescribe)
	h.now = h.now.Add(time.Second)
	if gs := h.do(l).(*kmsg.ListGroupsResponse).Groups; len(gs) != 2 {
		t.Fatalf("DESCRIBE on the cluster lists every group, got %+v", gs)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.SetVersion(2)
	del.Groups = []string{"g"}
	h.reached()
	if c := h.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; c != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("delete without DELETE: %d", c)
	}
	if len(h.reached()) != 0 {
		t.Fatal("a refused delete reached the coordinator")
	}
}

func TestConfigsAndFindCoordinator(t *testing.T) {
	h := newHarness(t, time.Second)
	h.f.notCoordinator = true // the per-operation probes answer
	h.f.grant("GROUP:g", kmsg.ACLOperationDescribeConfigs)
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.SetVersion(4)
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g"}, {ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "x"}}
	codes := map[string]int16{}
	for _, r := range h.do(dc).(*kmsg.DescribeConfigsResponse).Resources {
		codes[r.ResourceName] = r.ErrorCode
	}
	if codes["g"] != 0 || codes["x"] != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe configs %v", codes)
	}
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ia.SetVersion(1)
	ia.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g"}}
	if c := h.do(ia).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; c != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alter without ALTER_CONFIGS: %d", c)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{"g"}
	if c := h.do(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode; c != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("find coordinator without DESCRIBE: %d", c)
	}
	lc := kmsg.NewPtrListConfigResourcesRequest()
	lc.SetVersion(1)
	if c := h.do(lc).(*kmsg.ListConfigResourcesResponse).ErrorCode; c != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("list config resources without cluster DESCRIBE_CONFIGS: %d", c)
	}
	h.f.grant("CLUSTER", kmsg.ACLOperationDescribeConfigs) // without DESCRIBE: no bitfield
	h.now = h.now.Add(time.Second)
	if c := h.do(lc).(*kmsg.ListConfigResourcesResponse).ErrorCode; c != 0 {
		t.Fatalf("list config resources with cluster DESCRIBE_CONFIGS: %d", c)
	}
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.SetVersion(5)
	sg.Group = "g"
	if c := h.do(sg).(*kmsg.SyncGroupResponse).ErrorCode; c != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("SyncGroup v5 without protocol type and name: %d, want INCONSISTENT_GROUP_PROTOCOL as Kafka checks it first", c)
	}
}

func TestOffsetFetchFiltersAllTopics(t *testing.T) {
	h := newHarness(t, time.Second)
	h.f.grant("GROUP:g", kmsg.ACLOperationDescribe)
	h.f.grant("TOPIC:seen", kmsg.ACLOperationDescribe)
	inner := authz.New(handlerFunc(func(req *wire.Request) kmsg.Response {
		resp := req.Body.ResponseKind().(*kmsg.OffsetFetchResponse)
		for _, name := range []string{"seen", "hidden"} {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = "g"
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = name
			g.Topics = append(g.Topics, rt)
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}), authz.Config{TTL: time.Second})
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(9)
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "nope", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "seen"}}}}
	resp, err := inner.Handle(context.Background(), &wire.Request{Key: 9, Version: 9, Body: req, Session: h.sess, Authenticated: true})
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	var refused []string
	for _, g := range resp.(*kmsg.OffsetFetchResponse).Groups {
		if g.ErrorCode == kerr.GroupAuthorizationFailed.Code {
			refused = append(refused, g.Group)
		}
		for _, t := range g.Topics {
			topics = append(topics, t.Topic)
		}
	}
	if strings.Join(topics, ",") != "seen" || strings.Join(refused, ",") != "nope" {
		t.Fatalf("topics %v refused groups %v", topics, refused)
	}
}

type handlerFunc func(req *wire.Request) kmsg.Response

func (f handlerFunc) Handle(_ context.Context, req *wire.Request) (kmsg.Response, error) {
	return f(req), nil
}

func TestStreamsHeartbeatTopologyTopics(t *testing.T) {
	h := newHarness(t, time.Second)
	h.f.grant("GROUP:app", kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)
	h.f.grant("TOPIC:in", kmsg.ACLOperationDescribe)
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group = "app"
	req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{
		SourceTopics: []string{"in"}, StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-store-changelog"}},
	}}}
	resp := h.do(req).(*kmsg.StreamsGroupHeartbeatResponse)
	if resp.ErrorCode != kerr.TopicAuthorizationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "app-store-changelog") {
		t.Fatalf("code %d message %v, want TOPIC_AUTHORIZATION_FAILED naming the changelog", resp.ErrorCode, resp.ErrorMessage)
	}
	if len(h.reached()) != 0 {
		t.Fatal("a refused heartbeat reached the coordinator")
	}
	h.f.grant("TOPIC:app-store-changelog", kmsg.ACLOperationDescribe)
	h.now = h.now.Add(time.Second)
	if code := h.do(req).(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode; code != 0 {
		t.Fatalf("all topics describable: code %d", code)
	}
}

// TestAuditNamesCertificate: a refusal on a connection a client
// certificate admitted names the SASL principal, which was authorized, and
// the certificate's.
func TestAuditNamesCertificate(t *testing.T) {
	h := newHarness(t, time.Second)
	body := heartbeat("g")
	resp, err := h.a.Handle(context.Background(), &wire.Request{Key: body.Key(), Version: 4, Body: body, Session: h.sess, Authenticated: true,
		SASLUser: "alice", CertPrincipal: "User:CN=alice,OU=eng"})
	if err != nil || resp.(*kmsg.HeartbeatResponse).ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("%+v %v", resp, err)
	}
	if l := h.log.String(); !strings.Contains(l, "principal=User:alice") || !strings.Contains(l, `certificate="User:CN=alice,OU=eng"`) {
		t.Fatalf("audit line: %s", l)
	}
}

func consumerHeartbeat(group string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.SetVersion(1)
	r.Group, r.MemberID, r.RebalanceTimeoutMillis, r.SubscribedTopicNames = group, "m", 30000, topics
	return r
}

// TestConsumerHeartbeatReadThenTopics: READ on the group first, then
// DESCRIBE on every subscribed topic; a refused topic answers
// TOPIC_AUTHORIZATION_FAILED alone and nothing reaches the coordinator.
func TestConsumerHeartbeatReadThenTopics(t *testing.T) {
	h := newHarness(t, time.Second)
	h.f.grant("TOPIC:in", kmsg.ACLOperationDescribe)
	if r := h.do(consumerHeartbeat("g", "in")).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != kerr.GroupAuthorizationFailed.Code || r.MemberID != nil {
		t.Fatalf("no READ on the group: code %d member %v", r.ErrorCode, r.MemberID)
	}
	h.f.grant("GROUP:g", kmsg.ACLOperationRead)
	h.now = h.now.Add(time.Second)
	r := h.do(consumerHeartbeat("g", "in", "secret", "in")).(*kmsg.ConsumerGroupHeartbeatResponse)
	if r.ErrorCode != kerr.TopicAuthorizationFailed.Code || r.ErrorMessage != nil || r.Assignment != nil {
		t.Fatalf("undescribable topic: %+v", r)
	}
	if len(h.reached()) != 0 {
		t.Fatal("a refused consumer heartbeat reached the coordinator")
	}
	if l := h.log.String(); !strings.Contains(l, "resource=secret") || !strings.Contains(l, "resource_type=TOPIC") {
		t.Fatalf("no audit line for the topic: %s", l)
	}
	if code := h.do(consumerHeartbeat("g", "in")).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != 0 {
		t.Fatalf("READ and DESCRIBE granted: code %d", code)
	}
	if code := h.do(consumerHeartbeat("g")).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != 0 { // a heartbeat that repeats no subscription
		t.Fatalf("no topics named: code %d", code)
	}
	if n := len(h.reached()); n != 2 {
		t.Fatalf("%d allowed heartbeats reached the coordinator, want 2", n)
	}
}

// describedConsumerGroups answers ConsumerGroupDescribe with one member per
// group, assigned topic "in" and, in group "mixed", target topic "secret".
func describedConsumerGroups(req *wire.Request) kmsg.Response {
	b := req.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := b.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, g := range b.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group, dg.State, dg.Epoch = g, "Stable", 3
		m := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		m.MemberID = "m"
		m.Assignment.TopicPartitions = []kmsg.AssignmentTopicPartition{{Topic: "in", Partitions: []int32{0}}}
		if g == "mixed" {
			m.TargetAssignment.TopicPartitions = []kmsg.AssignmentTopicPartition{{Topic: "secret", Partitions: []int32{0}}}
		}
		dg.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{m}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// TestConsumerDescribeGroupsAndTopics: DESCRIBE on each group (refused
// groups first, as Kafka answers them), the authorized operations of the
// described ones, and a group whose assignments show a topic the
// principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED
// without members.
func TestConsumerDescribeGroupsAndTopics(t *testing.T) {
	h := newHarness(t, time.Second)
	h.a = authz.New(handlerFunc(describedConsumerGroups), authz.Config{TTL: time.Second, Now: func() time.Time { return h.now }})
	for _, g := range []string{"g", "mixed"} {
		h.f.grant("GROUP:"+g, kmsg.ACLOperationDescribe)
	}
	h.f.grant("TOPIC:in", kmsg.ACLOperationDescribe)
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.SetVersion(1)
	d.Groups, d.IncludeAuthorizedOperations = []string{"g", "other", "mixed"}, true
	gs := h.do(d).(*kmsg.ConsumerGroupDescribeResponse).Groups
	if len(gs) != 3 || gs[0].Group != "other" || gs[1].Group != "g" || gs[2].Group != "mixed" {
		t.Fatalf("groups %+v, want other, g, mixed", gs)
	}
	if gs[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("other: code %d", gs[0].ErrorCode)
	}
	if g := gs[1]; g.ErrorCode != 0 || len(g.Members) != 1 || g.AuthorizedOperations != 1<<kmsg.ACLOperationDescribe {
		t.Fatalf("g: %+v", g)
	}
	if g := gs[2]; g.ErrorCode != kerr.TopicAuthorizationFailed.Code || g.ErrorMessage == nil || len(g.Members) != 0 || g.State != "" ||
		g.AuthorizedOperations != -2147483648 {
		t.Fatalf("mixed: %+v", g)
	}
	h.f.grant("TOPIC:secret", kmsg.ACLOperationDescribe)
	h.now = h.now.Add(time.Second)
	for _, g := range h.do(d).(*kmsg.ConsumerGroupDescribeResponse).Groups {
		if g.Group == "mixed" && (g.ErrorCode != 0 || len(g.Members) != 1) {
			t.Fatalf("every topic describable: %+v", g)
		}
	}
}

// TestOffsetDeleteAllTopicsRefusedAsksTheCoordinator: as Kafka, an
// OffsetDelete whose every topic is refused still reaches the coordinator
// (with no topic); its group error is the whole answer, else the refused
// partitions are.
func TestOffsetDeleteAllTopicsRefusedAsksTheCoordinator(t *testing.T) {
	h := newHarness(t, time.Second)
	h.f.grant("GROUP:g", kmsg.ACLOperationDelete, kmsg.ACLOperationDescribe)
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "g"
	req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "secret", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	resp := h.do(req).(*kmsg.OffsetDeleteResponse)
	reached := h.reached()
	if len(reached) != 1 || len(reached[0].(*kmsg.OffsetDeleteRequest).Topics) != 0 {
		t.Fatalf("the coordinator got %+v, want one OffsetDelete without topics", reached)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("response %+v, want the refused partition", resp)
	}
}

// describedStreamsGroups answers StreamsGroupDescribe with one member per
// group and a topology reading "in"; group "mixed" also has a
// repartition topic and a changelog.
func describedStreamsGroups(req *wire.Request) kmsg.Response {
	b := req.Body.(*kmsg.StreamsGroupDescribeRequest)
	resp := b.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	for _, g := range b.Groups {
		dg := kmsg.NewStreamsGroupDescribeResponseGroup()
		dg.Group, dg.State, dg.Epoch, dg.TopologyDescriptionStatus = g, "Stable", 3, 1
		st := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
		st.SubtopologyID, st.SourceTopics = "0", []string{"in"}
		if g == "mixed" {
			st.RepartitionSinkTopics = []string{"mixed-rep"}
			st.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: "mixed-rep"}}
			st.StateChangelogTopics = []kmsg.TopicInfo{{Topic: "mixed-store-changelog"}}
		}
		dg.Topology = &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{st}}
		m := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		m.MemberID = "m"
		dg.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{m}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// TestStreamsDescribeTopologyTopics: as Kafka 4.4, a described streams
// group whose topology holds a topic (source, repartition or changelog)
// the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED
// with no members, no topology and no authorized operations.
func TestStreamsDescribeTopologyTopics(t *testing.T) {
	h := newHarness(t, time.Second)
	h.a = authz.New(handlerFunc(describedStreamsGroups), authz.Config{TTL: time.Second, Log: slog.New(slog.NewTextHandler(h.log, nil)), Now: func() time.Time { return h.now }})
	for _, g := range []string{"g", "mixed"} {
		h.f.grant("GROUP:"+g, kmsg.ACLOperationDescribe)
	}
	for _, tp := range []string{"in", "mixed-rep"} {
		h.f.grant("TOPIC:"+tp, kmsg.ACLOperationDescribe)
	}
	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.SetVersion(1)
	d.Groups, d.IncludeAuthorizedOperations = []string{"g", "other", "mixed"}, true
	gs := h.do(d).(*kmsg.StreamsGroupDescribeResponse).Groups
	if len(gs) != 3 || gs[0].Group != "other" || gs[1].Group != "g" || gs[2].Group != "mixed" {
		t.Fatalf("groups %+v, want other, g, mixed", gs)
	}
	if gs[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("other: code %d", gs[0].ErrorCode)
	}
	if g := gs[1]; g.ErrorCode != 0 || len(g.Members) != 1 || g.Topology == nil || g.AuthorizedOperations != 1<<kmsg.ACLOperationDescribe {
		t.Fatalf("g: %+v", g)
	}
	if g := gs[2]; g.ErrorCode != kerr.TopicAuthorizationFailed.Code || g.ErrorMessage == nil ||
		*g.ErrorMessage != "The described group uses topics that the client is not authorized to describe." ||
		len(g.Members) != 0 || g.Topology != nil || g.State != "" || g.Epoch != 0 || g.TopologyDescriptionStatus != 0 ||
		g.AuthorizedOperations != -2147483648 {
		t.Fatalf("mixed: %+v", g)
	}
	if l := h.log.String(); !strings.Contains(l, "resource=mixed-store-changelog") {
		t.Fatalf("no audit line for the changelog: %s", l)
	}
	h.f.grant("TOPIC:mixed-store-changelog", kmsg.ACLOperationDescribe)
	h.now = h.now.Add(time.Second)
	for _, g := range h.do(d).(*kmsg.StreamsGroupDescribeResponse).Groups {
		if g.Group == "mixed" && (g.ErrorCode != 0 || len(g.Members) != 1 || g.Topology == nil) {
			t.Fatalf("every topic describable: %+v", g)
		}
	}
}

// TestOffsetFetchGroupErrorAlone: as Kafka, a group the coordinator answers
// with an error (here a stale member epoch) is that error alone, without
// the refused topics of the request; otherwise they are answered
// TOPIC_AUTHORIZATION_FAILED beside the coordinator's.
func TestOffsetFetchGroupErrorAlone(t *testing.T) {
	h := newHarness(t, time.Second)
	h.f.grant("GROUP:g", kmsg.ACLOperationDescribe)
	h.f.grant("GROUP:stale", kmsg.ACLOperationDescribe)
	h.f.grant("TOPIC:in", kmsg.ACLOperationDescribe)
	h.a = authz.New(handlerFunc(func(req *wire.Request) kmsg.Response {
		b := req.Body.(*kmsg.OffsetFetchRequest)
		resp := b.ResponseKind().(*kmsg.OffsetFetchResponse)
		for _, g := range b.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			if g.Group == "stale" {
				rg.ErrorCode = kerr.StaleMemberEpoch.Code
			} else {
				for _, tp := range g.Topics {
					rt := kmsg.NewOffsetFetchResponseGroupTopic()
					rt.Topic = tp.Topic
					rg.Topics = append(rg.Topics, rt)
				}
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}), authz.Config{TTL: time.Second, Now: func() time.Time { return h.now }})
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(9)
	for _, g := range []string{"g", "stale"} {
		req.Groups = append(req.Groups, kmsg.OffsetFetchRequestGroup{Group: g, Topics: []kmsg.OffsetFetchRequestGroupTopic{
			{Topic: "in", Partitions: []int32{0}}, {Topic: "secret", Partitions: []int32{0}},
		}})
	}
	gs := h.do(req).(*kmsg.OffsetFetchResponse).Groups
	if len(gs) != 2 {
		t.Fatalf("groups %+v", gs)
	}
	var shown []string
	for _, tp := range gs[0].Topics {
		shown = append(shown, tp.Topic)
	}
	if gs[0].ErrorCode != 0 || strings.Join(shown, ",") != "in,secret" || gs[0].Topics[1].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("g: %+v", gs[0])
	}
	if gs[1].ErrorCode != kerr.StaleMemberEpoch.Code || len(gs[1].Topics) != 0 {
		t.Fatalf("stale: %+v, want the group error alone", gs[1])
	}
}

// TestTopologyDescriptionPushNeedsGroupRead: a streams topology-description
// push needs READ on its group, as Kafka's KafkaApis checks before the
// coordinator; DESCRIBE alone is refused with GROUP_AUTHORIZATION_FAILED
// and no message, and the refused push never reaches the coordinator.
func TestTopologyDescriptionPushNeedsGroupRead(t *testing.T) {
	h := newHarness(t, time.Second)
	push := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	push.Group, push.MemberID, push.TopologyEpoch = "g", "m", 1
	for _, ops := range [][]kmsg.ACLOperation{nil, {kmsg.ACLOperationDescribe}} {
		for _, op := range ops {
			h.f.grant("GROUP:g", op)
		}
		h.now = h.now.Add(time.Second) // past the cached decision
		resp := h.do(push).(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
		if resp.ErrorCode != kerr.GroupAuthorizationFailed.Code || resp.ErrorMessage != nil {
			t.Fatalf("granted %v: code %d message %v, want GROUP_AUTHORIZATION_FAILED alone", ops, resp.ErrorCode, resp.ErrorMessage)
		}
		if len(h.reached()) != 0 {
			t.Fatalf("granted %v: a refused push reached the coordinator", ops)
		}
	}
	h.f.grant("GROUP:g", kmsg.ACLOperationRead)
	h.now = h.now.Add(time.Second)
	if code := h.do(push).(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse).ErrorCode; code != 0 {
		t.Fatalf("READ granted: code %d", code)
	}
	if got := h.reached(); len(got) != 1 || got[0] != push {
		t.Fatalf("an allowed push reached the coordinator as %v", got)
	}
}
