// Package config loads coordhost's configuration: built-in defaults, then a
// YAML file (--config), then COORDHOST_* environment variables, then
// command-line flags; Default gives the built-in defaults alone. It is
// validated at start — every error names the offending key and value — and
// is not changed afterwards.
package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/knadh/koanf/maps"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// EnvPrefix prefixes every environment variable coordhost reads:
// COORDHOST_KAFKA_LISTEN sets kafka.listen (dots become underscores).
const EnvPrefix = "COORDHOST_"

// Config is the configuration of one coordhost process. Load and Default
// return a valid one; a program embedding coordhost may change its fields
// before coordhost.New, which validates the result. A running server never
// changes it.
type Config struct {
	Kafka     Kafka
	DataDir   string
	DataPlane DataPlane
	Admin     Admin
	// Plugins locates the built-in assignor plugins.
	Plugins   Plugins
	LogLevel  slog.Level
	LogFormat string
	// ShutdownTimeout bounds draining on SIGTERM.
	ShutdownTimeout time.Duration
	// StorePartitions is the partition count of a new store (an existing
	// store keeps its own; another count is refused at start).
	StorePartitions int
	// Store picks the group store's backend (store.kind, store.kafka.*).
	Store Store
	// Cluster shares the store's partitions among nodes (cluster.*).
	Cluster Cluster
	// Embedded is the embedded data plane's users and ACLs (embedded.*).
	Embedded EmbeddedSecurity
	// Workers runs the partitions (0: GOMAXPROCS).
	Workers int
	// Procs is runtime.procs: coordhost serve's GOMAXPROCS, -1 (the
	// default) for Go's default, 0 for one P while the process is mostly
	// idle and Go's default once it is busy.
	// An embedding program keeps its own process's setting.
	Procs int
	// Pipeline bounds the rounds of a partition in flight (runtime.pipeline).
	Pipeline int
	// MaxQueuedPerGroup bounds the requests of one group waiting in its
	// partition's queue (runtime.max.queued.per.group).
	MaxQueuedPerGroup int
	// GroupQuotaPercent is the share of a partition's step time one group
	// may use before it is throttled (runtime.group.quota.percent; 0 or
	// 100: no quota).
	GroupQuotaPercent int
	// MaxThrottle caps a throttle: runtime.group.max.throttle.ms, lowered
	// to a quarter of the smallest session timeout Groups allows.
	MaxThrottle time.Duration
	// MaxGroups caps the groups of the process (0: no cap).
	MaxGroups int
	// Groups resolves per-group settings.
	Groups *Groups
	// File is the YAML file loaded, if any.
	File string

	settings []Setting
}

// Settings returns every server key's effective value and its source
// ("default", "file", "env", "flag"), in key order; admin.token is redacted.
func (c *Config) Settings() []Setting { return append([]Setting(nil), c.settings...) }

// Kafka configures the Kafka listeners.
type Kafka struct {
	Listen          string
	AdvertisedHost  string
	MaxRequestBytes int32
	IdleTimeout     time.Duration
	TLSCertFile     string
	TLSKeyFile      string
	// TLSClientCAFile, when set, makes the listeners require and verify a
	// client certificate.
	TLSClientCAFile string
	// QueuedMaxRequestBytes bounds the request bytes in flight over all
	// listeners; MaxConnections and MaxConnectionsPerIP the open
	// connections.
	QueuedMaxRequestBytes int64
	// LargeFrameBytesPerSecond paces the reading of frames over 1 MiB
	// over all listeners (0: not paced).
	LargeFrameBytesPerSecond int64
	MaxConnections           int
	MaxConnectionsPerIP      int
	// SASLRequired: clients authenticate before anything but ApiVersions
	// and SASL; until then frames are at most SASLMaxReceiveBytes.
	SASLRequired        bool
	SASLMaxReceiveBytes int32
	// Poller is kafka.poller: "off", "auto" or "on" (host/wire's
	// PollerMode).
	Poller string
	// MaxReauth is kafka.connections.max.reauth.ms (0: the cluster's
	// session lifetime alone).
	MaxReauth time.Duration
}

// DataPlane configures where the data lives.
type DataPlane struct {
	Embedded   bool
	Bootstrap  []string
	Partitions int
	// TLS to an external cluster.
	TLS           bool
	TLSCAFile     string
	TLSServerName string
	// SASL of coordhost's own admin connection ("" when none).
	SASLMechanism string
	SASLUser      string
	SASLPassword  string
	// AuthzCacheTTL bounds the reuse of a cluster authorization decision.
	AuthzCacheTTL time.Duration
	// CertTokens: dataplane.authorization.client.certificates =
	// delegation-tokens.
	CertTokens bool
	// IgnoreHostACLs: dataplane.authorization.host.acls = ignore.
	IgnoreHostACLs bool
	// HostACLsInterval: dataplane.authorization.host.acls.check.interval.
	HostACLsInterval time.Duration
	// OffsetsIdentity: dataplane.offsets.identity, "client" (also "") or
	// "coordhost"; OffsetsAsClient says whether it takes effect.
	OffsetsIdentity string
}

// OffsetsAsClient says whether offsets are written by connections logged
// in as the client's principal: dataplane.offsets.identity = client in
// front of an external cluster coordhost authenticates to with SASL. On
// the embedded data plane coordhost stores offsets itself (after its own
// authorizer decided for the client's principal), and a cluster
// coordhost reaches without SASL authenticates no one, so every upstream
// session, coordhost's and the clients', has the same principal: there,
// coordhost's own connection writes them with either setting.
func (d DataPlane) OffsetsAsClient() bool {
	return d.OffsetsIdentity != "coordhost" && !d.Embedded && d.SASLMechanism != ""
}

// Store is the store.kind and store.kafka.* section.
type Store struct {
	Kind                   string // store.kind: "bbolt" or "kafka"
	KafkaTopic             string // store.kafka.topic
	KafkaReplicationFactor int    // store.kafka.replication.factor
	KafkaMinInsyncReplicas int    // store.kafka.min.insync.replicas
}

// Cluster is the cluster.* section: ownership of the state topic's
// partitions across coordhost nodes (docs/SCALE-OUT.md).
type Cluster struct {
	ID             string        // cluster.id ("": a single node holds every partition)
	NodeID         string        // cluster.node.id
	BrokerID       int32         // cluster.node.broker.id (-1: derived from the node id)
	SessionTimeout time.Duration // cluster.ownership.session.timeout.ms
	LeaseMargin    time.Duration // cluster.ownership.lease.margin.ms
}

// Plugins is the plugins.* section.
type Plugins struct {
	Dir      string   // plugins.dir
	Fallback string   // plugins.fallback
	LoadDirs []string // plugins.load.dirs (plugins.dir when empty)
	MaxBytes int64    // plugins.max.bytes
}

// PluginLoadDirs are the directories plugins may be loaded from at run
// time: plugins.load.dirs, or plugins.dir when that is empty.
func (p Plugins) PluginLoadDirs() []string {
	if len(p.LoadDirs) == 0 {
		return []string{p.Dir}
	}
	return p.LoadDirs
}

// Admin configures the admin HTTP server.
type Admin struct {
	Listen          string
	Token           string
	TLSCertFile     string // admin.tls.cert.file
	TLSKeyFile      string // admin.tls.key.file
	TLSClientCAFile string // admin.tls.client.ca.file
	Insecure        bool   // admin.insecure
	HistoryTargets  int    // admin.history.targets
	HistoryInputs   bool   // admin.history.inputs
}

// ErrHelp is returned by Load when --help was asked for; usage was printed.
var ErrHelp = pflag.ErrHelp

// layer is one configuration source, already flattened to dotted keys.
type layer struct {
	name string // "file", "env", "flag"
	vals map[string]any
}

// Load builds the configuration from args (without the program name and
// subcommand), environ (os.Environ() form) and the file named by --config.
// Usage goes to out on --help.
func Load(args, environ []string, out io.Writer) (*Config, error) {
	fs := flagSet(out)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("config: unexpected argument %q (flags are --key=value)", fs.Arg(0))
	}
	var layers []layer
	path, _ := fs.GetString("config")
	if path != "" {
		k := koanf.New(".")
		if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
			return nil, fmt.Errorf("config: --config %s: %w", path, err)
		}
		layers = append(layers, layer{"file", flatten(k)})
	}
	ke := koanf.New(".")
	err := ke.Load(env.Provider(".", env.Opt{
		Prefix:      EnvPrefix,
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(k, v string) (string, any) {
			return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, EnvPrefix)), "_", "."), v
		},
	}), nil)
	if err != nil {
		return nil, fmt.Errorf("config: environment: %w", err)
	}
	layers = append(layers, layer{"env", flatten(ke)})
	kf := koanf.New(".")
	if err := kf.Load(posflag.Provider(fs, ".", nil), nil); err != nil {
		return nil, fmt.Errorf("config: flags: %w", err)
	}
	fl := flatten(kf)
	delete(fl, "config")
	layers = append(layers, layer{"flag", fl})
	c, err := build(layers)
	if err != nil {
		return nil, err
	}
	c.File = path
	return c, nil
}

// flatten returns k's leaves by dotted key; lists stay values.
func flatten(k *koanf.Koanf) map[string]any {
	flat, _ := maps.Flatten(k.Raw(), nil, ".")
	return flat
}

func flagSet(out io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("coordhost serve", pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.String("config", "", "YAML configuration file (see docs/CONFIG.md)")
	for _, k := range serverKeys {
		fs.String(k.name, "", fmt.Sprintf("%s (default %v)", k.doc, k.def))
	}
	for _, k := range groupKeys {
		fs.String("groups.defaults."+k.name, "", fmt.Sprintf("all groups: %s (default %v)", k.doc, k.def))
	}
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: coordhost [serve] [--config file.yaml] [--key=value ...]")
		fmt.Fprintln(out, "Precedence: defaults < --config file < COORDHOST_* environment < flags. Keys:")
		fs.PrintDefaults()
	}
	return fs
}

// build resolves every key through the layers (later layers win), checks
// that no unknown key was given, parses and validates.
func build(layers []layer) (*Config, error) {
	if err := unknownKeys(layers); err != nil {
		return nil, err
	}
	get := func(name string) (any, string, bool) {
		for i := len(layers) - 1; i >= 0; i-- {
			if v, ok := layers[i].vals[name]; ok {
				return v, layers[i].name, true
			}
		}
		return nil, "", false
	}
	vals := make(map[string]any, len(serverKeys))
	var settings []Setting
	for _, k := range serverKeys {
		raw, src, ok := get(k.name)
		if !ok {
			raw, src = k.def, "default"
		}
		v, err := k.parse(raw)
		if err != nil {
			return nil, err
		}
		vals[k.name] = v
		shown := v
		if d, ok := v.(time.Duration); ok {
			shown = d.String()
		}
		if (k.name == "admin.token" || k.name == "dataplane.sasl.password") && v != "" {
			shown = "(set)"
		}
		settings = append(settings, Setting{Key: k.name, Value: shown, Source: src})
	}
	sort.Slice(settings, func(i, j int) bool { return settings[i].Key < settings[j].Key })
	c, err := fromValues(vals)
	if err != nil {
		return nil, err
	}
	c.settings = settings
	g := &Groups{defaults: map[string]any{}, sources: map[string]string{}}
	for _, k := range groupKeys {
		if raw, src, ok := get("groups.defaults." + k.name); ok {
			p, err := k.parse(raw)
			if err != nil {
				return nil, fmt.Errorf("%w (under groups.defaults, from %s)", err, src)
			}
			g.defaults[k.name], g.sources[k.name] = p, src
		}
	}
	if raw, src, ok := get("groups.overrides"); ok {
		if g.overrides, err = parseOverrides(raw, src); err != nil {
			return nil, err
		}
	}
	if err := g.validate(); err != nil {
		return nil, err
	}
	c.Groups = g
	if raw, src, ok := get("embedded.sasl.users"); ok {
		if c.Embedded.Users, err = parseEmbeddedUsers(raw, src); err != nil {
			return nil, err
		}
	}
	if raw, src, ok := get("embedded.acls"); ok {
		if c.Embedded.ACLs, err = parseEmbeddedACLs(raw, src); err != nil {
			return nil, err
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func fromValues(v map[string]any) (*Config, error) {
	c := &Config{
		Kafka: Kafka{
			Listen: v["kafka.listen"].(string), AdvertisedHost: v["kafka.advertised.host"].(string),
			MaxRequestBytes: int32(v["kafka.max.request.bytes"].(int64)), IdleTimeout: v["kafka.idle.timeout"].(time.Duration),
			TLSCertFile: v["kafka.tls.cert.file"].(string), TLSKeyFile: v["kafka.tls.key.file"].(string),
			TLSClientCAFile:       v["kafka.tls.client.ca.file"].(string),
			QueuedMaxRequestBytes: v["kafka.queued.max.request.bytes"].(int64), LargeFrameBytesPerSecond: v["kafka.large.frame.bytes.per.second"].(int64),
			MaxConnections: int(v["kafka.max.connections.total"].(int64)), MaxConnectionsPerIP: int(v["kafka.max.connections.per.ip"].(int64)),
			SASLRequired: v["kafka.sasl.required"].(bool), SASLMaxReceiveBytes: int32(v["kafka.sasl.max.receive.bytes"].(int64)),
			Poller:    v["kafka.poller"].(string),
			MaxReauth: time.Duration(v["kafka.connections.max.reauth.ms"].(int64)) * time.Millisecond,
		},
		DataDir: v["data.dir"].(string),
		DataPlane: DataPlane{
			Embedded: v["dataplane.mode"].(string) == "embedded", Bootstrap: v["dataplane.bootstrap"].([]string),
			Partitions: int(v["dataplane.partitions"].(int64)),
			TLS:        v["dataplane.tls.enabled"].(bool), TLSCAFile: v["dataplane.tls.ca.file"].(string), TLSServerName: v["dataplane.tls.server.name"].(string),
			SASLUser: v["dataplane.sasl.username"].(string), SASLPassword: v["dataplane.sasl.password"].(string),
			AuthzCacheTTL:    v["dataplane.authorization.cache.ttl"].(time.Duration),
			CertTokens:       v["dataplane.authorization.client.certificates"].(string) == "delegation-tokens",
			IgnoreHostACLs:   v["dataplane.authorization.host.acls"].(string) == "ignore",
			HostACLsInterval: v["dataplane.authorization.host.acls.check.interval"].(time.Duration),
			OffsetsIdentity:  v["dataplane.offsets.identity"].(string),
		},
		Admin: Admin{Listen: v["admin.listen"].(string), Token: v["admin.token"].(string),
			TLSCertFile: v["admin.tls.cert.file"].(string), TLSKeyFile: v["admin.tls.key.file"].(string),
			TLSClientCAFile: v["admin.tls.client.ca.file"].(string), Insecure: v["admin.insecure"].(bool),
			HistoryTargets: int(v["admin.history.targets"].(int64)), HistoryInputs: v["admin.history.inputs"].(bool)},
		Plugins: Plugins{Dir: v["plugins.dir"].(string), Fallback: v["plugins.fallback"].(string),
			LoadDirs: v["plugins.load.dirs"].([]string), MaxBytes: v["plugins.max.bytes"].(int64)},
		LogFormat:       v["log.format"].(string),
		ShutdownTimeout: v["shutdown.timeout"].(time.Duration),
		StorePartitions: int(v["store.partitions"].(int64)),
		Store: Store{Kind: v["store.kind"].(string), KafkaTopic: v["store.kafka.topic"].(string),
			KafkaReplicationFactor: int(v["store.kafka.replication.factor"].(int64)), KafkaMinInsyncReplicas: int(v["store.kafka.min.insync.replicas"].(int64))},
		Cluster: Cluster{ID: v["cluster.id"].(string), NodeID: v["cluster.node.id"].(string),
			BrokerID:       int32(v["cluster.node.broker.id"].(int64)),
			SessionTimeout: time.Duration(v["cluster.ownership.session.timeout.ms"].(int64)) * time.Millisecond,
			LeaseMargin:    time.Duration(v["cluster.ownership.lease.margin.ms"].(int64)) * time.Millisecond},
		Embedded: EmbeddedSecurity{SuperUsers: v["embedded.super.users"].([]string),
			AllowEveryoneIfNoACLFound: v["embedded.allow.everyone.if.no.acl.found"].(bool)},
		Workers:           int(v["runtime.workers"].(int64)),
		Procs:             int(v["runtime.procs"].(int64)),
		Pipeline:          int(v["runtime.pipeline"].(int64)),
		MaxQueuedPerGroup: int(v["runtime.max.queued.per.group"].(int64)),
		MaxGroups:         int(v["runtime.max.groups"].(int64)),
		GroupQuotaPercent: int(v["runtime.group.quota.percent"].(int64)),
		MaxThrottle:       time.Duration(v["runtime.group.max.throttle.ms"].(int64)) * time.Millisecond,
	}
	if err := c.LogLevel.UnmarshalText([]byte(v["log.level"].(string))); err != nil {
		return nil, fmt.Errorf("config: log.level = %q: %w", v["log.level"], err)
	}
	if m := v["dataplane.sasl.mechanism"].(string); m != "none" {
		c.DataPlane.SASLMechanism = m
	}
	return c, nil
}

// Default is the configuration coordhost runs with when given no file,
// environment or flags: an embedded data plane, the store under
// ./coordhost-data, the Kafka listener on 127.0.0.1:9092 and the admin
// server on 127.0.0.1:9644. A program embedding coordhost may change its
// exported fields before handing it to coordhost.New, which validates it.
func Default() *Config {
	c, err := build(nil)
	if err != nil {
		panic(fmt.Sprintf("config: the built-in defaults are invalid: %v", err)) // a bug in the key table
	}
	return c
}

// Validate checks the rules between fields (addresses, TLS and SASL pairs,
// the data plane's mode); Load and Default return only valid
// configurations, and coordhost.New checks a configuration a program
// changed in Go. Each error names the offending key and value.
func (c *Config) Validate() error {
	for _, a := range []struct{ key, addr string }{{"kafka.listen", c.Kafka.Listen}, {"admin.listen", c.Admin.Listen}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("config: %s = %q: not a host:port address", a.key, a.addr)
		}
	}
	if (c.Kafka.TLSCertFile == "") != (c.Kafka.TLSKeyFile == "") {
		return fmt.Errorf("config: kafka.tls.cert.file = %q and kafka.tls.key.file = %q: set both or neither", c.Kafka.TLSCertFile, c.Kafka.TLSKeyFile)
	}
	if (c.Admin.TLSCertFile == "") != (c.Admin.TLSKeyFile == "") {
		return fmt.Errorf("config: admin.tls.cert.file = %q and admin.tls.key.file = %q: set both or neither", c.Admin.TLSCertFile, c.Admin.TLSKeyFile)
	}
	if err := c.validateClientCerts(); err != nil {
		return err
	}
	if c.Admin.TLSClientCAFile != "" && c.Admin.TLSCertFile == "" {
		return fmt.Errorf("config: admin.tls.client.ca.file = %q needs admin.tls.cert.file (client certificates need TLS)", c.Admin.TLSClientCAFile)
	}
	if err := c.validateLimits(); err != nil {
		return err
	}
	switch m := c.DataPlane.SASLMechanism; m {
	case "":
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if c.DataPlane.SASLUser == "" {
			return fmt.Errorf("config: dataplane.sasl.mechanism = %q needs dataplane.sasl.username", m)
		}
	default:
		return fmt.Errorf("config: dataplane.sasl.mechanism = %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", m)
	}
	if c.DataPlane.TLSCAFile != "" && !c.DataPlane.TLS {
		return fmt.Errorf("config: dataplane.tls.ca.file = %q is set but dataplane.tls.enabled is false", c.DataPlane.TLSCAFile)
	}
	if c.DataPlane.Embedded && (c.DataPlane.TLS || c.DataPlane.SASLMechanism != "") {
		return errors.New("config: dataplane.tls.* and dataplane.sasl.* apply to dataplane.mode = \"external\" only")
	}
	if c.DataDir == "" {
		return errors.New(`config: data.dir = "": a data directory is required`)
	}
	if !c.DataPlane.Embedded && len(c.DataPlane.Bootstrap) == 0 {
		return errors.New("config: dataplane.mode = \"external\" needs dataplane.bootstrap (host:port of at least one broker)")
	}
	for _, b := range c.DataPlane.Bootstrap {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return fmt.Errorf("config: dataplane.bootstrap entry %q: not a host:port address", b)
		}
	}
	if err := c.validateEmbedded(); err != nil {
		return err
	}
	if err := c.validateOffsetsIdentity(); err != nil {
		return err
	}
	if c.Store.Kind == "kafka" && c.DataPlane.Embedded {
		return errors.New(`config: store.kind = "kafka" needs dataplane.mode = "external" (the state topic lives on the external cluster)`)
	}
	if c.Cluster.ID != "" && c.Store.Kind != "kafka" {
		return fmt.Errorf(`config: cluster.id = %q needs store.kind = "kafka" (the nodes share the state topic's partitions)`, c.Cluster.ID)
	}
	if b := c.Cluster.BrokerID; c.Cluster.ID != "" && b != -1 && b < 1_000_000_000 {
		return fmt.Errorf("config: cluster.node.broker.id = %d must be -1 or within [1000000000, 1999999999] (above the backing cluster's broker ids)", b)
	}
	if c.Cluster.ID != "" && c.Cluster.LeaseMargin >= c.Cluster.SessionTimeout {
		return fmt.Errorf("config: cluster.ownership.lease.margin.ms = %d must be below cluster.ownership.session.timeout.ms = %d",
			c.Cluster.LeaseMargin.Milliseconds(), c.Cluster.SessionTimeout.Milliseconds())
	}
	if c.Groups == nil {
		return errors.New("config: Groups is nil (start from config.Default or config.Load)")
	}
	return nil
}

// unknownKeys refuses keys no one reads: a typo must not be silently ignored.
func unknownKeys(layers []layer) error {
	known := map[string]bool{"groups.overrides": true}
	for _, k := range embeddedListKeys {
		known[k] = true
	}
	for _, k := range serverKeys {
		known[k.name] = true
	}
	for _, k := range groupKeys {
		known["groups.defaults."+k.name] = true
	}
	for _, l := range layers {
		names := make([]string, 0, len(l.vals))
		for n := range l.vals {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if !known[n] {
				hint := ""
				if l.name == "env" {
					hint = fmt.Sprintf(" (from %s%s)", EnvPrefix, strings.ToUpper(strings.ReplaceAll(n, ".", "_")))
				}
				return fmt.Errorf("config: unknown key %q in %s%s; see docs/CONFIG.md", n, l.name, hint)
			}
		}
	}
	return nil
}

// parseOverrides reads the groups.overrides list: entries {match: glob, <key>: value, ...}.
func parseOverrides(raw any, src string) ([]Override, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("config: groups.overrides (from %s): must be a list of {match: <glob>, <key>: <value>} entries", src)
	}
	seen := map[string]bool{}
	out := make([]Override, 0, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("config: groups.overrides[%d]: must be a map with a match key", i)
		}
		flat, _ := maps.Flatten(m, nil, ".")
		match, ok := flat["match"].(string)
		if !ok || match == "" {
			return nil, fmt.Errorf("config: groups.overrides[%d].match = %#v: a non-empty group-id glob is required", i, flat["match"])
		}
		if seen[match] {
			return nil, fmt.Errorf("config: groups.overrides[%d].match = %q: the same glob appears twice", i, match)
		}
		seen[match] = true
		o := Override{Match: match, Values: map[string]any{}, index: i}
		for name, v := range flat {
			if name == "match" {
				continue
			}
			k, ok := groupKey(name)
			if !ok {
				return nil, fmt.Errorf("config: groups.overrides[%d] (match %q): unknown per-group key %q", i, match, name)
			}
			p, err := k.parse(v)
			if err != nil {
				return nil, fmt.Errorf("%w (in groups.overrides[%d], match %q)", err, i, match)
			}
			o.Values[name] = p
		}
		out = append(out, o)
	}
	return out, nil
}

func groupKey(name string) (key, bool) {
	for _, k := range groupKeys {
		if k.name == name {
			return k, true
		}
	}
	return key{}, false
}

// validate checks the cross-key rules on the defaults and on each override
// applied alone over them.
func (g *Groups) validate() error {
	if err := checkGroup("groups.defaults", (&Groups{defaults: g.defaults}).For("")); err != nil {
		return err
	}
	for i, o := range g.overrides {
		one := &Groups{defaults: g.defaults, overrides: []Override{o}}
		if err := checkGroup(fmt.Sprintf("groups.overrides[%d] (match %q)", i, o.Match), one.For(o.Match)); err != nil {
			return err
		}
	}
	return nil
}

// validateLimits checks the Kafka listeners' limits against each other and
// the data plane.
func (c *Config) validateLimits() error {
	k := c.Kafka
	switch {
	case k.QueuedMaxRequestBytes < int64(k.MaxRequestBytes):
		return fmt.Errorf("config: kafka.queued.max.request.bytes = %d is below kafka.max.request.bytes = %d: a largest frame could never be read", k.QueuedMaxRequestBytes, k.MaxRequestBytes)
	case k.MaxConnections < 1 || k.MaxConnectionsPerIP < 1:
		return fmt.Errorf("config: kafka.max.connections.total = %d, kafka.max.connections.per.ip = %d: both must be at least 1", k.MaxConnections, k.MaxConnectionsPerIP)
	case k.SASLRequired && k.SASLMaxReceiveBytes < 1:
		return fmt.Errorf("config: kafka.sasl.max.receive.bytes = %d: must be at least 1", k.SASLMaxReceiveBytes)
	case k.SASLRequired && c.DataPlane.Embedded && !c.Embedded.Enabled():
		return errors.New("config: kafka.sasl.required = true needs dataplane.mode = \"external\" or embedded.sasl.users (the embedded data plane has no other users)")
	}
	return nil
}

// validateOffsetsIdentity refuses dataplane.offsets.identity = client
// (the default) where it takes effect but no connection can log in as
// the client's principal.
func (c *Config) validateOffsetsIdentity() error {
	switch id := c.DataPlane.OffsetsIdentity; {
	case id != "" && id != "client" && id != "coordhost":
		return fmt.Errorf(`config: dataplane.offsets.identity = %q: want "client" or "coordhost"`, id)
	case !c.DataPlane.OffsetsAsClient():
		return nil
	case !strings.HasPrefix(c.DataPlane.SASLMechanism, "SCRAM-"):
		return fmt.Errorf("config: dataplane.offsets.identity = \"client\" (the default in front of a cluster with SASL) needs dataplane.sasl.mechanism SCRAM-SHA-256 or SCRAM-SHA-512, not %q: "+
			"coordhost creates a delegation token for each client's principal over its own SASL connection and writes the client's offsets logged in with it over SCRAM; "+
			"set dataplane.offsets.identity = \"coordhost\" to have coordhost's own connection write the offsets the cluster allowed for the client's principal", c.DataPlane.SASLMechanism)
	}
	return nil
}

// validateClientCerts refuses client certificates on the Kafka listeners
// where coordhost could not authorize their holders as the cluster would.
// In front of an external cluster a client is authorized by asking the
// cluster over the client's own upstream session. With client SASL the
// principal authorized is the SASL one, as on a Kafka SASL_SSL listener.
// Without it the upstream session is authenticated as the certificate's
// principal only with delegation tokens; otherwise every certificate
// would be authorized as coordhost's unauthenticated upstream session
// instead: refused.
func (c *Config) validateClientCerts() error {
	ca := c.Kafka.TLSClientCAFile
	const key = "dataplane.authorization.client.certificates = \"delegation-tokens\""
	switch {
	case c.DataPlane.CertTokens && (ca == "" || c.DataPlane.Embedded):
		return fmt.Errorf("config: %s needs kafka.tls.client.ca.file and dataplane.mode = \"external\"", key)
	case c.DataPlane.CertTokens && c.Kafka.SASLRequired:
		return fmt.Errorf("config: %s with kafka.sasl.required = true: clients authenticate with their certificate, not SASL", key)
	case c.DataPlane.CertTokens && !strings.HasPrefix(c.DataPlane.SASLMechanism, "SCRAM-"):
		return fmt.Errorf("config: %s needs dataplane.sasl.mechanism SCRAM-SHA-256 or SCRAM-SHA-512 (coordhost creates the tokens over its own SASL connection; clients log in with them over SCRAM), not %q", key, c.DataPlane.SASLMechanism)
	case ca == "":
		return nil
	case c.Kafka.TLSCertFile == "":
		return fmt.Errorf("config: kafka.tls.client.ca.file = %q needs kafka.tls.cert.file (client certificates need TLS)", ca)
	case !c.DataPlane.Embedded && c.DataPlane.SASLMechanism == "" && !c.Kafka.SASLRequired:
		return fmt.Errorf("config: kafka.tls.client.ca.file = %q with dataplane.mode = \"external\" needs SASL (dataplane.sasl.mechanism or kafka.sasl.required): "+
			"coordhost cannot ask the cluster's authorizer about a certificate's principal, since it cannot authenticate upstream as it, "+
			"so it refuses to authorize certificate holders as its own unauthenticated upstream session", ca)
	}
	return nil
}
