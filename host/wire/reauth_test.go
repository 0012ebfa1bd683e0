package wire

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// saslCluster is a fake data plane that authenticates PLAIN (password:
// the user and "-pw") over each link, answering a session lifetime.
type saslCluster struct {
	lifetimeMs int64
	mu         sync.Mutex
	links      []*saslLink
}

type saslLink struct {
	c      *saslCluster
	mu     sync.Mutex
	mech   string
	user   string
	closed bool
	keys   []int16
}

func (c *saslCluster) dial(context.Context) (Upstream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := &saslLink{c: c}
	c.links = append(c.links, l)
	return l, nil
}

func (c *saslCluster) link(i int) *saslLink {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i >= len(c.links) {
		return nil
	}
	return c.links[i]
}

func (l *saslLink) Forward(_ context.Context, _ *string, req kmsg.Request) (kmsg.Response, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = append(l.keys, req.Key())
	switch r := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		l.mech = r.Mechanism
		return r.ResponseKind(), nil
	case *kmsg.SASLAuthenticateRequest:
		resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		parts := bytes.Split(r.SASLAuthBytes, []byte{0})
		if l.mech != "PLAIN" || len(parts) != 3 || string(parts[2]) != string(parts[1])+"-pw" {
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			return resp, nil
		}
		l.user, resp.SessionLifetimeMillis = string(parts[1]), l.c.lifetimeMs
		return resp, nil
	}
	return ErrorResponse(req, 0), nil
}

func (l *saslLink) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return nil
}

func (l *saslLink) state() (user string, closed bool, keys []int16) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.user, l.closed, append([]int16(nil), l.keys...)
}

// reauthServer serves the fake cluster with maxReauth; every group request
// it answers is sent on gens (its authentication generation).
func reauthServer(t *testing.T, cl *saslCluster, maxReauth time.Duration) (addr string, gens chan uint64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gens = make(chan uint64, 16)
	ranges := map[int16]VersionRange{int16(kmsg.SASLHandshake): {0, 1}, int16(kmsg.SASLAuthenticate): {0, 2}, int16(kmsg.Metadata): {0, 13}}
	s := NewServer(ln, Config{
		Table: NewTable(ranges), SASLRequired: true, MaxReauth: maxReauth, Dial: cl.dial,
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			gens <- req.AuthGeneration
			return ErrorResponse(req.Body, 0), nil
		},
	})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return ln.Addr().String(), gens
}

// login runs a PLAIN handshake and authentication as user (password
// password) and returns the authentication's response.
func (c *client) login(mech, user, password string) (*kmsg.SASLHandshakeResponse, *kmsg.SASLAuthenticateResponse) {
	c.t.Helper()
	hr := c.handshake(mech)
	if hr.ErrorCode != 0 {
		return hr, nil
	}
	sa := kmsg.NewPtrSASLAuthenticateRequest()
	sa.SASLAuthBytes = []byte("\x00" + user + "\x00" + password)
	c.send(sa, 2, 2)
	_, r := c.recv(sa)
	return hr, r.(*kmsg.SASLAuthenticateResponse)
}

func (c *client) handshake(mech string) *kmsg.SASLHandshakeResponse {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = mech
	c.send(hs, 1, 1)
	_, r := c.recv(hs)
	return r.(*kmsg.SASLHandshakeResponse)
}

func (c *client) heartbeat() {
	c.t.Helper()
	hb := kmsg.NewPtrHeartbeatRequest()
	c.send(hb, 4, 3)
	c.recv(hb)
}

func TestSessionLifetime(t *testing.T) {
	for _, tc := range []struct {
		upstream int64
		max      time.Duration
		want     int64
	}{
		{0, 0, 0}, {10000, 0, 10000}, {0, 5 * time.Second, 5000},
		{10000, 5 * time.Second, 5000}, {3000, 5 * time.Second, 3000},
	} {
		if got := sessionLifetime(tc.upstream, tc.max); got != tc.want {
			t.Errorf("sessionLifetime(%d, %v) = %d, want %d", tc.upstream, tc.max, got, tc.want)
		}
	}
}

func TestSaslDone(t *testing.T) {
	ok := &kmsg.SASLAuthenticateResponse{}
	challenge := &kmsg.SASLAuthenticateResponse{SASLAuthBytes: []byte(`{"status":"invalid_token"}`)}
	withLifetime := &kmsg.SASLAuthenticateResponse{SASLAuthBytes: []byte("v=..."), SessionLifetimeMillis: 1}
	for _, tc := range []struct {
		mech   string
		rounds int
		resp   *kmsg.SASLAuthenticateResponse
		want   bool
	}{
		{"PLAIN", 1, ok, true},
		{"SCRAM-SHA-256", 1, challenge, false},
		{"SCRAM-SHA-512", 2, challenge, true},
		{"SCRAM-SHA-256", 1, withLifetime, true},
		{"OAUTHBEARER", 1, ok, true},
		{"OAUTHBEARER", 1, challenge, false},
	} {
		if got := saslDone(tc.mech, tc.rounds, tc.resp); got != tc.want {
			t.Errorf("saslDone(%s, %d, %q) = %v, want %v", tc.mech, tc.rounds, tc.resp.SASLAuthBytes, got, tc.want)
		}
	}
}

// TestReauthRenewsSession: the client is told the smaller lifetime; a
// re-authentication on the connection runs over a new upstream link that
// replaces the old one, starts a new authentication generation and renews
// the session; a second one within a second is refused as Kafka refuses it.
func TestReauthRenewsSession(t *testing.T) {
	cl := &saslCluster{lifetimeMs: 60000}
	addr, gens := reauthServer(t, cl, 30*time.Second)
	c := dial(t, addr)
	if _, a := c.login("PLAIN", "alice", "alice-pw"); a == nil || a.ErrorCode != 0 || a.SessionLifetimeMillis != 30000 {
		t.Fatalf("login: %+v, want success with the listener's 30000 ms lifetime", a)
	}
	c.heartbeat()
	if g := <-gens; g != 1 {
		t.Fatalf("generation %d after the first authentication, want 1", g)
	}
	if _, a := c.login("PLAIN", "alice", "alice-pw"); a == nil || a.ErrorCode != 0 || a.SessionLifetimeMillis != 30000 {
		t.Fatalf("re-authentication: %+v", a)
	}
	c.heartbeat()
	if g := <-gens; g != 2 {
		t.Fatalf("generation %d after re-authentication, want 2", g)
	}
	if _, closed, _ := cl.link(0).state(); !closed {
		t.Fatal("the first upstream link is still open after re-authentication")
	}
	if user, closed, _ := cl.link(1).state(); user != "alice" || closed {
		t.Fatalf("the re-authenticated link: user %q closed %v", user, closed)
	}
	md := kmsg.NewPtrMetadataRequest()
	c.send(md, 12, 4)
	c.recv(md)
	if _, _, keys := cl.link(1).state(); keys[len(keys)-1] != int16(kmsg.Metadata) {
		t.Fatalf("forwarded requests do not use the new link: %v", keys)
	}
	if hr, _ := c.login("PLAIN", "alice", "alice-pw"); hr.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("a second re-authentication within a second: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(hr.ErrorCode))
	}
	c.heartbeat() // the session stands
	if g := <-gens; g != 2 {
		t.Fatalf("generation %d, want 2", g)
	}
}

// TestExpiredSessionClosed: past the lifetime, a request other than
// SaslHandshake closes the connection; a SaslHandshake re-authenticates.
func TestExpiredSessionClosed(t *testing.T) {
	cl := &saslCluster{}
	addr, _ := reauthServer(t, cl, 100*time.Millisecond)
	c := dial(t, addr)
	if _, a := c.login("PLAIN", "alice", "alice-pw"); a == nil || a.SessionLifetimeMillis != 100 {
		t.Fatalf("login: %+v, want the listener's 100 ms when the cluster has none", a)
	}
	time.Sleep(150 * time.Millisecond)
	if _, a := c.login("PLAIN", "alice", "alice-pw"); a == nil || a.ErrorCode != 0 {
		t.Fatalf("re-authentication after expiry: %+v", a)
	}
	time.Sleep(150 * time.Millisecond)
	hb := kmsg.NewPtrHeartbeatRequest()
	c.send(hb, 4, 5)
	c.expectClosed()
	// ApiVersions too, as on a Kafka broker
	c = dial(t, addr)
	c.login("PLAIN", "alice", "alice-pw")
	time.Sleep(150 * time.Millisecond)
	c.send(kmsg.NewPtrApiVersionsRequest(), 3, 6)
	c.expectClosed()
}

// TestReauthPrincipalChangeRefused: another user on re-authentication is
// answered SASL_AUTHENTICATION_FAILED and the connection closed.
func TestReauthPrincipalChangeRefused(t *testing.T) {
	cl := &saslCluster{lifetimeMs: 60000}
	addr, _ := reauthServer(t, cl, 0)
	c := dial(t, addr)
	if _, a := c.login("PLAIN", "alice", "alice-pw"); a == nil || a.SessionLifetimeMillis != 60000 {
		t.Fatalf("login: %+v, want the cluster's lifetime", a)
	}
	_, a := c.login("PLAIN", "bob", "bob-pw")
	if a == nil || a.ErrorCode != kerr.SaslAuthenticationFailed.Code || a.ErrorMessage == nil || !strings.Contains(*a.ErrorMessage, "Cannot change principals") {
		t.Fatalf("re-authentication as another user: %+v", a)
	}
	c.expectClosed()
	if _, closed, _ := cl.link(1).state(); !closed {
		t.Fatal("the refused re-authentication's link is still open")
	}
}

// TestReauthRules: failures and requests out of place close the
// connection as on a Kafka broker.
func TestReauthRules(t *testing.T) {
	cl := &saslCluster{lifetimeMs: 60000}
	addr, _ := reauthServer(t, cl, 0)

	t.Run("wrong password", func(t *testing.T) {
		c := dial(t, addr)
		c.login("PLAIN", "alice", "alice-pw")
		if _, a := c.login("PLAIN", "alice", "nope"); a == nil || a.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("re-authentication with a wrong password: %+v", a)
		}
		c.expectClosed()
	})
	t.Run("another mechanism", func(t *testing.T) {
		c := dial(t, addr)
		c.login("PLAIN", "alice", "alice-pw")
		if c.handshake("SCRAM-SHA-256").ErrorCode != 0 {
			t.Fatal("the handshake is answered, as Kafka answers it")
		}
		sa := kmsg.NewPtrSASLAuthenticateRequest()
		c.send(sa, 2, 2)
		c.expectClosed()
	})
	t.Run("other request during re-authentication", func(t *testing.T) {
		c := dial(t, addr)
		c.login("PLAIN", "alice", "alice-pw")
		c.handshake("PLAIN")
		c.send(kmsg.NewPtrHeartbeatRequest(), 4, 2)
		c.expectClosed()
	})
	t.Run("failed first authentication", func(t *testing.T) {
		c := dial(t, addr)
		if _, a := c.login("PLAIN", "alice", "nope"); a == nil || a.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("wrong password: %+v", a)
		}
		c.expectClosed()
	})
	t.Run("no lifetime, no re-authentication", func(t *testing.T) {
		addr, _ := reauthServer(t, &saslCluster{}, 0)
		c := dial(t, addr)
		if _, a := c.login("PLAIN", "alice", "alice-pw"); a == nil || a.SessionLifetimeMillis != 0 {
			t.Fatalf("login: %+v", a)
		}
		if hr, _ := c.login("PLAIN", "alice", "alice-pw"); hr.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("handshake after authentication without a lifetime: %v", kerr.ErrorForCode(hr.ErrorCode))
		}
		sa := kmsg.NewPtrSASLAuthenticateRequest()
		c.send(sa, 2, 3)
		if _, r := c.recv(sa); r.(*kmsg.SASLAuthenticateResponse).ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatal("SaslAuthenticate after authentication is not ILLEGAL_SASL_STATE")
		}
		c.heartbeat() // the connection stays usable
	})
}
