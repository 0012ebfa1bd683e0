package authz_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/wire"
)

// topicsLoop is a streams coordinator that reports internal topics
// missing and leaves their creation to the client's session.
type topicsLoop struct {
	mu      sync.Mutex
	created []string // groups told InternalTopicsCreated
}

func (l *topicsLoop) Handle(_ context.Context, req *wire.Request) (kmsg.Response, error) {
	resp := req.Body.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: 3, StatusDetail: "Internal topics are missing: app-a-changelog, app-b-repartition"}}
	return resp, nil
}

func (l *topicsLoop) InternalTopicsToCreate(group string) []kmsg.CreateTopicsRequestTopic {
	var out []kmsg.CreateTopicsRequestTopic
	for _, n := range []string{"app-b-repartition", "app-a-changelog"} {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = n, 2, -1
		out = append(out, t)
	}
	return out
}

func (l *topicsLoop) InternalTopicsCreated(group string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.created = append(l.created, group)
}

// createSession is a client's upstream session on which the principal
// may create the topics in mayCreate; it records the CreateTopics it gets.
type createSession struct {
	mayCreate map[string]bool
	asked     []string // "validate:a,b" or "create:a,b"
}

func (s *createSession) Ask(_ context.Context, body kmsg.Request) (kmsg.Response, error) {
	req := body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	var names []string
	for _, t := range req.Topics {
		names = append(names, t.Topic)
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		if !s.mayCreate[t.Topic] {
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		resp.Topics = append(resp.Topics, rt)
	}
	kind := "create:"
	if req.ValidateOnly {
		kind = "validate:"
	}
	s.asked = append(s.asked, kind+strings.Join(names, ","))
	return resp, nil
}

func TestStreamsInternalTopicsCreatedAsTheClient(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mayCreate []string
		asked     string
		detail    string
		created   bool
	}{
		{name: "no CREATE", asked: "validate:app-b-repartition,app-a-changelog",
			detail: "Internal topics are missing: app-a-changelog, app-b-repartition; Unauthorized to CREATE on topics app-a-changelog, app-b-repartition."},
		{name: "CREATE on one topic of two", mayCreate: []string{"app-a-changelog"}, asked: "validate:app-b-repartition,app-a-changelog",
			detail: "Internal topics are missing: app-a-changelog, app-b-repartition; Unauthorized to CREATE on topics app-b-repartition."},
		{name: "CREATE", mayCreate: []string{"app-a-changelog", "app-b-repartition"},
			asked:  "validate:app-b-repartition,app-a-changelog create:app-b-repartition,app-a-changelog",
			detail: "Internal topics are missing: app-a-changelog, app-b-repartition", created: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster()
			f.grant("GROUP:app", kmsg.ACLOperationRead)
			loop := &topicsLoop{}
			var log bytes.Buffer
			a := authz.New(loop, authz.Config{Log: slog.New(slog.NewTextHandler(&log, nil))})
			sess := &createSession{mayCreate: map[string]bool{}}
			for _, n := range tc.mayCreate {
				sess.mayCreate[n] = true
			}
			// READ on the group is asked on the fake cluster's session, the
			// CreateTopics on the client's: one session answering both
			both := &routeSession{probe: &session{f: f}, create: sess}
			hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			hb.Group = "app"
			r, err := a.Handle(context.Background(), &wire.Request{Key: hb.Key(), Body: hb, Session: both, Authenticated: true, SASLUser: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			resp := r.(*kmsg.StreamsGroupHeartbeatResponse)
			if len(resp.Status) != 1 || resp.Status[0].StatusCode != 3 || resp.Status[0].StatusDetail != tc.detail {
				t.Errorf("status %+v\nwant detail %q", resp.Status, tc.detail)
			}
			if got := strings.Join(sess.asked, " "); got != tc.asked {
				t.Errorf("asked %q, want %q", got, tc.asked)
			}
			if (len(loop.created) == 1) != tc.created {
				t.Errorf("told created %v, want %v", loop.created, tc.created)
			}
			if denied := strings.Contains(log.String(), "operation=CREATE"); denied == tc.created {
				t.Errorf("audit log %q", log.String())
			}
		})
	}
}

// routeSession sends CreateTopics to create and the rest to probe.
type routeSession struct {
	probe  *session
	create *createSession
}

func (r *routeSession) Ask(ctx context.Context, body kmsg.Request) (kmsg.Response, error) {
	if _, ok := body.(*kmsg.CreateTopicsRequest); ok {
		return r.create.Ask(ctx, body)
	}
	return r.probe.Ask(ctx, body)
}
