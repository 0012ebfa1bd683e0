package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func load(t *testing.T, args []string, env ...string) (*Config, error) {
	t.Helper()
	return Load(args, env, io.Discard)
}

func writeYAML(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	c, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.Listen != "127.0.0.1:9092" || !c.DataPlane.Embedded || c.DataDir != "./coordhost-data" ||
		c.Kafka.MaxRequestBytes != 100<<20 || c.ShutdownTimeout != 30*time.Second || c.Admin.Listen != "127.0.0.1:9644" {
		t.Fatalf("defaults: %+v", c)
	}
	g := c.Groups.For("any")
	if g.StreamsSessionTimeoutMs != 45000 || g.StreamsMigrationPolicy != "bidirectional" || g.StreamsNumWarmupReplicas != 2 ||
		g.StreamsAcceptableRecoveryLag != 10000 || g.InitialRebalanceDelayMs != 3000 {
		t.Fatalf("group defaults: %+v", g)
	}
}

// TestPrecedence: defaults < file < environment < flags, key by key.
func TestPrecedence(t *testing.T) {
	file := writeYAML(t, `
kafka:
  listen: 127.0.0.1:1111
admin.listen: 127.0.0.1:2222
data.dir: /from/file
log.level: warn
groups:
  defaults:
    streams.session.timeout.ms: 50000
    streams.num.standby.replicas: 1
`)
	env := []string{
		"COORDHOST_ADMIN_LISTEN=127.0.0.1:3333",
		"COORDHOST_DATA_DIR=/from/env",
		"COORDHOST_GROUPS_DEFAULTS_STREAMS_NUM_STANDBY_REPLICAS=2",
		"UNRELATED=1",
	}
	c, err := load(t, []string{"--config", file, "--data.dir=/from/flag", "--groups.defaults.streams.num.standby.replicas=3"}, env...)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.Listen != "127.0.0.1:1111" { // file only
		t.Errorf("kafka.listen = %s, want the file's", c.Kafka.Listen)
	}
	if c.Admin.Listen != "127.0.0.1:3333" { // env beats file
		t.Errorf("admin.listen = %s, want the environment's", c.Admin.Listen)
	}
	if c.DataDir != "/from/flag" { // flag beats env and file
		t.Errorf("data.dir = %s, want the flag's", c.DataDir)
	}
	if c.LogLevel.String() != "WARN" || c.Kafka.MaxRequestBytes != 100<<20 { // file, default
		t.Errorf("log.level %v / max.request.bytes %d", c.LogLevel, c.Kafka.MaxRequestBytes)
	}
	g := c.Groups.For("x")
	if g.StreamsSessionTimeoutMs != 50000 || g.StreamsNumStandbyReplicas != 3 {
		t.Errorf("group settings %+v: want session 50000 (file) and standby 3 (flag)", g)
	}
	src := map[string]string{}
	for _, s := range c.Groups.Explain("x") {
		src[s.Key] = s.Source
	}
	if src["streams.num.standby.replicas"] != "groups.defaults (flag)" || src["streams.session.timeout.ms"] != "groups.defaults (file)" || src["group.max.size"] != "default" {
		t.Errorf("sources %v", src)
	}
}

// TestValidationNamesKeyAndValue: each invalid input fails Load with the
// key and the offending value in the message.
func TestValidationNamesKeyAndValue(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  []string
		yaml string
		want []string
	}{
		{name: "not an integer", args: []string{"--kafka.max.request.bytes=lots"}, want: []string{"kafka.max.request.bytes", `"lots"`, "not an integer"}},
		{name: "out of range", env: []string{"COORDHOST_GROUPS_DEFAULTS_STREAMS_NUM_STANDBY_REPLICAS=-1"}, want: []string{"streams.num.standby.replicas", `"-1"`, "out of range"}},
		{name: "enum", yaml: "dataplane:\n  mode: cloud\n", want: []string{"dataplane.mode", `"cloud"`, "embedded, external"}},
		{name: "duration", yaml: "shutdown.timeout: 30\n", want: []string{"shutdown.timeout", "30", "duration"}},
		{name: "address", args: []string{"--kafka.listen=9092"}, want: []string{"kafka.listen", `"9092"`, "host:port"}},
		{name: "external needs bootstrap", args: []string{"--dataplane.mode=external"}, want: []string{"dataplane.bootstrap"}},
		{name: "unknown file key", yaml: "kafka:\n  lisen: 127.0.0.1:9092\n", want: []string{`"kafka.lisen"`, "unknown key", "file"}},
		{name: "unknown env key", env: []string{"COORDHOST_DATADIR=/x"}, want: []string{`"datadir"`, "COORDHOST_DATADIR"}},
		{name: "heartbeat not below session", yaml: "groups:\n  defaults:\n    streams.heartbeat.interval.ms: 45000\n", want: []string{"streams.heartbeat.interval.ms = 45000", "streams.session.timeout.ms = 45000"}},
		{name: "override unknown key", yaml: "groups:\n  overrides:\n    - match: a*\n      streams.standbys: 1\n", want: []string{`"streams.standbys"`, `match "a*"`}},
		{name: "override bad value", yaml: "groups:\n  overrides:\n    - match: a*\n      streams.migration.policy: sideways\n", want: []string{"streams.migration.policy", `"sideways"`, "groups.overrides[0]"}},
		{name: "override without match", yaml: "groups:\n  overrides:\n    - streams.num.standby.replicas: 1\n", want: []string{"groups.overrides[0].match"}},
		{name: "duplicate glob", yaml: "groups:\n  overrides:\n    - match: a*\n    - match: a*\n", want: []string{`"a*"`, "twice"}},
		{name: "tls half set", args: []string{"--kafka.tls.cert.file=c.pem"}, want: []string{"kafka.tls.cert.file", "kafka.tls.key.file"}},
		{name: "admin tls half set", args: []string{"--admin.tls.key.file=k.pem"}, want: []string{"admin.tls.cert.file", "admin.tls.key.file"}},
		{name: "admin client CA without TLS", args: []string{"--admin.tls.client.ca.file=ca.pem"}, want: []string{"admin.tls.client.ca.file", "needs admin.tls.cert.file"}},
		{name: "plugin size limit", args: []string{"--plugins.max.bytes=10"}, want: []string{"plugins.max.bytes", `"10"`, "out of range"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.yaml != "" {
				args = append(args, "--config", writeYAML(t, tc.yaml))
			}
			_, err := load(t, args, tc.env...)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

// TestExampleFileAndMostSpecificGlob loads docs/coordhost.example.yaml and
// checks per-group resolution: an exact id beats a glob, per key.
func TestExampleFileAndMostSpecificGlob(t *testing.T) {
	c, err := load(t, []string{"--config", "../../docs/coordhost.example.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	pay := c.Groups.For("orders-payments")
	if pay.StreamsSessionTimeoutMs != 60000 || pay.StreamsHeartbeatIntervalMs != 4000 || pay.StreamsNumStandbyReplicas != 1 || pay.StreamsNumWarmupReplicas != 4 {
		t.Errorf("orders-payments: %+v (want exact-id session/heartbeat plus orders-* standbys/warm-ups)", pay)
	}
	other := c.Groups.For("orders-eu")
	if other.StreamsSessionTimeoutMs != 45000 || other.StreamsNumStandbyReplicas != 1 {
		t.Errorf("orders-eu: %+v", other)
	}
	legacy := c.Groups.For("legacy.billing.v1")
	if legacy.StreamsMigrationPolicy != "upgrade" || legacy.InitialRebalanceDelayMs != 0 {
		t.Errorf("legacy.billing.v1 (dotted id): %+v", legacy)
	}
	if c.Groups.For("inventory").StreamsNumStandbyReplicas != 0 {
		t.Error("unmatched group got an override")
	}
	for _, s := range c.Groups.Explain("orders-payments") {
		if s.Key == "streams.session.timeout.ms" && s.Source != `override "orders-payments"` {
			t.Errorf("source of session timeout: %s", s.Source)
		}
	}
}

func TestSpecificityOrder(t *testing.T) {
	g := &Groups{overrides: []Override{
		{Match: "*", Values: map[string]any{"group.max.size": int64(1)}, index: 0},
		{Match: "app-*-prod", Values: map[string]any{"group.max.size": int64(3)}, index: 1},
		{Match: "app-*", Values: map[string]any{"group.max.size": int64(2)}, index: 2},
		{Match: "app-?-prod", Values: map[string]any{"group.max.size": int64(4)}, index: 3},
	}}
	for id, want := range map[string]int32{"x": 1, "app-1": 2, "app-12-prod": 3, "app-1-prod": 4} {
		if got := g.For(id).MaxSize; got != want {
			t.Errorf("%s: max size %d, want %d", id, got, want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		ok   bool
	}{{"*", "", true}, {"a*b", "ab", true}, {"a*b", "axxb", true}, {"a*b", "axxbc", false}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"orders-*", "orders-", true}, {"*-prod", "x/y-prod", true}, {"a**", "a", true}, {"legacy.*", "legacyX", false}} {
		if globMatch(c.p, c.s) != c.ok {
			t.Errorf("globMatch(%q, %q) != %v", c.p, c.s, c.ok)
		}
	}
}

// TestDocMentionsEveryKey keeps docs/CONFIG.md complete.
func TestDocMentionsEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range append(append([]key{}, serverKeys...), groupKeys...) {
		if !strings.Contains(string(doc), "`"+k.name+"`") {
			t.Errorf("docs/CONFIG.md does not document %s", k.name)
		}
	}
}

func TestSettingsShowSourcesAndRedactToken(t *testing.T) {
	c, err := load(t, []string{"--admin.token=secret", "--shutdown.timeout=5s"}, "COORDHOST_LOG_LEVEL=debug")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Setting{}
	for _, s := range c.Settings() {
		got[s.Key] = s
	}
	if len(got) != len(serverKeys) || got["admin.token"].Value != "(set)" || got["shutdown.timeout"] != (Setting{"shutdown.timeout", "5s", "flag"}) ||
		got["log.level"].Source != "env" || got["kafka.listen"].Source != "default" {
		t.Fatalf("settings %+v", got)
	}
}

// TestRuntimeMaxQueuedPerGroup: runtime.max.queued.per.group defaults to
// the runtime's 1,024, takes a flag, and refuses 0 with its name.
func TestRuntimeMaxQueuedPerGroup(t *testing.T) {
	c, err := load(t, nil)
	if err != nil || c.MaxQueuedPerGroup != 1024 {
		t.Fatalf("default: %d, %v", c.MaxQueuedPerGroup, err)
	}
	if c, err = load(t, []string{"--runtime.max.queued.per.group=16"}); err != nil || c.MaxQueuedPerGroup != 16 {
		t.Fatalf("flag: %d, %v", c.MaxQueuedPerGroup, err)
	}
	if _, err = load(t, []string{"--runtime.max.queued.per.group=0"}); err == nil || !strings.Contains(err.Error(), "runtime.max.queued.per.group") {
		t.Fatalf("0: %v", err)
	}
}

// TestRuntimePipeline: runtime.pipeline defaults to 4, takes a flag or the
// environment, and refuses 0 (no round could be stepped) with its name.
func TestRuntimePipeline(t *testing.T) {
	c, err := load(t, nil)
	if err != nil || c.Pipeline != 4 {
		t.Fatalf("default: %d, %v", c.Pipeline, err)
	}
	if c, err = load(t, []string{"--runtime.pipeline=1"}); err != nil || c.Pipeline != 1 {
		t.Fatalf("flag: %v", err)
	}
	if c, err = load(t, nil, "COORDHOST_RUNTIME_PIPELINE=8"); err != nil || c.Pipeline != 8 {
		t.Fatalf("environment: %v", err)
	}
	if _, err = load(t, []string{"--runtime.pipeline=0"}); err == nil || !strings.Contains(err.Error(), "runtime.pipeline") {
		t.Fatalf("0: %v", err)
	}
}
