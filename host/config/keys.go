package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// kind is the type of a config value.
type kind uint8

const (
	kString kind = iota
	kInt
	kDuration
	kList
	kBool
)

// key describes one configuration key: its name (dotted, as in the YAML
// file, the flag --name and the variable COORDHOST_NAME_WITH_UNDERSCORES),
// default, type, bounds and meaning.
type key struct {
	name     string
	def      any
	kind     kind
	min, max int64    // kInt bounds
	oneOf    []string // kString allowed values, when set
	doc      string

	// Per-group keys only (groupkeys.go).
	kafka    bool   // a Kafka 4.4 GroupConfig key; else coordhost's own
	runtime  *bound // Kafka's bounds on runtime values; nil: the key's own range
	fileOnly bool   // only the config file sets it, not Kafka's config APIs
	field    field  // where the value lives
}

// serverKeys are the process-wide keys.
var serverKeys = []key{
	{name: "kafka.listen", def: "127.0.0.1:9092", kind: kString, doc: "Kafka listener address (host:port) of the first data-plane node; further nodes get the following ports (all ephemeral when the port is 0)."},
	{name: "kafka.advertised.host", def: "", kind: kString, doc: "Host put in every broker address clients see; default: the host of kafka.listen."},
	{name: "kafka.max.request.bytes", def: int64(100 << 20), kind: kInt, min: 1024, max: math.MaxInt32, doc: "Largest request frame accepted; a larger one closes the connection (Kafka's socket.request.max.bytes)."},
	{name: "kafka.idle.timeout", def: "10m", kind: kDuration, doc: "Close client connections idle this long (Kafka's connections.max.idle.ms)."},
	{name: "kafka.queued.max.request.bytes", def: int64(256 << 20), kind: kInt, min: 1024, max: math.MaxInt64, doc: "Request bytes all Kafka listeners hold at once; a frame is read only once its declared size fits, so memory stays bounded (Kafka's queued.max.request.bytes, unbounded by default in Kafka). At least kafka.max.request.bytes."},
	{name: "kafka.large.frame.bytes.per.second", def: int64(64 << 20), kind: kInt, min: 0, max: math.MaxInt64, doc: "Rate at which all Kafka listeners together read the bytes of request frames over 1 MiB, chunk by chunk in turn; smaller frames (a producer's default max.request.size) are never paced, nor is a Produce forwarded as it came to an external cluster. 0: no pacing. Coordhost's own; Kafka has none."},
	{name: "kafka.max.connections.total", def: int64(4096), kind: kInt, min: 1, max: math.MaxInt32, doc: "Open client connections over all Kafka listeners; a connection over the cap is closed at once (Kafka's max.connections, unbounded by default in Kafka)."},
	{name: "kafka.max.connections.per.ip", def: int64(1024), kind: kInt, min: 1, max: math.MaxInt32, doc: "Open client connections from one source address; a connection over the cap is closed at once (Kafka's max.connections.per.ip, unbounded by default in Kafka)."},
	{name: "kafka.poller", def: "auto", kind: kString, oneOf: []string{"off", "auto", "on"}, doc: "Linux, listeners without TLS, SASL or client certificates, a process with two or more Ps: one goroutine with an epoll of its own answers the heartbeats of idle connections itself instead of waking their goroutines (docs/HOST.md). off: every request on its connection's goroutine; auto: while the process serves 5,000 heartbeats a second or more (until below 3,000) and the one goroutine keeps up, by its thread's CPU time; on: always (but while it does not keep up)."},
	{name: "kafka.sasl.required", def: false, kind: kBool, doc: "Clients must authenticate (SASL, passed through to the external cluster) before anything but ApiVersions and SASL requests; external data plane only."},
	{name: "kafka.sasl.max.receive.bytes", def: int64(512 << 10), kind: kInt, min: 1024, max: math.MaxInt32, doc: "With kafka.sasl.required: largest frame before authentication; a larger one closes the connection (Kafka's sasl.server.max.receive.size)."},
	{name: "kafka.connections.max.reauth.ms", def: int64(0), kind: kInt, min: 0, max: math.MaxInt32, doc: "External SASL: the longest session a client's authentication gets before it must re-authenticate on its connection (KIP-368, Kafka's connections.max.reauth.ms); the cluster's own lifetime applies when shorter. 0: the cluster's alone."},
	{name: "kafka.tls.cert.file", def: "", kind: kString, doc: "PEM certificate for TLS on the Kafka listeners; empty: plaintext."},
	{name: "kafka.tls.key.file", def: "", kind: kString, doc: "PEM private key matching kafka.tls.cert.file."},
	{name: "kafka.tls.client.ca.file", def: "", kind: kString, doc: "PEM CA bundle: the Kafka listeners require a client certificate it verifies (Kafka's ssl.client.auth=required). Needs kafka.tls.cert.file; with dataplane.mode=external, SASL too or dataplane.authorization.client.certificates=delegation-tokens (docs/SECURITY.md)."},
	{name: "data.dir", def: "./coordhost-data", kind: kString, doc: "Directory of the durable store (coordhost.db), of the embedded data plane (dataplane/) and of compiled plugin code (plugin-cache/)."},
	{name: "store.partitions", def: int64(50), kind: kInt, min: 1, max: 10000, doc: "Partitions of the group store (Kafka's offsets.topic.num.partitions): a group's partition is fixed by this count, so it takes effect only when the store is created; a store created with another count refuses to start."},
	{name: "store.kind", def: "bbolt", kind: kString, oneOf: []string{"bbolt", "kafka"}, doc: "Where the group store lives: bbolt, the file coordhost.db under data.dir; kafka, a compacted topic of the external cluster (store.kafka.topic), one topic partition per store partition (dataplane.mode=external only)."},
	{name: "store.kafka.topic", def: "__coordhost_state", kind: kString, doc: "store.kind=kafka: the state topic, created when missing (compacted, store.partitions partitions); an existing topic with another partition count or not compacted refuses to start."},
	{name: "store.kafka.replication.factor", def: int64(-1), kind: kInt, min: -1, max: 32767, doc: "store.kind=kafka: replication factor of a state topic coordhost creates; -1: the cluster's default.replication.factor."},
	{name: "store.kafka.min.insync.replicas", def: int64(1), kind: kInt, min: 1, max: 32767, doc: "store.kind=kafka: min.insync.replicas of a state topic coordhost creates (appends are written with acks=all)."},
	{name: "cluster.id", def: "", kind: kString, doc: "store.kind=kafka: the coordhost cluster this node belongs to; nodes with one cluster.id share the state topic's partitions through the consumer group coordhost-<cluster.id>. Empty: this node loads every partition (a single node)."},
	{name: "cluster.node.id", def: "", kind: kString, doc: "With cluster.id: this node's name in logs and GET /v1/cluster; empty: the host name."},
	{name: "cluster.node.broker.id", def: int64(-1), kind: kInt, min: -1, max: 1999999999, doc: "With cluster.id: the synthetic broker id this node answers FindCoordinator and Metadata with, within [1000000000, 1999999999] (the backing cluster's broker ids must stay below 1000000000); -1: 1000000000 + FNV-1a(cluster.node.id) mod 1000000000. Every node of a cluster needs its own."},
	{name: "cluster.ownership.session.timeout.ms", def: int64(10000), kind: kInt, min: 1000, max: 1800000, doc: "With cluster.id: session timeout of the ownership group; a node that stops heartbeating loses its partitions to the others after it (within the broker's group.min/max.session.timeout.ms)."},
	{name: "cluster.ownership.lease.margin.ms", def: int64(2000), kind: kInt, min: 1, max: 1800000, doc: "With cluster.id: a node answers for its partitions only until its last accepted ownership heartbeat's send time + session timeout - this margin (monotonic clock); must be below the session timeout."},
	{name: "runtime.workers", def: int64(0), kind: kInt, min: 0, max: 1024, doc: "Goroutines that run the partitions' event loops; 0: GOMAXPROCS."},
	{name: "runtime.procs", def: int64(-1), kind: kInt, min: -1, max: 1024, doc: "coordhost serve: GOMAXPROCS of the process; -1: Go's default; 0: one while the process uses less than half a core, Go's default once it uses more (opt-in); N: GOMAXPROCS=N (a GOMAXPROCS environment variable overrides all of these)."},
	{name: "runtime.pipeline", def: int64(4), kind: kInt, min: 1, max: 64, doc: "Rounds of one partition whose appends may be in flight while it steps the next; responses still wait for their round to be durable. 1: one round at a time."},
	{name: "runtime.max.queued.per.group", def: int64(1024), kind: kInt, min: 1, max: 1 << 20, doc: "Requests of one group that may wait in its partition's queue; more are answered COORDINATOR_LOAD_IN_PROGRESS (retriable), so one group cannot hold unbounded memory or time."},
	{name: "runtime.group.quota.percent", def: int64(5), kind: kInt, min: 0, max: 100, doc: "Share of a store partition's step time one group may use over a 1 s window; a group over it whose steps held other work up in that time (another group's request queued behind one, or another partition waiting for a worker) gets throttle_time_ms in its responses, its client connection is not read until that time passes, and its queued requests are stepped one a round after the other groups' (none of which applies on a connection shared with other groups). 0 or 100: no quota."},
	{name: "runtime.group.max.throttle.ms", def: int64(1000), kind: kInt, min: 1, max: 3600000, doc: "Longest throttle a group over its quota gets; lowered to a quarter of the smallest session timeout the configuration allows (group.min.session.timeout.ms, streams.session.timeout.ms, consumer.session.timeout.ms), so a throttled member is never expired for it."},
	{name: "runtime.max.groups", def: int64(100000), kind: kInt, min: 0, max: math.MaxInt32, doc: "Groups the process holds; each store partition holds at most its share (rounded up), and a join that would create a group beyond it is answered COORDINATOR_NOT_AVAILABLE (retriable). 0: no cap, as in Kafka."},
	{name: "dataplane.mode", def: "embedded", kind: kString, oneOf: []string{"embedded", "external"}, doc: "embedded: an in-process single-node cluster under data.dir; external: the Kafka cluster at dataplane.bootstrap."},
	{name: "dataplane.bootstrap", def: []string{}, kind: kList, doc: "External cluster brokers (host:port, comma-separated in the environment)."},
	{name: "dataplane.tls.enabled", def: false, kind: kBool, doc: "External: connect to the cluster over TLS (coordhost's own connections and every client's upstream connection)."},
	{name: "dataplane.tls.ca.file", def: "", kind: kString, doc: "External TLS: PEM CA bundle to verify brokers; empty: the system roots."},
	{name: "dataplane.tls.server.name", def: "", kind: kString, doc: "External TLS: name to verify broker certificates against; empty: each broker's host."},
	{name: "dataplane.sasl.mechanism", def: "none", kind: kString, oneOf: []string{"none", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, doc: "External: SASL mechanism of coordhost's own admin connection (offset storage, topic metadata). Client connections authenticate themselves: their SASL handshake passes through to the cluster."},
	{name: "dataplane.sasl.username", def: "", kind: kString, doc: "External SASL: coordhost's user."},
	{name: "dataplane.sasl.password", def: "", kind: kString, doc: "External SASL: coordhost's password."},
	{name: "dataplane.authorization.cache.ttl", def: "5s", kind: kDuration, doc: "External: how long one client connection reuses an authorization decision its cluster gave (per resource and operation); 0 asks the cluster for every group request."},
	{name: "dataplane.offsets.identity", def: "client", kind: kString, oneOf: []string{"client", "coordhost"}, doc: "External, with dataplane.sasl.mechanism: whose identity writes allowed offsets (OffsetCommit, TxnOffsetCommit, OffsetDelete, and the offsets of a deleted group) to the cluster. client: a connection logged in as the client's principal with a delegation token coordhost creates for it, so the cluster refuses a write it would refuse that principal and nothing is written under coordhost's identity (needs a SCRAM dataplane.sasl.mechanism, delegation tokens enabled on the cluster and CREATE_TOKENS for coordhost's user; checked at start, which is refused otherwise); coordhost: coordhost's own connection, after the cluster's authorizer allowed the request for the client's principal. Without dataplane.sasl.mechanism (a cluster that authenticates no one) and on the embedded data plane coordhost's own connection writes them with either value (docs/SECURITY.md)."},
	{name: "dataplane.authorization.client.certificates", def: "refuse", kind: kString, oneOf: []string{"refuse", "delegation-tokens"}, doc: "External, with kafka.tls.client.ca.file and without client SASL: delegation-tokens authenticates each client certificate's upstream connection as the certificate's principal with a delegation token coordhost creates for it (needs a SCRAM dataplane.sasl.mechanism, delegation tokens enabled on the cluster and CREATE_TOKENS for coordhost's user); refuse: such a configuration does not start (docs/SECURITY.md)."},
	{name: "dataplane.partitions", def: int64(1), kind: kInt, min: 1, max: 10000, doc: "Embedded data plane: partitions of auto-created topics (Kafka's num.partitions)."},
	{name: "embedded.super.users", def: []string{}, kind: kList, doc: "Embedded data plane with embedded.sasl.users: principals (User:<name>) allowed everything (Kafka's super.users)."},
	{name: "embedded.allow.everyone.if.no.acl.found", def: false, kind: kBool, doc: "Embedded data plane with embedded.sasl.users: a group, topic or other resource without any ACL is allowed to every principal for group requests (Kafka's allow.everyone.if.no.acl.found; docs/SECURITY.md says where the embedded cluster differs)."},
	{name: "admin.listen", def: "127.0.0.1:9644", kind: kString, doc: "Admin HTTP address (/healthz, /readyz, /metrics, /v1/...). Loopback by default."},
	{name: "dataplane.authorization.host.acls", def: "refuse", kind: kString, oneOf: []string{"refuse", "ignore"}, doc: "External: what ACLs of the cluster restricted to a client host (host other than \"*\") do, which coordhost cannot enforce (the cluster sees coordhost's address). refuse: coordhost lists the cluster's ACLs at start (DescribeAcls; its own user needs DESCRIBE on the CLUSTER) and does not start while there is one, and one found later makes group requests answer COORDINATOR_NOT_AVAILABLE and /readyz fail until it is gone; ignore: a warning (docs/SECURITY.md)."},
	{name: "dataplane.authorization.host.acls.check.interval", def: "5m", kind: kDuration, doc: "External: how often the cluster's ACLs are listed again for ACLs restricted to a client host (dataplane.authorization.host.acls); 0: only at start."},
	{name: "admin.token", def: "", kind: kString, doc: "Bearer token (header `Authorization: Bearer TOKEN`, never a URL parameter) required on every admin endpoint but /healthz and /readyz when set; empty: reads are open (loopback only unless admin.insecure) and plugin management is disabled unless client certificates are configured."},
	{name: "admin.tls.cert.file", def: "", kind: kString, doc: "PEM certificate for TLS on the admin listener; empty: plain HTTP."},
	{name: "admin.tls.key.file", def: "", kind: kString, doc: "PEM private key matching admin.tls.cert.file."},
	{name: "admin.tls.client.ca.file", def: "", kind: kString, doc: "PEM CA bundle; a client certificate it verifies authenticates like the token (mTLS). Needs admin.tls.cert.file."},
	{name: "admin.insecure", def: false, kind: kBool, doc: "Allow admin.listen on a non-loopback address without admin.token (or admin.tls.client.ca.file) and TLS. Off: such a configuration refuses to start."},
	{name: "admin.history.targets", def: int64(20), kind: kInt, min: 1, max: 1000, doc: "Targets the rebalance history keeps per group (GET /v1/groups/{id}/history)."},
	{name: "admin.history.inputs", def: false, kind: kBool, doc: "The rebalance history also keeps each target's assignor lag input (the task end offsets and the offsets each process reported, served as `inputs`), which `coordhost simulate` replays the assignor's decisions from (docs/AB-TESTING.md); several hundred bytes more a target."},
	{name: "plugins.dir", def: "build/plugins", kind: kString, doc: "Directory of the built-in assignor plugins (assignor-sticky.wasm, assignor-ha.wasm, as `make plugins` writes them); a missing file runs the native Go build of the same assignor, with a warning."},
	{name: "plugins.load.dirs", def: []string{}, kind: kList, doc: "Directories the admin API may load plugin files from (POST/PUT /v1/plugins/{name}, by file name or absolute path inside them); empty: plugins.dir only."},
	{name: "plugins.max.bytes", def: int64(64 << 20), kind: kInt, min: 1024, max: 1 << 30, doc: "Largest plugin module file read; only regular files are read."},
	{name: "plugins.fallback", def: "sticky", kind: kString, oneOf: []string{"sticky", "ha"}, doc: "Assignor whose native build answers when a plugin assignor fails (trap, deadline, invalid output)."},
	{name: "log.level", def: "info", kind: kString, oneOf: []string{"debug", "info", "warn", "error"}, doc: "Log level."},
	{name: "log.format", def: "text", kind: kString, oneOf: []string{"text", "json"}, doc: "Log format (log/slog text or JSON)."},
	{name: "shutdown.timeout", def: "30s", kind: kDuration, doc: "On SIGTERM/SIGINT: how long in-flight requests may finish before connections are closed."},
}

// parse converts a raw value (from YAML, the environment or a flag) to the
// key's type, or says why it cannot, naming the key and the value.
func (k key) parse(raw any) (any, error) {
	bad := func(why string) error { return fmt.Errorf("config: %s = %#v: %s", k.name, raw, why) }
	switch k.kind {
	case kInt:
		var n int64
		switch v := raw.(type) {
		case int:
			n = int64(v)
		case int64:
			n = v
		case float64:
			if v != math.Trunc(v) || math.Abs(v) > 1<<62 {
				return nil, bad("not an integer")
			}
			n = int64(v)
		case string:
			p, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return nil, bad("not an integer")
			}
			n = p
		default:
			return nil, bad("not an integer")
		}
		if n < k.min || n > k.max {
			return nil, bad(fmt.Sprintf("out of range [%d, %d]", k.min, k.max))
		}
		return n, nil
	case kDuration:
		s, ok := raw.(string)
		if !ok {
			return nil, bad(`not a duration (write e.g. "30s" or "10m")`)
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, bad(`not a positive duration (write e.g. "30s" or "10m")`)
		}
		return d, nil
	case kList:
		switch v := raw.(type) {
		case string:
			var out []string
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
			return out, nil
		case []string:
			return v, nil
		case []any:
			out := make([]string, 0, len(v))
			for _, e := range v {
				s, ok := e.(string)
				if !ok {
					return nil, bad("not a list of strings")
				}
				out = append(out, s)
			}
			return out, nil
		}
		return nil, bad("not a list of strings")
	case kBool:
		switch v := raw.(type) {
		case bool:
			return v, nil
		case string:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, bad("not a boolean")
			}
			return b, nil
		}
		return nil, bad("not a boolean")
	default:
		s, ok := raw.(string)
		if !ok {
			return nil, bad("not a string")
		}
		if len(k.oneOf) > 0 && !contains(k.oneOf, s) {
			return nil, bad("must be one of " + strings.Join(k.oneOf, ", "))
		}
		return s, nil
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
