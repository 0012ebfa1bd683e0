package identity_test

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/gateway"
	"github.com/coordhost/coordhost/host/identity"
	"github.com/coordhost/coordhost/host/wire"
)

// TestPrincipal: a certificate's principal wins over a SASL user; a SASL
// user counts only once authenticated.
func TestPrincipal(t *testing.T) {
	for _, c := range []struct {
		req  wire.Request
		want string
	}{
		{wire.Request{CertAuthenticated: true, CertPrincipal: "User:CN=app", Authenticated: true, SASLUser: "app"}, "User:CN=app"},
		{wire.Request{Authenticated: true, SASLUser: "app"}, "User:app"},
		{wire.Request{SASLUser: "app"}, ""},
		{wire.Request{Authenticated: true}, ""},
	} {
		if got := identity.Principal(&c.req); got != c.want {
			t.Errorf("%+v: principal %q, want %q", c.req, got, c.want)
		}
	}
}

// TestUnsentAndDeleteCodes: a write not sent as the principal is answered
// with the cluster's authorization error when it refused the coordinator
// lookup, else COORDINATOR_NOT_AVAILABLE (a refused login, no writer); a
// failed group deletion with the cluster's error unless the login was
// refused.
func TestUnsentAndDeleteCodes(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	loginRefused := fmt.Errorf("%w: %w: %w", gateway.ErrNotSent, gateway.ErrLoginRefused, kerr.GroupAuthorizationFailed)
	for _, c := range []struct {
		err            error
		unsent, delete int16
	}{
		{fmt.Errorf("%w: %w", gateway.ErrNotSent, kerr.GroupAuthorizationFailed), kerr.GroupAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code},
		{fmt.Errorf("%w: %w", gateway.ErrNotSent, kerr.TransactionalIDAuthorizationFailed), kerr.TransactionalIDAuthorizationFailed.Code, kerr.TransactionalIDAuthorizationFailed.Code},
		{loginRefused, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorNotAvailable.Code},
		{errors.New("no principal"), kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorNotAvailable.Code},
		{kerr.UnknownServerError, kerr.CoordinatorNotAvailable.Code, kerr.UnknownServerError.Code},
	} {
		body := kmsg.NewPtrOffsetCommitRequest()
		body.Group = "g"
		body.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0}}}}
		resp := identity.Unsent(log, body, "g", c.err).(*kmsg.OffsetCommitResponse)
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != c.unsent {
			t.Errorf("%v: commit answered %d, want %d", c.err, got, c.unsent)
		}
		if got := identity.DeleteErrorCode(c.err); got != c.delete {
			t.Errorf("%v: deletion answered %d, want %d", c.err, got, c.delete)
		}
	}
}
