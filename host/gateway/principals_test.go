package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/coordhost/coordhost/host/authz"
)

// openSecured opens an embedded data plane with users app (READ on group
// g and topic t, DELETE on group gd) and noacl (no ACL), and creates t.
func openSecured(t *testing.T) *DataPlane {
	t.Helper()
	d, err := Open(ctxT(t), Config{Embedded: true, Partitions: 1,
		Advertise: func(int32) (string, int32, error) { return "127.0.0.1", 1, nil },
		Security: &Security{
			Users: []User{{"SCRAM-SHA-256", "app", "app-pw"}, {"SCRAM-SHA-256", "noacl", "noacl-pw"}},
			ACLs: []authz.ACL{
				{Principal: "User:app", Host: "*", ResourceType: kmsg.ACLResourceTypeGroup, Pattern: kmsg.ACLResourcePatternTypeLiteral, Name: "g", Operation: kmsg.ACLOperationRead, Allow: true},
				{Principal: "User:app", Host: "*", ResourceType: kmsg.ACLResourceTypeTopic, Pattern: kmsg.ACLResourcePatternTypeLiteral, Name: "t", Operation: kmsg.ACLOperationRead, Allow: true},
				{Principal: "User:app", Host: "*", ResourceType: kmsg.ACLResourceTypeGroup, Pattern: kmsg.ACLResourcePatternTypeLiteral, Name: "gd", Operation: kmsg.ACLOperationDelete, Allow: true},
			},
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	if _, err := d.CreateTopics(ctxT(t), []TopicSpec{{Name: "t", Partitions: 1, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	return d
}

func commitReq(offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group = "g"
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// storedOffset reads g's offset of t-0 as coordhost (-1: none).
func storedOffset(t *testing.T, d *DataPlane) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(8)
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "g"
	req.Groups = append(req.Groups, g)
	resp, err := d.FetchOffsets(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range resp.Groups {
		for _, rt := range rg.Topics {
			for _, rp := range rt.Partitions {
				if rt.Topic == "t" && rp.Partition == 0 {
					return rp.Offset
				}
			}
		}
	}
	return -1
}

// passwords stands in for delegation tokens: each principal logs in with
// its own SCRAM password.
var passwords = map[string][2]string{"User:app": {"app", "app-pw"}, "User:noacl": {"noacl", "noacl-pw"}}

// loginAs logs principal in; User:stale's login is refused as Kafka
// refuses a token it no longer knows (SASL_AUTHENTICATION_FAILED; kfake
// closes the connection instead).
func loginAs(principal string) sasl.Mechanism {
	if principal == "User:stale" {
		return refusedLogin{}
	}
	up := passwords[principal]
	return scram.Auth{User: up[0], Pass: up[1]}.AsSha256Mechanism()
}

type refusedLogin struct{}

func (refusedLogin) Name() string { return "SCRAM-SHA-256" }
func (refusedLogin) Authenticate(context.Context, string) (sasl.Session, []byte, error) {
	return nil, nil, fmt.Errorf("token refused: %w", kerr.SaslAuthenticationFailed)
}

// TestPrincipalClientsWriteAsThePrincipal: offsets written through the
// pool are authorized by the cluster for the principal, not for
// coordhost's super user: app's commit is written, noacl's is refused
// per partition and not written, and a login the cluster refuses is
// ErrLoginRefused (nothing sent) after the retries, with the principal
// reported so its token is dropped.
func TestPrincipalClientsWriteAsThePrincipal(t *testing.T) {
	d := openSecured(t)
	var refused atomic.Value
	p := d.PrincipalClients(PrincipalOpts{Login: loginAs, Retry: 300 * time.Millisecond, LoginRefused: func(pr string) { refused.Store(pr) }})
	t.Cleanup(p.Close)

	w, err := p.For("User:noacl")
	if err != nil {
		t.Fatal(err)
	}
	// the cluster refuses to find g's coordinator for noacl: not sent
	if _, err := w.CommitOffsets(ctxT(t), commitReq(7)); !errors.Is(err, ErrNotSent) || !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("noacl's commit answered %v, want ErrNotSent with GROUP_AUTHORIZATION_FAILED", err)
	}
	if got := storedOffset(t, d); got != -1 {
		t.Fatalf("noacl's refused commit stored offset %d", got)
	}

	w, err = p.For("User:app")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := w.CommitOffsets(ctxT(t), commitReq(42))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("app's commit answered %v", kerr.ErrorForCode(code))
	}
	if got := storedOffset(t, d); got != 42 {
		t.Fatalf("app's commit stored %d, want 42", got)
	}

	w, err = p.For("User:stale")
	if err != nil {
		t.Fatal(err)
	}
	if _, err = w.CommitOffsets(ctxT(t), commitReq(99)); !errors.Is(err, ErrLoginRefused) || !errors.Is(err, ErrNotSent) {
		t.Fatalf("a refused login answered %v, want ErrLoginRefused", err)
	}
	if got, _ := refused.Load().(string); got != "User:stale" {
		t.Fatalf("refused login reported for %q", got)
	}
	if got := storedOffset(t, d); got != 42 {
		t.Fatalf("offset %d after a refused login, want 42", got)
	}
	if _, err := p.For(""); err == nil {
		t.Fatal("a connection without a principal got a writer")
	}
}

// TestPrincipalClientsBounded: at most Max clients stay open, the least
// recently used closed first, and clients idle for Idle are closed.
func TestPrincipalClientsBounded(t *testing.T) {
	d := openEmbedded(t)
	now := time.Unix(1000, 0)
	p := d.PrincipalClients(PrincipalOpts{Login: loginAs, Max: 2, Idle: time.Minute, Now: func() time.Time { return now }})
	t.Cleanup(p.Close)
	for _, pr := range []string{"User:a", "User:b", "User:a", "User:c"} {
		now = now.Add(time.Second)
		if _, err := p.For(pr); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.open(); len(got) != 2 || !got["User:a"] || !got["User:c"] {
		t.Fatalf("open clients %v, want User:a and User:c (User:b least recently used)", got)
	}
	now = now.Add(59 * time.Second)
	if _, err := p.For("User:c"); err != nil {
		t.Fatal(err)
	}
	if got := p.open(); len(got) != 1 || !got["User:c"] {
		t.Fatalf("open clients %v after User:a idled a minute, want User:c", got)
	}
}

// TestPrincipalClientsEvictedWhileSending: a client evicted while a write
// is in flight on it stays open for that write and is closed after it.
func TestPrincipalClientsEvictedWhileSending(t *testing.T) {
	d := openSecured(t)
	p := d.PrincipalClients(PrincipalOpts{Login: loginAs, Max: 1})
	t.Cleanup(p.Close)
	w, err := p.For("User:app")
	if err != nil {
		t.Fatal(err)
	}
	var evicted *kgo.Client
	p.send(w.c, func(cl *kgo.Client) {
		evicted = cl
		if _, err := p.For("User:noacl"); err != nil { // evicts app's client (Max 1)
			t.Fatal(err)
		}
		if got := p.open(); got["User:app"] {
			t.Fatal("app's client still in the pool")
		}
		if _, err := d.commitOffsets(ctxT(t), cl, commitReq(3)); err != nil {
			t.Fatalf("the write in flight on an evicted client: %v", err)
		}
	})
	if _, err := d.commitOffsets(ctxT(t), evicted, commitReq(4)); !errors.Is(err, kgo.ErrClientClosed) {
		t.Fatalf("the evicted client after its write: %v, want closed", err)
	}
	if got := storedOffset(t, d); got != 3 {
		t.Fatalf("stored %d, want 3", got)
	}
}

// TestPrincipalClientsDeleteGroupsAsThePrincipal: whether a group may be
// deleted, and its deletion, are the cluster's decisions for the
// principal: app may delete gd but not g (READ only), so the question
// refuses g and the delete of g, sent anyway, deletes nothing; noacl's
// question is not even sent (the coordinator lookup is refused), nor is
// a refused login's.
func TestPrincipalClientsDeleteGroupsAsThePrincipal(t *testing.T) {
	d := openSecured(t)
	p := d.PrincipalClients(PrincipalOpts{Login: loginAs, Retry: 300 * time.Millisecond})
	t.Cleanup(p.Close)
	app, err := p.For("User:app")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.CommitOffsets(ctxT(t), commitReq(42)); err != nil {
		t.Fatal(err)
	}
	may := app.MayDeleteGroups(ctxT(t), []string{"g", "gd"})
	if e := may["g"]; !errors.Is(e, kerr.GroupAuthorizationFailed) || !errors.Is(e, ErrNotSent) || len(may) != 1 {
		t.Fatalf("may app delete g, gd: %v, want g refused with GROUP_AUTHORIZATION_FAILED, gd allowed", may)
	}
	res, err := app.DeleteGroupOffsets(ctxT(t), []string{"g", "gd"})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res["g"], kerr.GroupAuthorizationFailed) || res["gd"] != nil {
		t.Fatalf("app's delete of g, gd: %v, want g GROUP_AUTHORIZATION_FAILED, gd deleted (not found)", res)
	}
	if got := storedOffset(t, d); got != 42 {
		t.Fatalf("g's offset %d after app's refused delete, want 42", got)
	}
	for principal, want := range map[string]error{"User:noacl": kerr.GroupAuthorizationFailed, "User:stale": ErrLoginRefused} {
		w, err := p.For(principal)
		if err != nil {
			t.Fatal(err)
		}
		if e := w.MayDeleteGroups(ctxT(t), []string{"g"})["g"]; !errors.Is(e, want) || !errors.Is(e, ErrNotSent) {
			t.Fatalf("may %s delete g: %v, want ErrNotSent with %v", principal, e, want)
		}
		if res, err := w.DeleteGroupOffsets(ctxT(t), []string{"g"}); err != nil || !errors.Is(res["g"], ErrNotSent) {
			t.Fatalf("%s's delete of g: %v %v, want ErrNotSent", principal, res, err)
		}
	}
	if got := storedOffset(t, d); got != 42 {
		t.Fatalf("g's offset %d after refused deletes, want 42", got)
	}
}
