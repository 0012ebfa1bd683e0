package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
)

// rawConsumer is a KIP-848 consumer speaking ConsumerGroupHeartbeat
// itself, so it can name any ServerAssignor (kgo only names uniform or
// range). It acknowledges every assignment at once.
type rawConsumer struct {
	cl                    *kgo.Client
	group, id, topic, asg string
	epoch                 int32
	owned                 []kmsg.ConsumerGroupHeartbeatRequestTopic
}

// heartbeat sends one full heartbeat; a Kafka error comes back as error.
func (m *rawConsumer) heartbeat(ctx context.Context) error {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = []string{m.topic}
	req.ServerAssignor = &m.asg
	req.Topics = m.owned
	if m.epoch == 0 {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		return fmt.Errorf("%w: %s", err, msg)
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, t := range resp.Assignment.Topics {
			m.owned = append(m.owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
		}
	}
	return nil
}

func (m *rawConsumer) partitions() int {
	n := 0
	for _, t := range m.owned {
		n += len(t.Partitions)
	}
	return n
}

// settledRaw heartbeats every member and checks the group is stable with
// the given partition counts per member, in order.
func settledRaw(ctx context.Context, admin *kgo.Client, group, assignor string, want []int, ms ...*rawConsumer) func() error {
	return func() error {
		for _, m := range ms {
			if err := m.heartbeat(ctx); err != nil {
				return err
			}
		}
		g, err := describeConsumer(ctx, admin, group)
		if err != nil {
			return err
		}
		if g.State != "Stable" || g.Epoch != g.AssignmentEpoch || len(g.Members) != len(ms) || g.AssignorName != assignor {
			return fmt.Errorf("state %s epoch %d/%d members %d assignor %q", g.State, g.Epoch, g.AssignmentEpoch, len(g.Members), g.AssignorName)
		}
		var got []int
		for _, m := range ms {
			got = append(got, m.partitions())
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("members own %v partitions, want %v", got, want)
		}
		return nil
	}
}

// TestConsumerGroupWasmAssignorAtRunTime: while a coordhost runs, one
// consumer group keeps Kafka's default uniform assignor with real kgo
// consumers, and an operator registers a wasm partition assignor
// (testdata/plugins/golowest: every partition to the lowest member id)
// through POST /v1/plugins/{name}; a second group whose members name it as
// their ServerAssignor gets its targets from the plugin. Before the
// registration (and after the unload) the name is UNSUPPORTED_ASSIGNOR. A
// plugin whose answer is invalid does not break its group: uniform answers
// instead, shown as the group's assignor_fallback and counted in the
// plugin's plugin_failures. No restart in between.
func TestConsumerGroupWasmAssignorAtRunTime(t *testing.T) {
	plugins := t.TempDir()
	for name, pkg := range map[string]string{"lowest.wasm": "testdata/plugins/golowest", "bad.wasm": "testdata/plugins/gobadpartitions"} {
		b, err := os.ReadFile(plugintest.GoPluginPath(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(plugins, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := startLoopHost(t, "", quickConsumerHeartbeat, "--admin.token=s3cret", "--plugins.load.dirs="+plugins)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := newClient(t, srv.KafkaAddr(), kgo.MaxVersions(consumerVersions()))
	for _, topic := range []string{"pw-plain", "pw-custom", "pw-broken"} {
		if err := createTopic(ctx, admin, topic, 6); err != nil {
			t.Fatal(err)
		}
	}
	call := func(method, path, body string) (int, string) { return adminCall(t, srv, method, path, "s3cret", body) }

	// The default group: kgo consumers, uniform.
	own := &partOwners{owner: map[int32]string{}}
	start848Consumer(t, srv.KafkaAddr(), "p1", "plain", "pw-plain", own)
	start848Consumer(t, srv.KafkaAddr(), "p2", "plain", "pw-plain", own)
	plainSettled := func(names ...string) func() error {
		return func() error {
			g, err := describeConsumer(ctx, admin, "plain")
			if err != nil {
				return err
			}
			if g.State != "Stable" || g.Epoch != g.AssignmentEpoch || len(g.Members) != len(names) || g.AssignorName != "uniform" {
				return fmt.Errorf("state %s epoch %d/%d members %d assignor %q", g.State, g.Epoch, g.AssignmentEpoch, len(g.Members), g.AssignorName)
			}
			for _, n := range names {
				if got := len(own.of(n)); got != 6/len(names) {
					return fmt.Errorf("%s owns %v", n, own.of(n))
				}
			}
			return nil
		}
	}
	waitFor(t, 25*time.Second, "default group balanced", plainSettled("p1", "p2"))

	// Not registered yet: the name is unknown, as in Kafka.
	m1 := &rawConsumer{cl: admin, group: "custom", id: "m1", topic: "pw-custom", asg: "lowest"}
	m2 := &rawConsumer{cl: admin, group: "custom", id: "m2", topic: "pw-custom", asg: "lowest"}
	if err := m1.heartbeat(ctx); !errors.Is(err, kerr.UnsupportedAssignor) || !strings.Contains(err.Error(), "uniform, range") {
		t.Fatalf("unregistered assignor: %v, want UNSUPPORTED_ASSIGNOR listing uniform, range", err)
	}

	// Register the plugin at run time; the group naming it uses it.
	if code, body := call("POST", "/v1/plugins/lowest", `{"path": "lowest.wasm"}`); code != 200 {
		t.Fatalf("register: %d %s", code, body)
	}
	waitFor(t, 25*time.Second, "plugin group: every partition with m1", settledRaw(ctx, admin, "custom", "lowest", []int{6, 0}, m1, m2))

	// The default group keeps working beside it: a third consumer joins.
	start848Consumer(t, srv.KafkaAddr(), "p3", "plain", "pw-plain", own)
	waitFor(t, 25*time.Second, "default group balanced over three", plainSettled("p1", "p2", "p3"))
	if err := settledRaw(ctx, admin, "custom", "lowest", []int{6, 0}, m1, m2)(); err != nil {
		t.Fatalf("plugin group after the default group rebalanced: %v", err)
	}
	code, body := call("GET", "/v1/plugins/lowest", "")
	var pi assign.PluginInfo
	if err := json.Unmarshal([]byte(body), &pi); err != nil || code != 200 || pi.Runtime != "wasm" || pi.Runs == 0 || pi.Failures != 0 {
		t.Fatalf("plugin info: %d %s", code, body)
	}

	// A plugin with an invalid answer (partition 0 to every member): the
	// group runs on uniform's answer, visibly.
	if code, body := call("POST", "/v1/plugins/bad", `{"path": "bad.wasm"}`); code != 200 {
		t.Fatalf("register bad: %d %s", code, body)
	}
	b1 := &rawConsumer{cl: admin, group: "broken", id: "b1", topic: "pw-broken", asg: "bad"}
	b2 := &rawConsumer{cl: admin, group: "broken", id: "b2", topic: "pw-broken", asg: "bad"}
	waitFor(t, 25*time.Second, "failing plugin's group balanced by uniform", settledRaw(ctx, admin, "broken", "bad", []int{3, 3}, b1, b2))
	code, body = call("GET", "/v1/groups/broken", "")
	var d loop.GroupDetail
	if err := json.Unmarshal([]byte(body), &d); err != nil || code != 200 {
		t.Fatalf("/v1/groups/broken: %d %s", code, body)
	}
	if f := d.AssignorFallback; f == nil || f.Assignor != "bad" || f.Fallback != "uniform" || !strings.Contains(f.Error, "assign") {
		t.Fatalf("assignor_fallback: %+v", d.AssignorFallback)
	}
	if _, body := call("GET", "/v1/plugins/bad", ""); json.Unmarshal([]byte(body), &pi) != nil || pi.Failures == 0 {
		t.Fatalf("bad plugin info: %s", body)
	}
	if _, body := call("GET", "/v1/groups/custom", ""); strings.Contains(body, "assignor_fallback") {
		t.Fatalf("the working plugin's group shows a fallback: %s", body)
	}

	// Unloaded: the name is unknown again for a joining member.
	if code, body := call("DELETE", "/v1/plugins/lowest", ""); code != 200 {
		t.Fatalf("unload: %d %s", code, body)
	}
	m3 := &rawConsumer{cl: admin, group: "custom", id: "m3", topic: "pw-custom", asg: "lowest"}
	if err := m3.heartbeat(ctx); !errors.Is(err, kerr.UnsupportedAssignor) {
		t.Fatalf("unloaded assignor: %v, want UNSUPPORTED_ASSIGNOR", err)
	}
	if err := plainSettled("p1", "p2", "p3")(); err != nil {
		t.Fatalf("default group at the end: %v", err)
	}
	own.mu.Lock()
	defer own.mu.Unlock()
	if len(own.violations) > 0 {
		t.Fatalf("clients saw a partition with two owners: %v", own.violations)
	}
}

// adminCall sends one admin API request with the bearer token (none when
// empty) and returns the status and body.
func adminCall(t *testing.T, srv *host.Server, method, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+srv.AdminAddr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
