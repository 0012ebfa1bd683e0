package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-368 with the Java client: a KafkaConsumer 4.4 (interop/consumer-app,
// group.protocol=consumer) logged in with the client library's own
// unsecured OAUTHBEARER login as User:javaoauth consumes and commits
// continuously, one straight to the broker and one through coordhost,
// beside the rest of TestInteropAuthorization. The broker gives
// OAUTHBEARER sessions brokerReauth, so over javaRunFor from their first
// commits each client re-authenticates its connections several times.
const (
	javaOAuthUser = "javaoauth"
	javaTopic     = "tjava"
	javaRunFor    = 27 * time.Second
	javaWarmup    = 90 * time.Second // JVM start and first commit, on a loaded machine
)

var javaOAuthACLs = []acl{
	{"User:" + javaOAuthUser, rGroup, "gjava", prefixed, kmsg.ACLOperationRead, allow},
	{"User:" + javaOAuthUser, rTopic, javaTopic, literal, kmsg.ACLOperationRead, allow},
}

// javaMetrics is a consumer-app metrics line.
type javaMetrics struct {
	Reauthentications, FailedReauthentications, Connections int64
}

type javaSide struct {
	name string
	java *proc
	// once both consumers committed for the first time
	warm        javaMetrics
	warmCommits int
	warmErr     error
}

type javaReauthRun struct {
	warmAt   time.Time
	sides    []*javaSide
	stop     chan struct{}
	producer sync.WaitGroup
	warmup   sync.WaitGroup
	produce  error // the producer's first error (read once it stopped)
	halted   sync.Once
}

// halt stops the producer and the warm-up sample (once).
func (r *javaReauthRun) halt() { r.halted.Do(func() { close(r.stop) }) }

// startJavaReauthRun starts the two consumers and a producer feeding
// their topic (as the admin, on the plain listener) every 200 ms.
func startJavaReauthRun(t *testing.T, dir, secure, chAddr string, admin *kgo.Client) *javaReauthRun {
	t.Helper()
	createACLs(t, admin, javaOAuthACLs)
	createTopics(t, admin, 1, javaTopic)
	props := filepath.Join(t.TempDir(), "oauthbearer.properties")
	if err := os.WriteFile(props, []byte(strings.Join([]string{
		"security.protocol=SASL_PLAINTEXT",
		"sasl.mechanism=OAUTHBEARER",
		`sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="` + javaOAuthUser + `";`,
	}, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &javaReauthRun{stop: make(chan struct{})}
	t.Cleanup(func() { r.halt(); r.producer.Wait(); r.warmup.Wait() })
	for name, addr := range map[string]string{"broker": secure, "coordhost": chAddr} {
		s := &javaSide{name: name, java: startJavaFrom(t, cgAppDir, "consumer-app-oauth-"+name, dir, cgAppMain, addr, props)}
		fmt.Fprintf(s.java.in, "start c gjava-%s topics:%s\n", name, javaTopic)
		r.sides = append(r.sides, s)
	}
	r.producer.Add(1)
	go func() {
		defer r.producer.Done()
		for i := 0; ; i++ {
			select {
			case <-r.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := admin.ProduceSync(ctx, &kgo.Record{Topic: javaTopic, Value: fmt.Appendf(nil, "%d", i)}).FirstErr()
			cancel()
			if err != nil && r.produce == nil {
				r.produce = err
			}
		}
	}()
	r.warmup.Add(1)
	go func() {
		defer r.warmup.Done()
		for _, s := range r.sides {
			if _, _, s.warmErr = s.java.waitLine(`"event":"commit"`, 0, javaWarmup); s.warmErr != nil {
				return
			}
		}
		r.warmAt = time.Now()
		for _, s := range r.sides {
			s.warmCommits = len(s.java.grep(`"event":"commit"`))
			s.warm, s.warmErr = s.metrics()
		}
	}()
	return r
}

// metrics asks the consumer for its connection metrics.
func (s *javaSide) metrics() (javaMetrics, error) {
	from := s.java.lineCount()
	fmt.Fprintln(s.java.in, "metrics c")
	line, _, err := s.java.waitLine(`"event":"metrics"`, from, 20*time.Second)
	var m javaMetrics
	if err == nil {
		err = json.Unmarshal([]byte(line), &m)
	}
	return m, err
}

// check runs until javaRunFor has passed since both consumers first
// committed, then compares: each consumer, straight to the broker and
// through coordhost, reported no error and no failed commit, kept
// committing, re-authenticated at least three times in that time without
// a failed re-authentication, and opened no connection (a session that
// expired instead would have been closed and reopened).
func (r *javaReauthRun) check(t *testing.T) {
	r.warmup.Wait()
	if wait := time.Until(r.warmAt.Add(javaRunFor)); wait > 0 && !r.warmAt.IsZero() {
		time.Sleep(wait)
	}
	defer func() {
		for _, s := range r.sides {
			fmt.Fprintln(s.java.in, "exit")
			_ = s.java.stop(30 * time.Second)
		}
	}()
	for _, s := range r.sides {
		end, err := s.metrics()
		if err != nil || s.warmErr != nil {
			t.Fatalf("%s: metrics: %v, after the first commits %v", s.name, err, s.warmErr)
		}
		commits := len(s.java.grep(`"event":"commit"`))
		t.Logf("%s, %v after the first commits: %d commits (%d then), re-authentications %d (%d then), failed %d, connections opened %d (%d then)",
			s.name, time.Since(r.warmAt).Round(time.Second), commits, s.warmCommits, end.Reauthentications, s.warm.Reauthentications,
			end.FailedReauthentications, end.Connections, s.warm.Connections)
		if bad := s.java.grep(`"event":"error"`, `"error":"`); len(bad) > 0 {
			t.Errorf("%s: the consumer reported errors: %q", s.name, bad)
		}
		switch {
		case commits <= s.warmCommits:
			t.Errorf("%s: %d commits after the first ones, %d at the end: not committing throughout", s.name, s.warmCommits, commits)
		case end.FailedReauthentications != 0:
			t.Errorf("%s: %d failed re-authentications", s.name, end.FailedReauthentications)
		case end.Reauthentications-s.warm.Reauthentications < 3:
			t.Errorf("%s: %d re-authentications in %v, want at least 3 (sessions last %v)", s.name, end.Reauthentications-s.warm.Reauthentications, javaRunFor, brokerReauth)
		case end.Connections != s.warm.Connections:
			t.Errorf("%s: %d connections opened after the first commits: sessions were replaced, not re-authenticated", s.name, end.Connections-s.warm.Connections)
		}
	}
	r.halt()
	r.producer.Wait()
	if r.produce != nil {
		t.Errorf("producing to %s: %v", javaTopic, r.produce)
	}
}
