package loop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/gateway"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/wire"
)

// refusingWriter is a principal's writer whose writes are not sent: err
// is what the data plane answered.
type refusingWriter struct{ err error }

func (w refusingWriter) CommitOffsets(context.Context, *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	return nil, w.err
}
func (w refusingWriter) TxnCommitOffsets(context.Context, *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	return nil, w.err
}
func (w refusingWriter) DeleteOffsets(context.Context, *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	return nil, w.err
}

// TestOffsetsWrittenAsTheClient: with Deps.OffsetsAs, a commit is
// written by the writer of the request's principal (SASL user, or the
// certificate's principal), never by the offset store; a write that was
// not sent (login refused, coordinator lookup refused, no principal) is
// answered without writing anything and without a read-back.
func TestOffsetsWrittenAsTheClient(t *testing.T) {
	fake := &fakePlane{stored: map[string]int64{}}
	var reads atomic.Int32
	fake.onFetch = func(*kmsg.OffsetFetchRequest) { reads.Add(1) }
	l := gateLoop(t, fake, &skewClock{})
	own := &fakePlane{stored: map[string]int64{}} // what principals write
	var asked []string
	l.d.OffsetsAs = func(principal string) (offsets.Writer, error) {
		asked = append(asked, principal)
		switch principal {
		case "User:app", "User:CN=cert":
			return own, nil
		case "User:stale":
			return refusingWriter{fmt.Errorf("%w: %w: %w", gateway.ErrNotSent, gateway.ErrLoginRefused, kerr.SaslAuthenticationFailed)}, nil
		case "User:revoked":
			return refusingWriter{fmt.Errorf("%w: %w", gateway.ErrNotSent, kerr.GroupAuthorizationFailed)}, nil
		}
		return nil, errors.New("no principal")
	}
	commit := func(req *wire.Request, group string, offset int64) int16 {
		t.Helper()
		body := kmsg.NewPtrOffsetCommitRequest()
		body.SetVersion(8)
		body.Group, body.Generation = group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "in"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		body.Topics = append(body.Topics, rt)
		req.Key, req.Version, req.Body = body.Key(), body.Version, body
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := l.Handle(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	sasl := func(user string) *wire.Request { return &wire.Request{Authenticated: true, SASLUser: user} }

	if code := commit(sasl("app"), "ga", 5); code != 0 || own.offset("ga", 0) != 5 {
		t.Fatalf("app's commit: %v, stored as app %d", kerr.ErrorForCode(code), own.offset("ga", 0))
	}
	if code := commit(&wire.Request{CertAuthenticated: true, CertPrincipal: "User:CN=cert"}, "gc", 6); code != 0 || own.offset("gc", 0) != 6 {
		t.Fatalf("certificate's commit: %v, stored %d", kerr.ErrorForCode(code), own.offset("gc", 0))
	}
	for _, tc := range []struct {
		req  *wire.Request
		want *kerr.Error
	}{
		{sasl("stale"), kerr.CoordinatorNotAvailable},
		{sasl("revoked"), kerr.GroupAuthorizationFailed},
		{&wire.Request{}, kerr.CoordinatorNotAvailable},
	} {
		if code := commit(tc.req, "gx", 9); code != tc.want.Code {
			t.Errorf("commit as %q answered %v, want %v", tc.req.SASLUser, kerr.ErrorForCode(code), tc.want)
		}
	}
	if got := fmt.Sprint(asked); got != "[User:app User:CN=cert User:stale User:revoked ]" {
		t.Fatalf("writers asked for %s", got)
	}
	if w := fake.written(); len(w) != 0 {
		t.Fatalf("the offset store (coordhost's identity) wrote %v", w)
	}
	if own.offset("gx", 0) != 0 || reads.Load() != 0 {
		t.Fatalf("refused commits wrote %d, read back %d times", own.offset("gx", 0), reads.Load())
	}
}

// groupsWriter is a principal's writer that may delete the groups in may
// (others are refused with refusal) and records what it deleted.
type groupsWriter struct {
	refusingWriter
	may     map[string]bool
	refusal error
	mu      sync.Mutex
	deleted []string
}

func (w *groupsWriter) MayDeleteGroups(_ context.Context, groups []string) map[string]error {
	out := map[string]error{}
	for _, g := range groups {
		if !w.may[g] {
			out[g] = w.refusal
		}
	}
	return out
}

func (w *groupsWriter) DeleteGroupOffsets(_ context.Context, groups []string) (map[string]error, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]error{}
	for _, g := range groups {
		if !w.may[g] {
			out[g] = kerr.GroupAuthorizationFailed
			continue
		}
		w.deleted = append(w.deleted, g)
		out[g] = nil
	}
	return out, nil
}

// TestDeleteGroupsAsTheClient: with Deps.OffsetsAs, DeleteGroups asks
// the principal's writer whether it may delete each group before core
// deletes anything: a group the cluster refuses the principal (or whose
// question was not sent) is answered with the cluster's error (or
// COORDINATOR_NOT_AVAILABLE) and stays in core and in the data plane; an
// allowed one is deleted in core and its offsets by the principal's
// writer, never by the offset store.
func TestDeleteGroupsAsTheClient(t *testing.T) {
	fake := &fakePlane{stored: map[string]int64{}}
	l := gateLoop(t, fake, &skewClock{})
	app := &groupsWriter{may: map[string]bool{"ga": true}, refusal: fmt.Errorf("%w: %w", gateway.ErrNotSent, kerr.GroupAuthorizationFailed)}
	stale := &groupsWriter{refusal: fmt.Errorf("%w: %w: %w", gateway.ErrNotSent, gateway.ErrLoginRefused, kerr.SaslAuthenticationFailed)}
	l.d.OffsetsAs = func(principal string) (offsets.Writer, error) {
		switch principal {
		case "User:app":
			return app, nil
		case "User:stale":
			return stale, nil
		}
		return nil, errors.New("no principal")
	}
	do := func(req *wire.Request, body kmsg.Request) kmsg.Response {
		t.Helper()
		req.Key, req.Version, req.Body = body.Key(), body.GetVersion(), body
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := l.Handle(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	sasl := func(user string) *wire.Request { return &wire.Request{Authenticated: true, SASLUser: user} }
	groups := []string{"ga", "gr", "gs"}
	for _, g := range groups { // an empty classic group in core for each
		join := kmsg.NewPtrJoinGroupRequest()
		join.SetVersion(4)
		join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = g, 10000, 10000, "consumer"
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		do(sasl("app"), join) // v4: MEMBER_ID_REQUIRED, and no member stays
	}
	deleteAs := func(req *wire.Request, groups ...string) map[string]int16 {
		t.Helper()
		body := kmsg.NewPtrDeleteGroupsRequest()
		body.SetVersion(2)
		body.Groups = groups
		out := map[string]int16{}
		for _, g := range do(req, body).(*kmsg.DeleteGroupsResponse).Groups {
			out[g.Group] = g.ErrorCode
		}
		return out
	}
	got := deleteAs(sasl("app"), "ga", "gr")
	if got["ga"] != 0 || got["gr"] != kerr.GroupAuthorizationFailed.Code || len(got) != 2 {
		t.Fatalf("DeleteGroups as app answered %v, want ga deleted and gr GROUP_AUTHORIZATION_FAILED", got)
	}
	if fmt.Sprint(app.deleted) != "[ga]" {
		t.Fatalf("app's writer deleted %v, want [ga]", app.deleted)
	}
	got = deleteAs(sasl("stale"), "gs")
	if got["gs"] != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("DeleteGroups as stale answered %v, want COORDINATOR_NOT_AVAILABLE", got)
	}
	if got = deleteAs(&wire.Request{}, "gs"); got["gs"] != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("DeleteGroups without a principal answered %v, want COORDINATOR_NOT_AVAILABLE", got)
	}
	// the refused groups are still in core: deleting them when allowed
	// finds them (a group core does not hold is GROUP_ID_NOT_FOUND)
	app.may["gr"], app.may["gs"] = true, true
	if got = deleteAs(sasl("app"), "gr", "gs", "ga"); got["gr"] != 0 || got["gs"] != 0 || got["ga"] != kerr.GroupIDNotFound.Code {
		t.Fatalf("DeleteGroups of the groups left answered %v, want gr and gs deleted, ga not found", got)
	}
	if w := fake.written(); len(w) != 0 {
		t.Fatalf("the offset store (coordhost's identity) wrote %v", w)
	}
}
