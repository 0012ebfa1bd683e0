package host

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/gateway"
	"github.com/coordhost/coordhost/host/identity"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
)

// StoreFile is the store's file name inside the data directory.
const StoreFile = "coordhost.db"

// Options configures a Server.
type Options struct {
	Config *config.Config
	// Coordinator builds the group coordinator, with the admin routes of
	// its components, once the store and the data plane are open (and
	// before any listener or the admin server accepts a client); nil uses
	// Unwired. If the coordinator has a Shutdown(context.Context) error
	// method, it is called first on drain (so requests it parked are
	// answered rather than waited for), then the listeners drain, then the
	// data plane and the store close.
	Coordinator func(*Server) (Wiring, error)
	Log         *slog.Logger
	// RecordLog, when set, is the record log the coordinator's partitions
	// run on instead of the store under data.dir (which is then not
	// opened); the server does not close it.
	RecordLog RecordLog
}

// Wiring is what a coordinator factory built: the group coordinator and
// the admin routes that serve its components. Start mounts the routes on
// the admin server it starts afterwards; nothing is written back into
// another component once it is built.
type Wiring struct {
	Coordinator GroupCoordinator
	// Quota, when set, is the coordinator's per-group quota, which the
	// listeners apply to large requests before reading them.
	Quota wire.GroupQuota
	// GroupsAPI and PluginsAPI serve the admin /v1/groups and /v1/plugins
	// routes; nil answers 501.
	GroupsAPI, PluginsAPI http.Handler
	// ClusterAPI serves GET /v1/cluster (nil: no cluster, 501).
	ClusterAPI http.Handler
	// TopicsCreated, when set, is called (without blocking) each time a
	// CreateTopics passing through coordhost created a topic, so the
	// coordinator learns of it before its next periodic refresh.
	TopicsCreated func()
	// CoordinatorNodes, when set, lists the coordhost cluster's nodes,
	// which every Metadata response includes (docs/SCALE-OUT.md).
	CoordinatorNodes func() []kmsg.MetadataResponseBroker
}

// Server is a running coordhost: the durable store, the data plane, one
// Kafka listener per data-plane node and the admin HTTP server.
type Server struct {
	wiring  Wiring
	cfg     *config.Config
	log     *slog.Logger
	store   *store.Store
	rlog    RecordLog    // Options.RecordLog
	limits  *wire.Limits // shared by every Kafka listener
	dp      *gateway.DataPlane
	table   *wire.Table
	metrics *admin.Metrics
	admin   *admin.Server
	tls     *tls.Config
	// certLogin logs client certificates in upstream (nil: not configured).
	certLogin *wire.CertLogin
	// offsetClients write offsets as the client's principal
	// (dataplane.offsets.identity=client; nil: coordhost's connection).
	offsetClients *gateway.PrincipalClients
	ready         atomic.Bool
	// startCtx is Start's context, for the coordinator's start-up I/O.
	startCtx context.Context

	stopOnce sync.Once
	stopErr  error

	mu        sync.Mutex
	listeners map[int32]*listener
	order     []int32 // node ids in listener creation order
	// reserved are listener sockets bound before their listener starts
	// (reserveFirst).
	reserved map[int32]net.Listener
}

type listener struct {
	srv  *wire.Server
	host string
	port int32
}

// Start opens the store (a damaged store fails start), starts the data
// plane, the Kafka listeners and the admin server.
func Start(ctx context.Context, o Options) (_ *Server, err error) {
	cfg := o.Config
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: o.Log, metrics: admin.NewMetrics(), listeners: make(map[int32]*listener), startCtx: ctx, rlog: o.RecordLog}
	defer func() {
		if err != nil {
			s.closeAll(context.Background())
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", cfg.DataDir, err)
	}
	if s.tls, err = loadTLS(cfg.Kafka); err != nil {
		return nil, err
	}
	if s.pollerMode() != wire.PollerOff {
		s.pollerMetrics()
	}
	s.limits = wire.NewLimits(cfg.Kafka.QueuedMaxRequestBytes, cfg.Kafka.MaxConnections, cfg.Kafka.MaxConnectionsPerIP).
		WithLargeFrameRate(cfg.Kafka.LargeFrameBytesPerSecond)
	if cfg.Store.Kind != "kafka" && s.rlog == nil { // the kafka store is opened with the coordinator (stateTopicLog)
		if err := s.openStore(); err != nil {
			return nil, err
		}
	}
	if err := s.openDataPlane(ctx); err != nil {
		return nil, err
	}
	s.table = wire.NewTable(s.dp.Versions())
	if !cfg.DataPlane.Embedded && !wire.ServesConsumerGroups(s.dp.Versions(), s.dp.Features()) {
		// Consumer groups are served in front of an external cluster only
		// when the cluster serves them too (docs/SECURITY.md).
		s.table = s.table.Without(wire.ConsumerGroupKeys...)
	}
	if o.Coordinator == nil {
		s.wiring = Wiring{Coordinator: &Unwired{Log: o.Log}}
	} else if s.wiring, err = o.Coordinator(s); err != nil {
		return nil, fmt.Errorf("group coordinator: %w", err)
	}
	if s.wiring.Coordinator == nil {
		return nil, errors.New("group coordinator: the factory returned no coordinator")
	}
	if s.store != nil {
		if err := s.store.Verified(); err != nil { // whatever the factory did with the store
			return nil, err
		}
	}
	for _, node := range s.dp.Nodes() {
		if _, _, err := s.advertise(node); err != nil {
			return nil, err
		}
	}
	if err := s.startAdmin(); err != nil {
		return nil, err
	}
	s.ready.Store(true)
	s.log.Info("coordhost is serving", "kafka", s.KafkaAddr(), "admin", s.AdminAddr(), "data_dir", cfg.DataDir, "embedded_data_plane", cfg.DataPlane.Embedded)
	return s, nil
}

func (s *Server) openStore() error {
	path := filepath.Join(s.cfg.DataDir, StoreFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		dp := filepath.Join(s.cfg.DataDir, "dataplane")
		if ents, _ := os.ReadDir(dp); len(ents) > 0 {
			return fmt.Errorf("store %s: %w: the file is missing but the embedded data plane's directory %s is not empty, so this data directory was used before "+
				"(restore the store from a backup, or run `coordhost repair` with this configuration to start with an empty store)", path, store.ErrMissing, dp)
		}
	}
	st, err := store.OpenForLoad(path) // its last check runs beside the replay; Verified before serving
	if err != nil {
		return err
	}
	s.store = st
	n := st.RecordsAtOpen() // Open checked every record's checksum
	s.log.Info("store opened", "path", st.Path(), "records", n)
	s.metrics.Gauge("store_records_at_start", "Records found in the store at start.", func() float64 { return float64(n) })
	return nil
}

// embeddedWarning is logged at every start on the embedded data plane: it
// has no transaction log, so exactly-once is not kept across a crash of
// the process (docs/RELIABILITY.md, "The embedded data plane"). The figure
// is `make soak-embedded`'s, against `make soak`'s on real Kafka 4.4.
const embeddedWarning = "the embedded data plane is for development and tests: exactly-once does not survive a kill of coordhost " +
	"(measured: wrong or duplicate results after 19 of 20 kill -9s under a Kafka Streams exactly_once_v2 app, 0 of 20 in front of Kafka 4.4; docs/RELIABILITY.md); " +
	"use dataplane.mode=external in production"

func (s *Server) openDataPlane(ctx context.Context) error {
	gc := gateway.Config{
		Embedded: s.cfg.DataPlane.Embedded, Bootstrap: s.cfg.DataPlane.Bootstrap, Partitions: s.cfg.DataPlane.Partitions,
		Advertise: s.advertise, Log: s.log, TopicsCreated: s.topicsCreated,
		CoordinatorNodes: s.coordinatorNodes,
	}
	if gc.Embedded {
		gc.DataDir = filepath.Join(s.cfg.DataDir, "dataplane")
		s.log.Warn(embeddedWarning)
		gc.Security = embeddedSecurity(s.cfg.Embedded)
	}
	var err error
	if gc.TLS, err = dataPlaneTLS(s.cfg.DataPlane); err != nil {
		return err
	}
	gc.SASL = dataPlaneSASL(s.cfg.DataPlane)
	dp, err := gateway.Open(ctx, gc)
	if err != nil {
		return err
	}
	s.dp = dp
	tokens := authz.NewTokens(func(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
		return dp.Admin().Request(ctx, req)
	}, nil)
	if s.cfg.DataPlane.CertTokens { // client certificates log in upstream as their principal
		s.certLogin = &wire.CertLogin{Mechanism: s.cfg.DataPlane.SASLMechanism, Credentials: tokens.For}
	}
	return s.offsetsIdentity(ctx, tokens)
}

// topicsCreated passes the data plane's topic-creation signal to the
// coordinator. The data plane calls it only on client links, which exist
// once the listeners started, after the wiring was built.
func (s *Server) topicsCreated() {
	if f := s.wiring.TopicsCreated; f != nil {
		f()
	}
}

// coordinatorNodes passes the coordinator's cluster nodes to the data
// plane's Metadata responses (called on client links only, once the
// wiring is built).
func (s *Server) coordinatorNodes() []kmsg.MetadataResponseBroker {
	if f := s.wiring.CoordinatorNodes; f != nil {
		return f()
	}
	return nil
}

// advertise returns the listener address of data-plane node, starting a
// listener for it on first use: the first node gets kafka.listen, later
// ones the following ports (or ephemeral ports when kafka.listen's is 0).
func (s *Server) advertise(node int32) (string, int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.listeners[node]; ok {
		return l.host, l.port, nil
	}
	ln, err := s.bindLocked(node)
	if err != nil {
		return "", 0, err
	}
	delete(s.reserved, node)
	adv := s.advertisedHost()
	port := ln.Addr().(*net.TCPAddr).Port
	var begin wire.BeginFunc
	if b, ok := s.wiring.Coordinator.(interface {
		Begin(context.Context, *wire.Request) (kmsg.Response, wire.Wait, error)
	}); ok { // the event loop itself, no authorizer in front of it
		begin = b.Begin
	}
	srv := wire.NewServer(ln, wire.Config{
		Advertised: wire.Broker{NodeID: node, Host: adv, Port: int32(port)}, Features: s.dp.Features(),
		Table: s.table, MaxRequestBytes: s.cfg.Kafka.MaxRequestBytes, IdleTimeout: s.cfg.Kafka.IdleTimeout, TLS: s.tls,
		Limits: s.limits, SASLRequired: s.cfg.Kafka.SASLRequired || s.cfg.Embedded.Enabled(), PreAuthMaxRequestBytes: s.cfg.Kafka.SASLMaxReceiveBytes,
		MaxReauth: s.cfg.Kafka.MaxReauth, CertLogin: s.certLogin,
		MaxTopologySize: func(group string) int32 { return s.cfg.Groups.For(group).StreamsMaxTopologySize }, Quota: s.wiring.Quota,
		Dial: func(ctx context.Context) (wire.Upstream, error) { return s.dp.Dial(ctx, node) }, ForwardsFrames: s.dp.ForwardsFrames(),
		Group: s.wiring.Coordinator.Handle, Begin: begin, Poller: s.pollerMode(), Log: s.log.With("listener", ln.Addr().String(), "node", node), Observer: s.metrics,
	})
	l := &listener{srv: srv, host: adv, port: int32(port)}
	s.listeners[node] = l
	s.order = append(s.order, node)
	s.log.Info("kafka listener started", "addr", ln.Addr().String(), "advertised", net.JoinHostPort(l.host, strconv.Itoa(int(l.port))), "data_plane_node", node)
	return l.host, l.port, nil
}

// pollerMode is kafka.poller for the listeners: off when runtime.procs
// runs the process on one P, now or at times (the governor), where the
// poller's goroutine would keep the only P while it waits.
func (s *Server) pollerMode() wire.PollerMode {
	m, err := wire.ParsePollerMode(s.cfg.Kafka.Poller)
	if err != nil || s.cfg.Procs == 0 || s.cfg.Procs == 1 {
		return wire.PollerOff // the value was checked with the configuration
	}
	return m
}

// pollerMetrics registers the process's poller's metrics.
func (s *Server) pollerMetrics() {
	count := func(f func(wire.PollerStats) int64) func() float64 {
		return func() float64 { return float64(f(wire.ReadPollerStats())) }
	}
	s.metrics.Gauge("kafka_poller_engaged", "1 while connections move into the process's poller (kafka.poller).", func() float64 {
		if wire.ReadPollerStats().Engaged {
			return 1
		}
		return 0
	})
	s.metrics.Counter("kafka_poller_served_total", "Requests answered on the process's poller's goroutine.", count(func(p wire.PollerStats) int64 { return p.Served }))
	s.metrics.Counter("kafka_poller_handed_back_total", "Times a parked connection went back to its own goroutine.", count(func(p wire.PollerStats) int64 { return p.HandedBack }))
	s.metrics.Counter("kafka_poller_engagements_total", "Times the process's poller engaged.", count(func(p wire.PollerStats) int64 { return p.Engagements }))
	s.metrics.Gauge("kafka_poller_request_cpu_seconds", "CPU time a request it answered cost the process's poller's thread, over its recent time slices.", func() float64 {
		return wire.ReadPollerStats().RequestCPU.Seconds()
	})
	s.metrics.Counter("kafka_poller_saturations_total", "Times the process's poller stopped serving for not keeping up.", count(func(p wire.PollerStats) int64 { return p.Saturations }))
}

// bindLocked binds the listener socket of data-plane node, or returns
// the one reserve bound for it.
func (s *Server) bindLocked(node int32) (net.Listener, error) {
	if ln, ok := s.reserved[node]; ok {
		return ln, nil
	}
	host, portStr, _ := net.SplitHostPort(s.cfg.Kafka.Listen)
	base, _ := strconv.Atoi(portStr)
	port := 0
	if base != 0 {
		port = base + len(s.order) + len(s.reserved)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("kafka listener for data-plane node %d: %w", node, err)
	}
	return ln, nil
}

// reserveFirst binds the first data-plane node's listener socket before
// the coordinator is built and returns the address clients will reach it
// at: a cluster node advertises it to the other nodes (docs/SCALE-OUT.md).
func (s *Server) reserveFirst() (string, int32, error) {
	nodes := s.dp.Nodes()
	if len(nodes) == 0 {
		return "", 0, errors.New("kafka listener: the data plane has no node")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserved == nil {
		s.reserved = map[int32]net.Listener{}
	}
	ln, err := s.bindLocked(nodes[0])
	if err != nil {
		return "", 0, err
	}
	s.reserved[nodes[0]] = ln
	return s.advertisedHost(), int32(ln.Addr().(*net.TCPAddr).Port), nil
}

// advertisedHost is the host clients see in every broker address.
func (s *Server) advertisedHost() string {
	host, _, _ := net.SplitHostPort(s.cfg.Kafka.Listen)
	adv := s.cfg.Kafka.AdvertisedHost
	if adv == "" {
		adv = host
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			adv = "127.0.0.1"
			s.log.Warn("kafka.listen binds every interface but kafka.advertised.host is empty: advertising 127.0.0.1")
		}
	}
	return adv
}

func (s *Server) startAdmin() error {
	ln, err := net.Listen("tcp", s.cfg.Admin.Listen)
	if err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	s.admin, err = admin.Start(ln, admin.Options{
		Token: s.cfg.Admin.Token, Metrics: s.metrics, Config: s.cfg, Log: s.log,
		TLSCertFile: s.cfg.Admin.TLSCertFile, TLSKeyFile: s.cfg.Admin.TLSKeyFile,
		ClientCAFile: s.cfg.Admin.TLSClientCAFile, Insecure: s.cfg.Admin.Insecure,
		Groups: s.wiring.GroupsAPI, Plugins: s.wiring.PluginsAPI, Cluster: s.wiring.ClusterAPI,
		Ready: func() error {
			if !s.ready.Load() {
				return errors.New("starting or draining")
			}
			if r, ok := s.wiring.Coordinator.(interface{ Ready() error }); ok {
				return r.Ready()
			}
			return nil
		},
	})
	if err != nil {
		_ = ln.Close()
	}
	return err
}

// dataPlaneTLS is the client TLS configuration for an external cluster.
func dataPlaneTLS(c config.DataPlane) (*tls.Config, error) {
	if !c.TLS {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.TLSServerName}
	if c.TLSCAFile != "" {
		var err error
		if tc.RootCAs, err = certPool("dataplane.tls.ca.file", c.TLSCAFile); err != nil {
			return nil, err
		}
	}
	return tc, nil
}

// certPool reads the PEM CA bundle file named by config key.
func certPool(key, file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s %s: no PEM certificate in it", key, file)
	}
	return pool, nil
}

// dataPlaneSASL is coordhost's own SASL mechanism for an external cluster.
func dataPlaneSASL(c config.DataPlane) sasl.Mechanism {
	switch c.SASLMechanism {
	case "PLAIN":
		return plain.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsSha512Mechanism()
	}
	return nil
}

func loadTLS(k config.Kafka) (*tls.Config, error) {
	if k.TLSCertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(k.TLSCertFile, k.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("kafka TLS (kafka.tls.cert.file %s, kafka.tls.key.file %s): %w", k.TLSCertFile, k.TLSKeyFile, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if k.TLSClientCAFile != "" { // Kafka's ssl.client.auth=required
		if tc.ClientCAs, err = certPool("kafka.tls.client.ca.file", k.TLSClientCAFile); err != nil {
			return nil, err
		}
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// KafkaAddr is the first (bootstrap) Kafka listener's address.
func (s *Server) KafkaAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) == 0 {
		return ""
	}
	return s.listeners[s.order[0]].srv.Addr().String()
}

// AdminAddr is the admin server's address.
func (s *Server) AdminAddr() string {
	if s.admin == nil {
		return ""
	}
	return s.admin.Addr().String()
}

// Store is the durable record log (for the event loop).
func (s *Server) Store() *store.Store { return s.store }

// DataPlane is the data-plane gateway (for the event loop's forwarding helpers).
func (s *Server) DataPlane() *gateway.DataPlane { return s.dp }

// Table is the served version table.
func (s *Server) Table() *wire.Table { return s.table }

// Shutdown drains: readiness turns false, the group coordinator makes its
// last round durable and answers what it parked, listeners stop accepting
// and finish the requests in flight (until ctx ends), then the data plane
// is flushed and closed and the store closed. Only the first call drains;
// later ones (and concurrent ones, once it is done) return its result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.ready.Store(false)
		s.log.Info("draining")
		s.stopErr = s.closeAll(ctx)
		s.log.Info("stopped", "err", s.stopErr)
	})
	return s.stopErr
}

func (s *Server) closeAll(ctx context.Context) error {
	var errs []error
	s.mu.Lock()
	ls := make([]*listener, 0, len(s.listeners))
	for _, l := range s.listeners {
		ls = append(ls, l)
	}
	for node, ln := range s.reserved { // bound, never started
		ln.Close()
		delete(s.reserved, node)
	}
	s.mu.Unlock()
	// The coordinator stops first: its last round is made durable and
	// answered, and requests parked in a rebalance (which could wait out a
	// rebalance timeout) are answered NOT_COORDINATOR, so the listeners'
	// drain below does not wait for them.
	if d, ok := s.wiring.Coordinator.(interface{ Shutdown(context.Context) error }); ok {
		if err := d.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("group coordinator: %w", err))
		}
	}
	for _, l := range ls {
		if err := l.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("kafka listener %s: %w", l.srv.Addr(), err))
		}
	}
	if s.admin != nil {
		if err := s.admin.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("admin: %w", err))
		}
	}
	if s.offsetClients != nil {
		s.offsetClients.Close()
	}
	if s.dp != nil {
		s.dp.Close()
	}
	if s.store != nil {
		if err := s.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("store: %w", err))
		}
	}
	return errors.Join(errs...)
}

// offsetsIdentity sets up whose identity writes offsets to an external
// data plane (identity.Setup).
func (s *Server) offsetsIdentity(ctx context.Context, tokens *authz.Tokens) (err error) {
	s.offsetClients, err = identity.Setup(ctx, s.cfg.DataPlane, s.dp, tokens, s.log)
	return err
}

// offsetsAs is loop.Deps.OffsetsAs with dataplane.offsets.identity=client
// (nil otherwise).
func (s *Server) offsetsAs() func(principal string) (offsets.Writer, error) {
	return identity.WriterOf(s.offsetClients)
}
