package host

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/cluster"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store/kafkalog"
)

// NewCoordinator is the Options.Coordinator factory of a real server: it
// builds core from the configuration, loads the built-in assignors,
// replays the store into one core per partition, starts the event loop,
// and returns it with the admin /v1/groups and /v1/plugins handlers. In
// front of an external cluster the loop is wrapped in host/authz, so the
// cluster's authorizer decides every group request.
func NewCoordinator(s *Server) (Wiring, error) { return NewCoordinatorWith(nil)(s) }

// topicRefresh is the wired loop's periodic topic refresh (0: the
// loop's default); tests lengthen it.
var topicRefresh time.Duration

// NewCoordinatorWith is NewCoordinator with in-process assignors added to
// the built-in ones: a group whose streams.assignor.name is a key of
// custom runs that function on the assignor workers, like a built-in
// assignor's native build. A name already taken fails the factory.
func NewCoordinatorWith(custom map[string]assign.Native) func(*Server) (Wiring, error) {
	return func(s *Server) (Wiring, error) {
		cfg := s.cfg
		cc := CoreConfig(cfg)
		storeParts := 0
		switch {
		case s.rlog != nil:
			storeParts = s.rlog.Partitions()
		case s.store != nil:
			storeParts = s.store.Partitions()
		}
		cc.MaxGroups = partitionShare(cfg.MaxGroups, storeParts, cfg.StorePartitions)
		if _, err := core.New(cc); err != nil {
			return Wiring{}, fmt.Errorf("coordinator config: %w", err)
		}
		// Compiled plugin code is cached under the data directory, so a
		// restart does not compile the built-in plugins again.
		pc := plugin.Config{CacheDir: filepath.Join(cfg.DataDir, "plugin-cache"), MaxModuleBytes: cfg.Plugins.MaxBytes}
		asg := assign.New(context.Background(), cfg.Plugins.Dir, cfg.Plugins.Fallback, pc, s.log)
		if err := asg.AddNative(custom); err != nil {
			asg.Close(context.Background())
			return Wiring{}, err
		}
		reg := assign.NewConsumers(asg, cc.Consumer.Assignors[0])
		cc.Consumer.Registered = reg
		ctx := s.startCtx
		if ctx == nil {
			ctx = context.Background()
		}
		var hostACLs *authz.HostACLGuard
		var cut *authz.CutOver
		if !cfg.DataPlane.Embedded {
			var err error
			if hostACLs, err = checkHostACLs(ctx, s); err != nil {
				asg.Close(context.Background())
				return Wiring{}, err
			}
			if cut, err = cutOver(ctx, s); err != nil {
				asg.Close(context.Background())
				return Wiring{}, err
			}
		}
		own, err := ownership(s)
		if err != nil {
			asg.Close(context.Background())
			return Wiring{}, err
		}
		openLog := recordLog(s)
		if openLog == nil {
			openLog = stateTopicLog(ctx, s, own)
		}
		l, err := loop.NewContext(ctx, loop.Deps{
			NewCore: func() (*core.Coordinator, error) { return core.New(cc) },
			Store:   s.store, DataPlane: s.dp, Assignors: asg, Metrics: s.metrics, Log: s.log.With("component", "loop"),
			Groups: cfg.Groups, HistoryTargets: cfg.Admin.HistoryTargets, HistoryInputs: cfg.Admin.HistoryInputs, Partitions: cmp.Or(cfg.StorePartitions, storeParts), Workers: cfg.Workers, Pipeline: cfg.Pipeline, MaxQueuedPerGroup: cfg.MaxQueuedPerGroup,
			TopicRefresh: topicRefresh, OpenLog: openLog, Ownership: own, OffsetsAs: s.offsetsAs(),
			GroupQuotaPercent: quotaPercent(cfg.GroupQuotaPercent), MaxThrottle: cfg.ThrottleCap(),
			// in front of an authenticated cluster, internal topics are created as the client (host/authz)
			ClientCreatesInternalTopics: !cfg.DataPlane.Embedded && authenticatedUpstream(cfg),
		})
		if err != nil {
			asg.Close(context.Background())
			return Wiring{}, err
		}
		reg.SetNoter(l.NoteFallback)
		var gc GroupCoordinator = l
		switch {
		case !cfg.DataPlane.Embedded: // the external cluster's authorizer decides every group request
			gc = authz.New(l, authz.Config{TTL: cfg.DataPlane.AuthzCacheTTL, RequireAuth: authenticatedUpstream(cfg),
				Log: s.log.With("component", "authz"), HostACLs: hostACLs, CutOver: cut})
			if cfg.DataPlane.HostACLsInterval > 0 {
				hostACLs.Start(cfg.DataPlane.HostACLsInterval)
			}
		case cfg.Embedded.Enabled(): // the embedded data plane's ACLs, evaluated here
			gc, err = embeddedAuthz(l, cfg, s)
			if err != nil {
				asg.Close(context.Background())
				return Wiring{}, err
			}
		}
		w := Wiring{Coordinator: gc, Quota: l, TopicsCreated: l.TopicsCreated, GroupsAPI: l.GroupsHandler(), PluginsAPI: admin.PluginsHandler(asg, plugin.FilePolicy{Dirs: cfg.Plugins.PluginLoadDirs(), MaxBytes: cfg.Plugins.MaxBytes})}
		if own != nil {
			w.ClusterAPI, w.CoordinatorNodes = own.Handler(), func() []kmsg.MetadataResponseBroker { return metadataBrokers(own.Peers()) }
		}
		return w, nil
	}
}

// authenticatedUpstream reports whether every client connection
// authenticates to the external cluster before its group requests.
func authenticatedUpstream(cfg *config.Config) bool {
	return cfg.DataPlane.SASLMechanism != "" || cfg.Kafka.SASLRequired
}

// checkHostACLs lists the external cluster's ACLs over coordhost's own
// connection and fails start on ACLs restricted to a client host, unless
// dataplane.authorization.host.acls=ignore (docs/SECURITY.md).
func checkHostACLs(ctx context.Context, s *Server) (*authz.HostACLGuard, error) {
	g := authz.NewHostACLGuard(func(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
		return s.dp.Admin().Request(ctx, req)
	}, s.cfg.DataPlane.IgnoreHostACLs, s.log.With("component", "authz"))
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := g.Check(cctx); err != nil {
		return nil, err
	}
	s.metrics.Gauge("authz_host_acls", "ACLs of the cluster restricted to a client host at the last check (coordhost cannot enforce them).",
		func() float64 { return float64(g.Found()) })
	s.metrics.Gauge("authz_host_acls_blocked", "1 while group requests are refused because of ACLs restricted to a client host.",
		func() float64 {
			if g.Blocked() {
				return 1
			}
			return 0
		})
	return g, nil
}

// ownership is this node's membership of its cluster's ownership group
// (cluster.id with store.kind=kafka; nil otherwise: one node holds every
// partition).
func ownership(s *Server) (*cluster.Node, error) {
	cfg := s.cfg
	if cfg.Cluster.ID == "" || cfg.Store.Kind != "kafka" {
		return nil, nil
	}
	kc, err := StateTopicConfig(cfg, 0)
	if err != nil {
		return nil, err
	}
	node := cfg.Cluster.NodeID
	if node == "" {
		node, _ = os.Hostname()
	}
	broker := cfg.Cluster.BrokerID
	if broker < 0 {
		broker = cluster.BrokerIDFor(node)
	}
	if slices.Contains(s.dp.Nodes(), broker) {
		return nil, fmt.Errorf("cluster: this node's broker id %d is a broker of the data plane too; set cluster.node.broker.id to another", broker)
	}
	host, port, listeners, err := reserveListeners(s)
	if err != nil {
		return nil, err
	}
	return cluster.New(cluster.Config{ClientOpts: kc.ClientOpts, ClusterID: cfg.Cluster.ID, NodeID: node,
		BrokerID: broker, AdvertisedHost: host, AdvertisedPort: port, Listeners: listeners,
		Topic: cmp.Or(kc.Topic, kafkalog.DefaultTopic), SessionTimeout: cfg.Cluster.SessionTimeout, Margin: cfg.Cluster.LeaseMargin,
		Metrics: s.metrics, Log: s.log.With("component", "cluster")})
}

// reserveListeners binds this node's listener sockets for every
// data-plane broker known at start before the node joins the ownership
// group: the first data-plane broker's is the address the other nodes
// send clients to, and every one is advertised to them.
func reserveListeners(s *Server) (host string, port int32, ls []cluster.Listener, err error) {
	if host, port, err = s.reserveFirst(); err != nil {
		return "", 0, nil, err
	}
	nodes := s.dp.Nodes()
	s.mu.Lock()
	defer s.mu.Unlock()
	ls = append(ls, cluster.Listener{Upstream: nodes[0], Port: port})
	for _, n := range nodes[1:] {
		ln, err := s.bindLocked(n)
		if err != nil {
			return "", 0, nil, err
		}
		s.reserved[n] = ln
		ls = append(ls, cluster.Listener{Upstream: n, Port: int32(ln.Addr().(*net.TCPAddr).Port)})
	}
	return host, port, ls, nil
}

// metadataBrokers lists a cluster's nodes as Metadata brokers, each
// under its broker id and each of its other listeners under the id of
// that node and data-plane broker.
func metadataBrokers(peers []cluster.Peer) []kmsg.MetadataResponseBroker {
	out := make([]kmsg.MetadataResponseBroker, 0, len(peers))
	for _, peer := range peers {
		for _, p := range peer.Brokers() {
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = p.BrokerID, p.Host, p.Port
			out = append(out, b)
		}
	}
	return out
}

// stateTopicLog opens the record log in the external cluster's state
// topic when store.kind is kafka (nil otherwise: the store's log).
func stateTopicLog(ctx context.Context, s *Server, own *cluster.Node) func(int) (runtime.Log, func() error, error) {
	if s.cfg.Store.Kind != "kafka" {
		return nil
	}
	return func(parts int) (runtime.Log, func() error, error) {
		kc, err := StateTopicConfig(s.cfg, parts)
		if err != nil {
			return nil, nil, err
		}
		l, err := kafkalog.Open(ctx, kc)
		if err != nil {
			return nil, nil, err
		}
		if own != nil { // GET /v1/cluster shows each replay's progress
			own.SetProgress(l.ReplayProgress)
		}
		return l, l.Close, nil
	}
}

// RecordLog is a record log given to the server (Options.RecordLog)
// instead of the store under data.dir: a runtime.Log that records its
// partition count, as the store does, since the partition of every group
// depends on it.
type RecordLog interface {
	runtime.Log
	// Partitions returns the partition count recorded with the log, 0
	// when none is recorded yet (a new log).
	Partitions() int
	// Partition records n as the log's partition count, before the
	// first replay. A log that has a count already must refuse any
	// other n with an error wrapping store.ErrPartitionCount.
	Partition(n int) error
}

// recordLog opens Options.RecordLog (nil without one): it checks or
// records the partition count first; the server does not close it.
func recordLog(s *Server) func(int) (runtime.Log, func() error, error) {
	if s.rlog == nil {
		return nil
	}
	return func(parts int) (runtime.Log, func() error, error) {
		if err := s.rlog.Partition(parts); err != nil {
			return nil, nil, fmt.Errorf("record log: %w", err)
		}
		return s.rlog, nil, nil
	}
}

// StateTopicConfig is the configuration of the state topic log
// (store.kafka.*) of parts partitions on the external cluster of cfg,
// reached as coordhost's own connection is (dataplane.tls.*, .sasl.*).
func StateTopicConfig(cfg *config.Config, parts int) (kafkalog.Config, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.DataPlane.Bootstrap...), kgo.ClientID("coordhost")}
	tc, err := dataPlaneTLS(cfg.DataPlane)
	if err != nil {
		return kafkalog.Config{}, err
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if m := dataPlaneSASL(cfg.DataPlane); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return kafkalog.Config{ClientOpts: opts, Topic: cfg.Store.KafkaTopic, Partitions: parts,
		ReplicationFactor: cfg.Store.KafkaReplicationFactor, MinInsyncReplicas: cfg.Store.KafkaMinInsyncReplicas}, nil
}

// CoreConfig maps the configuration onto core's broker-wide settings: the
// groups.defaults values (the effective config of a group no glob
// matches) become the broker defaults, key by key as the key table binds
// them (config.Group.Core); the default assignor comes first in the
// assignor list, the other built-in ones after it.
func CoreConfig(cfg *config.Config) core.Config {
	cc := core.DefaultConfig()
	cc.Consumer.Assignors = assign.ConsumerAssignors()
	if cfg == nil || cfg.Groups == nil {
		return cc
	}
	cc = cfg.Groups.Defaults().Core(cc)
	cc.Assignors = []string{cc.Streams.AssignorName}
	for name := range assign.Builtins {
		if name != cc.Streams.AssignorName {
			cc.Assignors = append(cc.Assignors, name)
		}
	}
	return cc
}

// partitionShare is one partition's share of maxGroups (rounded up) over
// the store's partitions: its existing count, else the configured one.
func partitionShare(maxGroups, storeParts, configured int) int {
	parts := storeParts
	if parts == 0 {
		parts = configured
	}
	if parts <= 0 {
		parts = runtime.DefaultPartitions
	}
	return (maxGroups + parts - 1) / parts
}

// Metrics is the server's metrics registry.
func (s *Server) Metrics() *admin.Metrics { return s.metrics }

// quotaPercent is loop.Deps.GroupQuotaPercent for the config's
// runtime.group.quota.percent: 0 and 100 turn the quota off.
func quotaPercent(percent int) int {
	if percent <= 0 || percent >= 100 {
		return -1
	}
	return percent
}
