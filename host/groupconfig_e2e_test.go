package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/internal/testtool"
)

// Runtime group configs over real TCP: IncrementalAlterConfigs and
// AlterConfigs on GROUP resources, DescribeConfigs, and their effect on
// running streams and classic groups. kadm (v1.20) has typed helpers for
// topic and broker configs only, so these tests send the kmsg requests
// through a kgo client, as kadm would.

// setOp is one IncrementalAlterConfigs entry.
func setOp(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
	return c
}

// alterGroup sends IncrementalAlterConfigs for the given groups (one
// resource each, all with ops) and returns the per-resource results.
func alterGroup(ctx context.Context, cl kmsg.Requestor, validateOnly bool, groups []string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) ([]kmsg.IncrementalAlterConfigsResponseResource, error) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	for _, g := range groups {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeGroupConfig, g, ops
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	return resp.Resources, nil
}

// mustAlter alters one group and fails the test on any error.
func mustAlter(t *testing.T, ctx context.Context, cl kmsg.Requestor, group string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) {
	t.Helper()
	rs, err := alterGroup(ctx, cl, false, []string{group}, ops...)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].ErrorCode != 0 {
		t.Fatalf("alter %s: %v %s", group, kerr.ErrorForCode(rs[0].ErrorCode), deref(rs[0].ErrorMessage))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// groupConfig is DescribeConfigs of one GROUP resource, by key.
func groupConfig(ctx context.Context, cl kmsg.Requestor, group string) (map[string]kmsg.DescribeConfigsResponseResourceConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		return nil, fmt.Errorf("describe %s: %+v", group, resp.Resources)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out, nil
}

// wantConfig checks one described key's value and source.
func wantConfig(t *testing.T, ctx context.Context, cl kmsg.Requestor, group, key, value string, src kmsg.ConfigSource) {
	t.Helper()
	cfg, err := groupConfig(ctx, cl, group)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := cfg[key]
	if !ok || deref(c.Value) != value || c.Source != src {
		t.Fatalf("%s %s: value %q source %v, want %q %v", group, key, deref(c.Value), c.Source, value, src)
	}
}

// statefulMember is a raw KIP-1071 member of a one-subtopology topology
// with a state store (so the group can place standby tasks); it adopts
// every assignment at once and reports it back.
type statefulMember struct {
	id, group, source       string
	epoch, interval         int32
	active, standby, warmup []kmsg.TaskIDs
}

func (m *statefulMember) heartbeat(ctx context.Context, cl kmsg.Requestor) error {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		proc := "p-" + m.id
		req.RebalanceTimeoutMillis, req.ProcessID = 30000, &proc
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{
			SubtopologyID: "0", SourceTopics: []string{m.source}, StateChangelogTopics: []kmsg.TopicInfo{{Topic: m.group + "-store-changelog"}}}}}
	}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = m.active, m.standby, m.warmup
	for _, l := range []*[]kmsg.TaskIDs{&req.ActiveTasks, &req.StandbyTasks, &req.WarmupTasks} {
		if *l == nil {
			*l = []kmsg.TaskIDs{}
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("member %s: %v %s", m.id, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	m.epoch, m.interval = resp.MemberEpoch, resp.HeartbeatIntervalMillis
	if resp.ActiveTasks != nil {
		m.active, m.standby, m.warmup = resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks
	}
	return nil
}

// TestGroupConfigsAtRuntime: a running streams group's standby count and
// heartbeat interval are changed with IncrementalAlterConfigs and take
// effect on the next heartbeats; DescribeConfigs and the admin API show
// the runtime values with their source; invalid keys and values get
// INVALID_CONFIG naming them; validateOnly changes nothing; the legacy
// AlterConfigs replaces the group's whole runtime set.
func TestGroupConfigsAtRuntime(t *testing.T) {
	srv := startLoopHost(t, "")
	ctx := timeout(t)
	kc := newClient(t, srv.KafkaAddr())
	if err := createTopic(ctx, kc, "gc-in", 4); err != nil {
		t.Fatal(err)
	}
	cl := &coordinator{cl: kc}
	ms := []*statefulMember{{id: "m1", group: "gc-app", source: "gc-in"}, {id: "m2", group: "gc-app", source: "gc-in"}}
	converge := func(what string, cond func(active, standby int, intervals []int32) error) {
		t.Helper()
		waitFor(t, 30*time.Second, what, func() error {
			active, standby := 0, 0
			var iv []int32
			for _, m := range ms {
				if err := m.heartbeat(ctx, cl); err != nil {
					return err
				}
				active, standby, iv = active+countTasks(m.active), standby+countTasks(m.standby), append(iv, m.interval)
			}
			return cond(active, standby, iv)
		})
	}
	intervalsAre := func(iv []int32, want int32) bool { return iv[0] == want && iv[1] == want }
	converge("4 active tasks, no standbys, the file's 300 ms interval", func(a, s int, iv []int32) error {
		if a != 4 || s != 0 || !intervalsAre(iv, 300) {
			return fmt.Errorf("active %d standby %d intervals %v", a, s, iv)
		}
		return nil
	})
	wantConfig(t, ctx, cl, "gc-app", "streams.num.standby.replicas", "0", kmsg.ConfigSourceDefaultConfig)
	wantConfig(t, ctx, cl, "gc-app", "streams.heartbeat.interval.ms", "300", kmsg.ConfigSourceStaticBrokerConfig)

	// validateOnly: accepted, nothing changes.
	rs, err := alterGroup(ctx, cl, true, []string{"gc-app"}, setOp("streams.num.standby.replicas", "1"))
	if err != nil || rs[0].ErrorCode != 0 {
		t.Fatalf("validateOnly: %+v %v", rs, err)
	}
	wantConfig(t, ctx, cl, "gc-app", "streams.num.standby.replicas", "0", kmsg.ConfigSourceDefaultConfig)

	// Invalid keys, values and operations: INVALID_CONFIG naming them.
	appendOp := setOp("streams.num.standby.replicas", "1")
	appendOp.Op = kmsg.IncrementalAlterConfigOpAppend
	for _, tc := range []struct {
		op   kmsg.IncrementalAlterConfigsRequestResourceConfig
		want string
	}{
		{setOp("no.such.key", "1"), "no.such.key"},
		{setOp("streams.num.standby.replicas", "many"), `streams.num.standby.replicas = "many"`},
		{setOp("streams.num.standby.replicas", "3"), "streams.num.standby.replicas = 3: must be less than or equal to 2"},
		{setOp("streams.session.timeout.ms", "1000"), "streams.session.timeout.ms = 1000"},
		{setOp("consumer.session.timeout.ms", "44999"), "consumer.session.timeout.ms = 44999: must be in the range 45000 to 60000"},
		{setOp("streams.assignor.name", "nope"), `streams.assignor.name = "nope": no such assignor`},
		{appendOp, "APPEND to key streams.num.standby.replicas because its type is not LIST"},
		{setOp("streams.rack.aware.assignment.tags", "zone,zone"), `duplicate tag key "zone"`},
	} {
		rs, err := alterGroup(ctx, cl, false, []string{"gc-app"}, tc.op)
		if err != nil {
			t.Fatal(err)
		}
		if rs[0].ErrorCode != kerr.InvalidConfig.Code || !strings.Contains(deref(rs[0].ErrorMessage), tc.want) {
			t.Errorf("%s=%s: %v %q, want INVALID_CONFIG containing %q", tc.op.Name, deref(tc.op.Value), kerr.ErrorForCode(rs[0].ErrorCode), deref(rs[0].ErrorMessage), tc.want)
		}
	}
	// Resources are independent: the empty name is refused, the other applied.
	rs, err = alterGroup(ctx, cl, false, []string{"", "gc-other"}, setOp("group.max.size", "5"))
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].ErrorCode != kerr.InvalidRequest.Code || rs[1].ErrorCode != 0 {
		t.Fatalf("empty group name and a valid resource: %v, %v", kerr.ErrorForCode(rs[0].ErrorCode), kerr.ErrorForCode(rs[1].ErrorCode))
	}
	wantConfig(t, ctx, cl, "gc-other", "group.max.size", "5", kmsg.ConfigSourceGroupConfig)
	wantConfig(t, ctx, cl, "gc-app", "streams.num.standby.replicas", "0", kmsg.ConfigSourceDefaultConfig)

	// APPEND and SUBTRACT edit the one list key.
	listOp := func(op kmsg.IncrementalAlterConfigOp, v string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		c := setOp("streams.rack.aware.assignment.tags", v)
		c.Op = op
		return c
	}
	mustAlter(t, ctx, cl, "gc-tags", listOp(kmsg.IncrementalAlterConfigOpAppend, "zone"))
	mustAlter(t, ctx, cl, "gc-tags", listOp(kmsg.IncrementalAlterConfigOpAppend, "rack,zone,host"))
	wantConfig(t, ctx, cl, "gc-tags", "streams.rack.aware.assignment.tags", "zone,rack,host", kmsg.ConfigSourceGroupConfig)
	mustAlter(t, ctx, cl, "gc-tags", listOp(kmsg.IncrementalAlterConfigOpSubtract, "zone"))
	wantConfig(t, ctx, cl, "gc-tags", "streams.rack.aware.assignment.tags", "rack,host", kmsg.ConfigSourceGroupConfig)

	// The real change: one standby per task and a 6 s heartbeat interval.
	mustAlter(t, ctx, cl, "gc-app", setOp("streams.num.standby.replicas", "1"), setOp("streams.heartbeat.interval.ms", "6000"))
	wantConfig(t, ctx, cl, "gc-app", "streams.num.standby.replicas", "1", kmsg.ConfigSourceGroupConfig)
	converge("4 standby tasks and the 6000 ms interval after the alter", func(a, s int, iv []int32) error {
		if a != 4 || s != 4 || !intervalsAre(iv, 6000) {
			return fmt.Errorf("active %d standby %d intervals %v", a, s, iv)
		}
		return nil
	})

	// The admin API shows the effective config with the runtime source.
	resp, err := http.Get("http://" + srv.AdminAddr() + "/v1/groups/gc-app")
	if err != nil {
		t.Fatal(err)
	}
	var detail struct {
		Config []struct {
			Key    string `json:"key"`
			Value  any    `json:"value"`
			Source string `json:"source"`
		} `json:"config"`
	}
	err = json.NewDecoder(resp.Body).Decode(&detail)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range detail.Config {
		if s.Key == "streams.num.standby.replicas" {
			found = s.Value == float64(1) && s.Source == "dynamic"
		}
	}
	if !found {
		t.Fatalf("/v1/groups/gc-app config: %+v", detail.Config)
	}

	// Legacy AlterConfigs replaces the whole runtime set: the heartbeat
	// interval goes back to the file's value.
	lreq := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "gc-app"
	lr.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "streams.num.standby.replicas", Value: kmsg.StringPtr("1")}}
	lreq.Resources = append(lreq.Resources, lr)
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil || lresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %+v %v", lresp, err)
	}
	wantConfig(t, ctx, cl, "gc-app", "streams.heartbeat.interval.ms", "300", kmsg.ConfigSourceStaticBrokerConfig)
	wantConfig(t, ctx, cl, "gc-app", "streams.num.standby.replicas", "1", kmsg.ConfigSourceGroupConfig)
	converge("the file's interval again, standbys kept", func(a, s int, iv []int32) error {
		if a != 4 || s != 4 || !intervalsAre(iv, 300) {
			return fmt.Errorf("active %d standby %d intervals %v", a, s, iv)
		}
		return nil
	})
}

// classicJoin sends a first JoinGroup (v9) and returns its error code.
func classicJoin(ctx context.Context, cl kmsg.Requestor, group string, sessionMs int32) (int16, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = group, "consumer", sessionMs, 30000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	return resp.ErrorCode, nil
}

// TestClassicSettingsPerGroup: classic settings resolve per group like the
// streams ones: a file glob raises group.min.session.timeout.ms for the
// groups it matches only, and a runtime value beats the glob.
func TestClassicSettingsPerGroup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	yaml := "groups:\n  overrides:\n    - match: \"strict-*\"\n      group.min.session.timeout.ms: 20000\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startLoopHost(t, "", "--config", file)
	ctx := timeout(t)
	cl := &coordinator{cl: newClient(t, srv.KafkaAddr())}
	want := func(group string, session int32, code int16) {
		t.Helper()
		got, err := classicJoin(ctx, cl, group, session)
		if err != nil {
			t.Fatal(err)
		}
		if got != code {
			t.Fatalf("join %s with session %d: %v, want %v", group, session, kerr.ErrorForCode(got), kerr.ErrorForCode(code))
		}
	}
	want("strict-a", 10000, kerr.InvalidSessionTimeout.Code) // the glob's minimum 20000
	want("loose", 10000, kerr.MemberIDRequired.Code)         // Kafka's minimum 6000
	mustAlter(t, ctx, cl, "strict-a", setOp("group.min.session.timeout.ms", "8000"))
	wantConfig(t, ctx, cl, "strict-a", "group.min.session.timeout.ms", "8000", kmsg.ConfigSourceGroupConfig)
	want("strict-a", 10000, kerr.MemberIDRequired.Code) // the runtime value beats the glob
	want("strict-b", 10000, kerr.InvalidSessionTimeout.Code)
}

// TestGroupConfigSurvivesCrash: runtime group configs are durable before
// the alter is answered: after SIGKILL and a restart on the same data
// directory, DescribeConfigs shows them and core applies them (a streams
// member is told the altered heartbeat interval, a classic join is held to
// the altered session-timeout minimum).
func TestGroupConfigSurvivesCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the coordhost binary")
	}
	dataDir, port := t.TempDir(), freePort(t)
	p := startProc(t, dataDir, port, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kc := newClient(t, p.addr)
	if err := createTopic(ctx, kc, "gcc-in", 2); err != nil {
		t.Fatal(err)
	}
	cl := &coordinator{cl: kc}
	mustAlter(t, ctx, cl, "gcc-app", setOp("streams.heartbeat.interval.ms", "7000"), setOp("streams.num.standby.replicas", "1"))
	mustAlter(t, ctx, cl, "gcc-classic", setOp("group.min.session.timeout.ms", "20000"))
	p.kill()
	kc.Close()

	p = startProc(t, dataDir, port, 1)
	kc = newClient(t, p.addr)
	cl = &coordinator{cl: kc}
	wantConfig(t, ctx, cl, "gcc-app", "streams.heartbeat.interval.ms", "7000", kmsg.ConfigSourceGroupConfig)
	wantConfig(t, ctx, cl, "gcc-app", "streams.num.standby.replicas", "1", kmsg.ConfigSourceGroupConfig)
	m := &statefulMember{id: "m1", group: "gcc-app", source: "gcc-in"}
	waitFor(t, 30*time.Second, "member told the altered interval", func() error {
		if err := m.heartbeat(ctx, cl); err != nil {
			return err
		}
		if m.interval != 7000 {
			return fmt.Errorf("interval %d", m.interval)
		}
		return nil
	})
	code, err := classicJoin(ctx, cl, "gcc-classic", 10000)
	if err != nil || code != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("classic join under the altered minimum after restart: %v %v", kerr.ErrorForCode(code), err)
	}
}

// TestKafkaConfigsTool: Kafka 4.4's own kafka-configs (ConfigCommand, run
// from the interop streams app's Maven classpath, which holds kafka-tools)
// alters, lists and describes a group's runtime configs through coordhost,
// and the group it names need not exist yet.
func TestKafkaConfigsTool(t *testing.T) {
	srv := startLoopHost(t, "")
	configs := func(args ...string) string {
		t.Helper()
		base := []string{"--bootstrap-server", srv.KafkaAddr(), "--entity-type", "groups"}
		return string(testtool.JavaMain(t, "../interop/streams-app", "org.apache.kafka.tools.ConfigCommand", append(base, args...)...))
	}
	out := configs("--entity-name", "kc-app", "--alter", "--add-config", "streams.num.standby.replicas=1,streams.heartbeat.interval.ms=6000")
	if !strings.Contains(out, "Completed updating config for group kc-app") {
		t.Fatalf("alter: %s", out)
	}
	out = configs("--describe")
	for _, want := range []string{"Dynamic configs for group kc-app are:",
		"streams.num.standby.replicas=1 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:streams.num.standby.replicas=1, DEFAULT_CONFIG:streams.num.standby.replicas=0}",
		"streams.heartbeat.interval.ms=6000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:streams.heartbeat.interval.ms=6000, STATIC_BROKER_CONFIG:streams.heartbeat.interval.ms=300}"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe lacks %q:\n%s", want, out)
		}
	}
	configs("--entity-name", "kc-app", "--alter", "--delete-config", "streams.heartbeat.interval.ms")
	ctx := timeout(t)
	cl := &coordinator{cl: newClient(t, srv.KafkaAddr())}
	wantConfig(t, ctx, cl, "kc-app", "streams.heartbeat.interval.ms", "300", kmsg.ConfigSourceStaticBrokerConfig)
	wantConfig(t, ctx, cl, "kc-app", "streams.num.standby.replicas", "1", kmsg.ConfigSourceGroupConfig)
}
