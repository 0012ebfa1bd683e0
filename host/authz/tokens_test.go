package authz_test

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/authz"
)

// TestTokensForCertificatePrincipals: a token is created for the
// certificate's principal as owner, its HMAC given as Kafka's base64
// password, reused until half its lifetime, then replaced; refusals are
// errors.
func TestTokensForCertificatePrincipals(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	var reqs []*kmsg.CreateDelegationTokenRequest
	refuse := false
	send := func(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
		r := req.(*kmsg.CreateDelegationTokenRequest)
		reqs = append(reqs, r)
		resp := r.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
		if refuse {
			resp.ErrorCode = kerr.DelegationTokenAuthorizationFailed.Code
			return resp, nil
		}
		resp.TokenID, resp.HMAC = "tok"+string(rune('0'+len(reqs))), []byte{1, 2, 3, byte(len(reqs))}
		resp.IssueTimestamp, resp.ExpiryTimestamp = now.UnixMilli(), now.Add(24*time.Hour).UnixMilli()
		return resp, nil
	}
	tokens := authz.NewTokens(send, func() time.Time { return now })
	const alice = "User:CN=alice,OU=eng"
	user, pass, err := tokens.For(context.Background(), alice)
	if err != nil || user != "tok1" || pass != base64.StdEncoding.EncodeToString([]byte{1, 2, 3, 1}) {
		t.Fatalf("token: %q %q %v", user, pass, err)
	}
	if r := reqs[0]; r.OwnerPrincipalType == nil || *r.OwnerPrincipalType != "User" || r.OwnerPrincipalName == nil || *r.OwnerPrincipalName != "CN=alice,OU=eng" || r.GetVersion() < 3 {
		t.Fatalf("CreateDelegationToken: %+v", r)
	}
	now = now.Add(12*time.Hour - time.Millisecond)
	if user, _, _ := tokens.For(context.Background(), alice); user != "tok1" || len(reqs) != 1 {
		t.Fatalf("within half the lifetime: %q after %d requests, want tok1 reused", user, len(reqs))
	}
	now = now.Add(time.Millisecond)
	if user, _, _ := tokens.For(context.Background(), alice); user != "tok2" {
		t.Fatalf("at half the lifetime: %q, want a new token", user)
	}
	if user, _, _ := tokens.For(context.Background(), "User:CN=bob"); user != "tok3" {
		t.Fatalf("another principal: %q, want its own token", user)
	}
	tokens.Forget(alice) // the cluster refused a login with tok2
	if user, _, _ := tokens.For(context.Background(), alice); user != "tok4" {
		t.Fatalf("after Forget: %q, want a new token", user)
	}
	refuse = true
	if _, _, err := tokens.For(context.Background(), "User:CN=carol"); !errors.Is(err, kerr.DelegationTokenAuthorizationFailed) {
		t.Fatalf("refused: %v", err)
	}
	if _, _, err := tokens.For(context.Background(), "unknown"); err == nil {
		t.Fatal("a token for a name that is no principal")
	}
}
