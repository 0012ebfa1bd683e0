package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/coordhost/coordhost/host/wire"
)

// Config configures the data plane.
type Config struct {
	// Embedded starts an in-process cluster (franz-go's kfake) instead of
	// connecting to Bootstrap.
	Embedded bool
	// DataDir holds the embedded cluster's data; writes are fsynced per batch.
	// Empty keeps the embedded cluster in memory (tests only).
	DataDir string
	// Partitions is the embedded cluster's default partition count for
	// auto-created topics.
	Partitions int
	// Bootstrap lists external brokers (host:port).
	Bootstrap []string
	// DialTimeout bounds connecting to a data-plane node (default 10 s).
	DialTimeout time.Duration
	// RequestTimeout bounds one forwarded request beyond the time the
	// request itself asks the broker to wait (default 30 s).
	RequestTimeout time.Duration
	// TLS, when set, secures every connection to an external cluster.
	TLS *tls.Config
	// SASL, when set, authenticates coordhost's own admin connection.
	// Client links are not authenticated by coordhost: a client's own
	// SaslHandshake/SaslAuthenticate pass through on its link.
	SASL sasl.Mechanism
	// Advertise returns the coordhost listener address clients must use for
	// data-plane node id, starting that listener if needed.
	Advertise func(node int32) (host string, port int32, err error)
	// CoordinatorNodes, when set, returns brokers to list in every
	// Metadata response after the data plane's own: the nodes of a
	// coordhost cluster, which FindCoordinator names (docs/SCALE-OUT.md).
	CoordinatorNodes func() []kmsg.MetadataResponseBroker
	// Log receives data-plane events.
	Log *slog.Logger
	// Security, when set (embedded only), gives the embedded data plane
	// SASL users and ACLs: clients must authenticate, and the embedded
	// cluster authorizes what coordhost forwards.
	Security *Security
	// TopicsCreated, when set, is called after the data plane answered a
	// CreateTopics sent on a client link (a forwarded one, or the
	// auto-creation of a Metadata request) with at least one topic
	// created. It runs on the forwarding goroutine and must not block.
	TopicsCreated func()
}

// DataPlane is coordhost's connection to the Kafka cluster that holds the
// data: topics, records, transactions and committed offsets.
type DataPlane struct {
	cfg     Config
	cluster *kfake.Cluster     // embedded only
	mem     *memListener       // embedded only: the cluster's only listener
	txns    *pendingTxnOffsets // embedded only: per-partition RequireStable
	// fetchSessions is embedded only: incremental fetches on sessions
	// restored without their topic ids are refused.
	fetchSessions *liveFetchSessions
	admin         *kgo.Client
	offsets       *offsetConns // coordhost's own offset forwards
	versions      map[int16]wire.VersionRange
	features      wire.Features

	mu    sync.Mutex
	nodes map[int32]string // node id -> real host:port

	topicsMu sync.Mutex
	byID     map[[16]byte]string
	byName   map[string][16]byte
}

// Open starts (embedded) or reaches (external) the data plane, learns its
// nodes and the API versions it serves.
func Open(ctx context.Context, cfg Config) (*DataPlane, error) {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Advertise == nil {
		return nil, errors.New("gateway: Config.Advertise is required")
	}
	d := &DataPlane{cfg: cfg, nodes: make(map[int32]string)}
	if cfg.Embedded {
		if err := d.startEmbedded(); err != nil {
			return nil, err
		}
		d.txns = newPendingTxnOffsets()
		d.fetchSessions = newLiveFetchSessions()
	}
	if len(d.cfg.Bootstrap) == 0 {
		return nil, errors.New("gateway: no data-plane bootstrap address")
	}
	opts := d.clientOpts()
	if d.cfg.SASL != nil {
		opts = append(opts, kgo.SASL(d.cfg.SASL))
	}
	admin, err := kgo.NewClient(opts...)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("gateway: admin client: %w", err)
	}
	d.admin = admin
	if d.offsets, err = newOffsetConns(opts); err != nil {
		d.Close()
		return nil, fmt.Errorf("gateway: offsets clients: %w", err)
	}
	if err := d.discover(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if d.cfg.Security != nil {
		if err := d.createACLs(ctx); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// clientOpts are the options of every client coordhost opens to the data
// plane, without its SASL login.
func (d *DataPlane) clientOpts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(d.cfg.Bootstrap...), kgo.ClientID("coordhost"),
		kgo.DialTimeout(d.cfg.DialTimeout), kgo.RequestTimeoutOverhead(d.cfg.RequestTimeout), kgo.RetryTimeoutFn(retryTimeout)}
	if d.cfg.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(d.cfg.TLS.Clone()))
	}
	if d.mem != nil {
		opts = append(opts, kgo.Dialer(d.mem.dialer))
	}
	return opts
}

// retryTimeout is kgo's default retry bound per request key, except that
// a client's TxnOffsetCommit is sent once: the cluster's answer, a
// retriable COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR too, goes back
// to the client, which retries it as Kafka's clients do. Retried here
// (for 30 s), it held the client past its own request timeout while the
// cluster kept answering that it cannot verify the producer's transaction.
func retryTimeout(key int16) time.Duration {
	switch kmsg.Key(key) {
	case kmsg.TxnOffsetCommit:
		return time.Nanosecond // shorter than any backoff: no retry (0 would mean no bound)
	case kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.ConsumerGroupHeartbeat:
		return 45 * time.Second // kgo's default session timeout
	}
	return 30 * time.Second
}

// startEmbedded starts the in-process cluster on an in-memory listener
// (it opens no port), with the configured users and ACLs.
func (d *DataPlane) startEmbedded() error {
	d.mem = newMemListener()
	opts := []kfake.Opt{
		kfake.NumBrokers(1), kfake.ClusterID("coordhost"), kfake.AllowAutoTopicCreation(),
		kfake.WithLogger(kfakeLogger{d.cfg.Log}), kfake.ListenFn(d.mem.Listen),
	}
	if s := d.cfg.Security; s != nil {
		sec, mech, err := s.securityOpts()
		if err != nil {
			return fmt.Errorf("gateway: embedded data plane security: %w", err)
		}
		opts, d.cfg.SASL = append(opts, sec...), mech
	}
	if d.cfg.Partitions > 0 {
		opts = append(opts, kfake.DefaultNumPartitions(d.cfg.Partitions))
	}
	if d.cfg.DataDir != "" {
		if err := removeSecurityFiles(d.cfg.DataDir); err != nil {
			return fmt.Errorf("gateway: embedded data plane in %q: %w", d.cfg.DataDir, err)
		}
		opts = append(opts, kfake.DataDir(d.cfg.DataDir), kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("gateway: starting the embedded data plane in %q: %w", d.cfg.DataDir, err)
	}
	d.cluster = c
	d.cfg.Bootstrap = []string{memAddr}
	return nil
}

// discover asks the data plane for its API versions, its features and its
// nodes, over the admin connection (authenticated when SASL is configured).
func (d *DataPlane) discover(ctx context.Context) error {
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "coordhost", "dev"
	avr, err := av.RequestWith(ctx, d.admin)
	if err != nil {
		return fmt.Errorf("gateway: ApiVersions from the data plane at %v: %w", d.cfg.Bootstrap, err)
	}
	if avr.ErrorCode != 0 {
		return fmt.Errorf("gateway: ApiVersions from the data plane at %v: %w", d.cfg.Bootstrap, kerr.ErrorForCode(avr.ErrorCode))
	}
	versions := make(map[int16]wire.VersionRange, len(avr.ApiKeys))
	for _, k := range avr.ApiKeys {
		versions[k.ApiKey] = wire.VersionRange{Min: k.MinVersion, Max: k.MaxVersion}
	}
	if d.cluster != nil {
		// Kafka advertises client telemetry (KIP-714) only when a
		// telemetry receiver is configured, which by default none is.
		// The embedded cluster always does, and subscribes every client
		// to every metric every 30 s with nothing to receive them.
		delete(versions, int16(kmsg.GetTelemetrySubscriptions))
		delete(versions, int16(kmsg.PushTelemetry))
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{}
	mdr, err := md.RequestWith(ctx, d.admin)
	if err != nil {
		return fmt.Errorf("gateway: Metadata from the data plane at %v: %w", d.cfg.Bootstrap, err)
	}
	d.mu.Lock()
	for _, b := range mdr.Brokers {
		d.nodes[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	d.mu.Unlock()
	d.versions = versions
	d.features = wire.Features{Supported: avr.SupportedFeatures, Finalized: avr.FinalizedFeatures, Epoch: avr.FinalizedFeaturesEpoch}
	return nil
}

// Versions returns the API version ranges the data plane advertises.
func (d *DataPlane) Versions() map[int16]wire.VersionRange { return d.versions }

// ForwardsFrames reports whether the links forward Produce and Fetch
// frames as they came (Link.SendFrame): to an external cluster, which
// reads them itself; the embedded one's requests are decoded.
func (d *DataPlane) ForwardsFrames() bool { return d.cluster == nil }

// Features returns the KIP-584 features the data plane advertised.
func (d *DataPlane) Features() *wire.Features { return &d.features }

// Nodes returns the data-plane node ids known so far, in order.
func (d *DataPlane) Nodes() []int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int32
	for id := range d.nodes {
		if id >= 0 {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (d *DataPlane) nodeAddr(node int32) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.nodes[node]
	return a, ok
}

// Admin returns the data plane's internal admin client (kgo), for helpers.
func (d *DataPlane) Admin() *kgo.Client { return d.admin }

// Close stops the admin and offsets clients and, when embedded, flushes and stops the
// in-process cluster.
func (d *DataPlane) Close() {
	if d.admin != nil {
		d.admin.Close()
	}
	if d.offsets != nil {
		d.offsets.close()
	}
	if d.cluster != nil {
		d.cluster.Close()
	}
	if d.mem != nil {
		d.mem.Close()
	}
}

// kfakeLogger sends kfake's warnings and errors to slog.
type kfakeLogger struct{ log *slog.Logger }

func (k kfakeLogger) Logf(level kfake.LogLevel, msg string, args ...any) {
	if level == kfake.LogLevelWarn && routineSlowEndTxn(msg, args) {
		if k.log.Enabled(context.Background(), slog.LevelDebug) {
			k.log.Debug("embedded data plane: " + fmt.Sprintf(msg, args...))
		}
		return
	}
	switch level {
	case kfake.LogLevelError:
		k.log.Error("embedded data plane: " + fmt.Sprintf(msg, args...))
	case kfake.LogLevelWarn:
		k.log.Warn("embedded data plane: " + fmt.Sprintf(msg, args...))
	}
}

// slowEndTxn is the budget below which kfake's "EndTxn slow" warning (its
// threshold is 5 ms) is routine: with synchronous writes every commit
// marker is fsync'd, which alone takes a few milliseconds.
const slowEndTxn = 100 // ms

// routineSlowEndTxn reports whether a kfake warning is an "EndTxn slow"
// under slowEndTxn (its third argument is the elapsed milliseconds).
func routineSlowEndTxn(msg string, args []any) bool {
	if !strings.HasPrefix(msg, "txn: EndTxn slow") || len(args) < 3 {
		return false
	}
	ms, ok := args[2].(int64)
	return ok && ms < slowEndTxn
}
