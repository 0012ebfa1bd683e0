package interop

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The applications' principal: User:app may do everything on its own
// topics and transactional ids (prefix "app-"), and on the two groups.
const appUser = "app"

var appGroupACLs = []acl{
	{"User:app", rGroup, "app-streams", literal, kmsg.ACLOperationAll, allow},
	{"User:app", rGroup, "app-kgo", literal, kmsg.ACLOperationAll, allow},
}

var appACLs = append([]acl{
	{"User:app", rTopic, "app-", prefixed, kmsg.ACLOperationAll, allow},
	{"User:app", rTxn, "app-", prefixed, kmsg.ACLOperationAll, allow},
}, appGroupACLs...)

// appRecords is how many records each round writes to the input topic.
const appRecords = 50

// scramProps are the client properties of a Java client logging in as
// user with SCRAM-SHA-256 over SASL_PLAINTEXT.
func scramProps(user string) []string {
	return []string{
		"security.protocol=SASL_PLAINTEXT",
		"sasl.mechanism=SCRAM-SHA-256",
		fmt.Sprintf(`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, password(user)),
	}
}

// testAuthorizedApps: a Kafka Streams 4.4 application (streams protocol,
// exactly-once) and a kgo consumer, both logging in with SCRAM through
// coordhost, consume and commit; with their group ACLs removed both fail
// with GROUP_AUTHORIZATION_FAILED and no offset moves on the broker.
func testAuthorizedApps(t *testing.T, dir, secure, chAddr string, admin *kgo.Client) {
	start := time.Now()
	createACLs(t, admin, appACLs)
	tp := topicsOf("app-streams")
	createTopics(t, admin, 2, tp.in, tp.out)
	produceN(t, admin, tp.in, 0, appRecords)

	app := appConfig{name: "app-authz", bootstrap: chAddr, appID: "app-streams", protocol: "streams", topics: tp,
		appServer: fmt.Sprintf("127.0.0.1:%d", freePort(t)), stateDir: filepath.Join(t.TempDir(), "app-state"),
		leave: true, extra: scramProps(appUser)}
	p := startApp(t, dir, app)
	waitCommitted(t, admin, "app-streams", tp.in, appRecords, p)
	if err := p.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	consumeKgo(t, chAddr, "app-kgo", tp.in, appRecords)
	waitCommitted(t, admin, "app-kgo", tp.in, appRecords, nil)
	t.Logf("allowed: Streams app and kgo consumer committed %d records through coordhost (%v)", appRecords, time.Since(start).Round(time.Second))

	for _, a := range appGroupACLs {
		deleteACL(t, admin, a)
	}
	waitRefused(t, secure, "app-streams")
	waitRefused(t, secure, "app-kgo")
	produceN(t, admin, tp.in, appRecords, appRecords)

	app.name = "app-authz-refused"
	p = startApp(t, dir, app)
	line, _, err := p.waitLine("GroupAuthorizationException", 0, 60*time.Second)
	if err != nil {
		t.Fatalf("Streams app without its group ACL: %v\n%s", err, p.tail(40))
	}
	if !strings.Contains(line, "app-streams") {
		t.Errorf("the Streams app's authorization error does not name its group: %s", line)
	}
	if _, _, err := p.waitLine("STATE ERROR", 0, 30*time.Second); err != nil {
		t.Errorf("the refused Streams app did not reach ERROR: %v", err)
	}
	p.kill()

	cl := scramClient(t, chAddr, kgo.ConsumerGroup("app-kgo"), kgo.ConsumeTopics(tp.in), kgo.DisableAutoCommit())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var polled error
	for polled == nil && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, fe := range fs.Errors() {
			polled = fe.Err
		}
		if n := fs.NumRecords(); n > 0 {
			t.Fatalf("the kgo consumer without its group ACL read %d records", n)
		}
	}
	if !errors.Is(polled, kerr.GroupAuthorizationFailed) {
		t.Errorf("kgo consumer without its group ACL: %v, want GROUP_AUTHORIZATION_FAILED", polled)
	}
	commit := map[string]map[int32]kgo.EpochOffset{tp.in: {0: {Epoch: -1, Offset: 2 * appRecords}}}
	var commitErr error
	cl.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		if err == nil {
			commitErr = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		}
	})
	if !errors.Is(commitErr, kerr.GroupAuthorizationFailed) {
		t.Errorf("kgo commit without the group ACL: %v, want GROUP_AUTHORIZATION_FAILED", commitErr)
	}
	cl.Close()
	for _, g := range []string{"app-streams", "app-kgo"} {
		if got := committedSum(t, admin, g, tp.in); got != appRecords {
			t.Errorf("group %s: the broker has %d records committed after the refusals, want %d", g, got, appRecords)
		}
	}
	t.Logf("applications through coordhost took %v", time.Since(start).Round(time.Second))
}

// scramClient is a kgo client logging in to addr as appUser.
func scramClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	auth := scram.Auth{User: appUser, Pass: password(appUser)}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(auth.AsSha256Mechanism()),
		kgo.RetryTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// consumeKgo reads n records of topic in group through addr and commits them.
func consumeKgo(t *testing.T, addr, group, topic string, n int) {
	t.Helper()
	cl := scramClient(t, addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("kgo consumer read %d of %d records: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("kgo consumer: %v", err) })
		got += fs.NumRecords()
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("kgo commit: %v", err)
		}
	}
}

func createTopics(t *testing.T, admin *kgo.Client, partitions int32, names ...string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, n := range names {
		req.Topics = append(req.Topics, kmsg.CreateTopicsRequestTopic{Topic: n, NumPartitions: partitions, ReplicationFactor: 1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range resp.Topics {
		if tr.ErrorCode != 0 {
			t.Fatalf("create topic %s: %v", tr.Topic, kerr.ErrorForCode(tr.ErrorCode))
		}
	}
}

// produceN writes records from..from+n-1 ("n,producedMs", App.java's input) to topic.
func produceN(t *testing.T, admin *kgo.Client, topic string, from, n int) {
	t.Helper()
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint("k", i%7)), Value: []byte(fmt.Sprintf("%d,%d", i, time.Now().UnixMilli()))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// committedSum is the sum of group's committed offsets on topic's partitions, read from the broker.
func committedSum(t *testing.T, admin *kgo.Client, group, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0, 1}}}
	req.RequireStable = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.Offset > 0 {
				sum += p.Offset
			}
		}
	}
	return sum
}

// waitCommitted waits (bounded) until the broker holds n committed records of group on topic.
func waitCommitted(t *testing.T, admin *kgo.Client, group, topic string, n int64, p *proc) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := committedSum(t, admin, group, topic)
		if got == n {
			return
		}
		if time.Now().After(deadline) || (p != nil && p.exited()) {
			tail := ""
			if p != nil {
				tail = p.tail(60)
			}
			t.Fatalf("group %s: %d of %d records committed on the broker\n%s", group, got, n, tail)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitRefused waits until the broker refuses appUser's READ on group (ACL
// changes propagate through the metadata log).
func waitRefused(t *testing.T, secure, group string) {
	t.Helper()
	c := dialKafka(t, secure)
	if err := c.login(appUser, "SCRAM-SHA-256"); err != nil {
		t.Fatal(err)
	}
	hb := groupRequests(group, 0)[3]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := c.do(hb)
		if err != nil {
			t.Fatal(err)
		}
		if resp.(*kmsg.HeartbeatResponse).ErrorCode == kerr.GroupAuthorizationFailed.Code {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker still allows READ on %s 10s after the ACL was deleted", group)
		}
	}
}
