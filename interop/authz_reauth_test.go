package interop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// KIP-368 re-authentication: the secured broker gives OAUTHBEARER
// sessions at most brokerReauth (its connections.max.reauth.ms for the
// mechanism); a second coordhost in front of it caps them at
// coordhostReauth (kafka.connections.max.reauth.ms). The check runs beside
// the rest of TestInteropAuthorization for reauthRunFor, so it adds only
// that coordhost's start to the test.
const (
	brokerReauth    = 5 * time.Second
	coordhostReauth = 3 * time.Second
	reauthRunFor    = 3*brokerReauth + 2*time.Second // over 3 broker sessions
	reauthUser      = "prefixed"                     // DESCRIBE but not READ on the group below
	reauthGroup     = "greauth"
)

// reauthRun is the background part: a kgo client (OAUTHBEARER) straight to
// the broker and one through coordhost, each asking the same group
// requests every 250 ms over its long-lived connections, and raw
// connections left to expire.
type reauthRun struct {
	start   time.Time
	ch      *coordhost
	clients []*reauthClient
	stop    chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex
	problems []string
	rounds   int
	warmup   error // of the last round before both clients answered
	// expired checks the raw connections left to expire.
	expired func(t *testing.T)
}

type reauthClient struct {
	name, addr string
	cl         *kgo.Client
	reauths    atomic.Int64 // kgo's "reauthenticating" log lines
	// connection events once both clients got their first answers
	counting     atomic.Bool
	mu           sync.Mutex
	disconnected []string // connections opened or closed
}

func (r *reauthRun) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.problems) < 20 {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

// reauthLogger counts kgo's re-authentications.
type reauthLogger struct{ c *reauthClient }

func (l reauthLogger) Level() kgo.LogLevel { return kgo.LogLevelDebug }
func (l reauthLogger) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if msg == "sasl expiry limit reached, reauthenticating" {
		l.c.reauths.Add(1)
	}
}

// connHook records connections closed or opened after the warm-up.
type connHook struct {
	r *reauthRun
	c *reauthClient
}

func (h connHook) event(what string, m kgo.BrokerMetadata, nc net.Conn) {
	if !h.c.counting.Load() {
		return
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.c.disconnected = append(h.c.disconnected, fmt.Sprintf("%s node %d (%v) at %v", what, m.NodeID, nc.LocalAddr(), time.Since(h.r.start).Round(time.Second)))
}

func (h connHook) OnBrokerDisconnect(m kgo.BrokerMetadata, nc net.Conn) { h.event("closed", m, nc) }
func (h connHook) OnBrokerConnect(m kgo.BrokerMetadata, _ time.Duration, nc net.Conn, err error) {
	if err == nil {
		h.event("opened", m, nc)
	}
}

func startReauthRun(t *testing.T, dir, secure string) *reauthRun {
	t.Helper()
	ch := startCoordhost(t, dir, secure, "--dataplane.sasl.mechanism=SCRAM-SHA-256",
		"--dataplane.sasl.username=admin", "--dataplane.sasl.password="+adminPassword, "--dataplane.authorization.cache.ttl=1s",
		fmt.Sprintf("--kafka.connections.max.reauth.ms=%d", coordhostReauth.Milliseconds()))
	r := &reauthRun{start: time.Now(), ch: ch, stop: make(chan struct{})}
	for _, c := range []*reauthClient{{name: "broker", addr: secure}, {name: "coordhost", addr: ch.addr}} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.SASL(oauth.Auth{Token: unsecuredJWT(reauthUser)}.AsMechanism()),
			kgo.WithLogger(reauthLogger{c}), kgo.WithHooks(connHook{r, c}), kgo.ConnIdleTimeout(10*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		c.cl = cl
		r.clients = append(r.clients, c)
	}
	r.wg.Add(1)
	go r.loop()
	r.expired = r.rawChecks(t)
	return r
}

// loop asks both clients the same requests until stopped; their verdicts
// must match every round.
func (r *reauthRun) loop() {
	defer r.wg.Done()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		var got []string
		var errs []error
		for _, c := range r.clients {
			v, err := r.ask(c)
			got, errs = append(got, v), append(errs, err)
		}
		if !r.clients[0].counting.Load() { // warm-up: until both answer (the broker's offsets topic is being created)
			err := errors.Join(errs...)
			if err == nil {
				for _, c := range r.clients {
					c.counting.Store(true)
				}
			}
			r.mu.Lock()
			r.warmup = err
			r.mu.Unlock()
			continue
		}
		for i, err := range errs {
			if err != nil {
				r.problem("%s at %v: %v", r.clients[i].name, time.Since(r.start).Round(time.Second), err)
			}
		}
		if got[0] != got[1] {
			r.problem("at %v: broker %s, coordhost %s", time.Since(r.start).Round(time.Second), got[0], got[1])
		}
		r.mu.Lock()
		r.rounds++
		r.mu.Unlock()
	}
}

// ask sends a DescribeGroups (allowed) and a Heartbeat (READ refused) and
// returns their verdicts.
func (r *reauthRun) ask(c *reauthClient) (string, error) {
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.SetVersion(5)
	dg.Groups, dg.IncludeAuthorizedOperations = []string{reauthGroup}, true
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(4)
	hb.Group, hb.Generation, hb.MemberID = reauthGroup, 1, "nobody"
	var out []string
	for _, req := range []kmsg.Request{dg, hb} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := c.cl.Request(ctx, req)
		cancel()
		if err == nil {
			err = kerr.ErrorForCode(codeOf(resp))
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", kmsg.NameForKey(req.Key()), err)
		}
		out = append(out, authCodes(resp))
	}
	return strings.Join(out, " / "), nil
}

// check stops the run once reauthRunFor has passed and asserts that both
// clients kept their connections through at least three re-
// authentications each and got the same verdicts throughout; then the
// rules a raw connection meets, on the broker and through coordhost.
func (r *reauthRun) check(t *testing.T) {
	if d := reauthRunFor - time.Since(r.start); d > 0 {
		t.Logf("waiting %v more for the re-authentication run", d.Round(time.Second))
		time.Sleep(d)
	}
	close(r.stop)
	r.wg.Wait()
	for _, c := range r.clients {
		c.counting.Store(false)
		c.cl.Close()
	}
	for _, p := range r.problems {
		t.Error(p)
	}
	if r.rounds < int(reauthRunFor/time.Second) {
		t.Errorf("only %d rounds of requests in %v (warm-up: %v)", r.rounds, reauthRunFor, r.warmup)
	}
	for _, c := range r.clients {
		// connection events recorded before Close: none after the warm-up
		c.mu.Lock()
		events := c.disconnected
		c.mu.Unlock()
		if n := c.reauths.Load(); n < 3 || len(events) != 0 {
			t.Errorf("%s: %d re-authentications (want at least 3), connection events after the warm-up (want none): %q", c.name, n, events)
		} else {
			t.Logf("%s: %d re-authentications in %d rounds, no connection lost", c.name, n, r.rounds)
		}
	}
	r.expired(t)
}

// rawChecks asserts at once the lifetimes each side tells, the principal
// rule and the once-a-second rule, and starts connections left to expire;
// the function it returns checks they were closed.
func (r *reauthRun) rawChecks(t *testing.T) func(t *testing.T) {
	t.Helper()
	sides := map[string]string{"broker": r.clients[0].addr, "coordhost": r.ch.addr}
	hb := groupRequests(reauthGroup, 0)[3]
	verdict := func(c *rawConn) string {
		resp, err := c.do(hb)
		if err != nil {
			return "closed"
		}
		return authCodes(resp)
	}
	type result struct{ again, within, other, expired string }
	results := map[string]*result{}
	var wg sync.WaitGroup
	for name, addr := range sides {
		res := &result{}
		results[name] = res
		c := dialKafka(t, addr)
		if err := c.login(reauthUser, "OAUTHBEARER"); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := brokerReauth
		if name == "coordhost" {
			want = coordhostReauth
		}
		if c.lifetime > want || c.lifetime < want-time.Second {
			t.Errorf("%s: session lifetime %v, want %v (less the token's remaining hour, the smaller)", name, c.lifetime, want)
		}
		// the same principal again, then once more within a second
		res.again = fmt.Sprint(c.login(reauthUser, "OAUTHBEARER"), " ", verdict(c))
		res.within = fmt.Sprint(c.login(reauthUser, "OAUTHBEARER"), " ", verdict(c))
		// another principal
		o := dialKafka(t, addr)
		if err := o.login(reauthUser, "OAUTHBEARER"); err != nil {
			t.Fatal(err)
		}
		res.other = fmt.Sprint(o.login("noacl", "OAUTHBEARER"), " ", verdict(o))
		// a session left to expire: its next request closes it
		e := dialKafka(t, addr)
		if err := e.login(reauthUser, "OAUTHBEARER"); err != nil {
			t.Fatal(err)
		}
		lifetime := e.lifetime
		wg.Add(1)
		go func() {
			defer wg.Done()
			before := verdict(e)
			time.Sleep(lifetime + 500*time.Millisecond)
			res.expired = before + " then " + verdict(e)
		}()
	}
	b, c := results["broker"], results["coordhost"]
	for _, row := range []struct{ what, broker, coordhost string }{
		{"re-authentication as the same principal", b.again, c.again},
		{"re-authentication within a second", b.within, c.within},
		{"re-authentication as another principal", b.other, c.other},
	} {
		t.Logf("%s: broker %q, coordhost %q", row.what, row.broker, row.coordhost)
		if row.broker != row.coordhost {
			t.Errorf("%s: broker %q, coordhost %q", row.what, row.broker, row.coordhost)
		}
	}
	if !strings.Contains(b.other, "Cannot change principals") || !strings.HasSuffix(b.other, "closed") {
		t.Errorf("the broker's answer to a changed principal: %q", b.other)
	}
	return func(t *testing.T) {
		wg.Wait()
		t.Logf("expired session: broker %q, coordhost %q", b.expired, c.expired)
		if b.expired != c.expired || !strings.HasSuffix(b.expired, "then closed") {
			t.Errorf("expired session: broker %q, coordhost %q, want the same and closed", b.expired, c.expired)
		}
	}
}

// codeOf is the error of a response that is not an authorization verdict:
// anything but success, GROUP_AUTHORIZATION_FAILED and GROUP_ID_NOT_FOUND
// (kgo sends DescribeGroups v6, which answers it for the unknown group);
// the broker answers COORDINATOR_NOT_AVAILABLE until its offsets topic
// exists.
func codeOf(resp kmsg.Response) int16 {
	var codes []int16
	switch r := resp.(type) {
	case *kmsg.DescribeGroupsResponse:
		for _, g := range r.Groups {
			codes = append(codes, g.ErrorCode)
		}
	case *kmsg.HeartbeatResponse:
		codes = append(codes, r.ErrorCode)
	}
	for _, c := range codes {
		if c != 0 && c != kerr.GroupAuthorizationFailed.Code && c != kerr.GroupIDNotFound.Code {
			return c
		}
	}
	return 0
}
