package host

import (
	"context"
	"errors"
	"fmt"
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

// TestOffsetsWrittenAsTheClient: with LoopDeps.OffsetsAs, a commit is
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
