package authz_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/wire"
)

// listingSession is a cluster whose principal may READ every group and
// DESCRIBE only the topics in describable; an all-topics Metadata lists
// exactly those, as Kafka answers it.
type listingSession struct {
	describable []string
	lists       int // all-topics Metadata requests answered
}

func (s *listingSession) Ask(_ context.Context, body kmsg.Request) (kmsg.Response, error) {
	switch r := body.(type) {
	case *kmsg.DescribeGroupsRequest:
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range r.Groups {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.AuthorizedOperations = g, 1<<uint(kmsg.ACLOperationRead)|1<<uint(kmsg.ACLOperationDescribe)
			resp.Groups = append(resp.Groups, dg)
		}
		return resp, nil
	case *kmsg.MetadataRequest:
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		if r.Topics != nil {
			return nil, nil // not asked by these tests
		}
		s.lists++
		for _, t := range s.describable {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = kmsg.StringPtr(t)
			resp.Topics = append(resp.Topics, mt)
		}
		return resp, nil
	}
	return nil, nil
}

// filterRecorder keeps the DESCRIBE filter each heartbeat reached the
// coordinator with.
type filterRecorder struct{ filters []func(string) bool }

func (r *filterRecorder) Handle(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	r.filters = append(r.filters, authz.DescribableTopics(ctx))
	return wire.ErrorResponse(req.Body, 0), nil
}

// TestConsumerHeartbeatCarriesDescribableTopics: an allowed consumer
// heartbeat reaches the coordinator with the topics the principal may
// DESCRIBE (what its regex may resolve to), listed once per session per
// TTL; without authorization there is no filter.
func TestConsumerHeartbeatCarriesDescribableTopics(t *testing.T) {
	now := time.Unix(1000, 0)
	sess := &listingSession{describable: []string{"rx-1", "other"}}
	rec := &filterRecorder{}
	a := authz.New(rec, authz.Config{TTL: time.Second, Now: func() time.Time { return now }})
	hb := func() {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.SubscribedTopicRegex = "g", "m", kmsg.StringPtr("rx-.*")
		resp, err := a.Handle(context.Background(), &wire.Request{Key: req.Key(), Body: req, Session: sess, Authenticated: true})
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	hb()
	f := rec.filters[0]
	if f == nil || !f("rx-1") || !f("other") || f("rx-2") {
		t.Fatalf("filter: rx-1 %v other %v rx-2 %v", f("rx-1"), f("other"), f("rx-2"))
	}
	hb()
	if sess.lists != 1 {
		t.Fatalf("listed %d times within the TTL", sess.lists)
	}
	sess.describable = append(sess.describable, "rx-2")
	now = now.Add(time.Second)
	hb()
	if sess.lists != 2 || !rec.filters[2]("rx-2") {
		t.Fatalf("after the TTL: %d lists, rx-2 %v", sess.lists, rec.filters[2]("rx-2"))
	}
	if authz.DescribableTopics(context.Background()) != nil {
		t.Fatal("a context authz did not pass has a filter")
	}
}

// TestConsumerHeartbeatDescribableTopicsLocal: on a Local authorizer (the
// embedded data plane, no session to ask) the heartbeat's filter is the
// in-memory ACLs' DESCRIBE answer for the request's principal.
func TestConsumerHeartbeatDescribableTopicsLocal(t *testing.T) {
	g, tp, lit, pre := kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	ev, err := authz.NewACLEvaluator([]authz.ACL{
		{Principal: "User:u", Host: "*", ResourceType: g, Pattern: lit, Name: "g", Operation: kmsg.ACLOperationRead, Allow: true},
		{Principal: "User:u", Host: "*", ResourceType: tp, Pattern: pre, Name: "rx-", Operation: kmsg.ACLOperationRead, Allow: true},
		{Principal: "User:u", Host: "*", ResourceType: tp, Pattern: lit, Name: "rx-2", Operation: kmsg.ACLOperationDescribe, Allow: false},
	}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := &filterRecorder{}
	a := authz.New(rec, authz.Config{TTL: time.Second, Local: &authz.Local{Evaluator: ev}})
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.SubscribedTopicRegex = "g", "m", kmsg.StringPtr("rx-.*")
	resp, err := a.Handle(context.Background(), &wire.Request{Key: req.Key(), Body: req, Authenticated: true, SASLUser: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	f := rec.filters[0]
	if f == nil || !f("rx-1") || f("rx-2") || f("other") {
		t.Fatalf("filter: rx-1 %v rx-2 %v other %v", f("rx-1"), f("rx-2"), f("other"))
	}
}
