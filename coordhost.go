// Package coordhost embeds the coordhost Kafka group coordinator in a Go
// program: New builds a server from a configuration with every default
// wired (the data plane, the durable store, the coordinator's event loop,
// the built-in assignors and the admin server), Start or Serve runs it,
// Shutdown drains it. The coordhost command is this package behind flags.
//
// A configuration starts from config.Default (what `coordhost` runs with no
// file, environment or flags) or config.Load; options change what Go code
// adds: the data-plane address, a custom record log, in-process
// assignors, the plugins directory and the logger.
package coordhost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
)

// ErrClosed is returned by Start and Serve after Shutdown.
var ErrClosed = errors.New("coordhost: closed")

// Assignor is an in-process streams task assignor: it gets the same
// request a plugin gets (abi/SPEC.md) and must answer with a valid
// assignment. It runs on the assignor workers, never on the event loop.
type Assignor func(req *abi.AssignRequest) (*abi.AssignResponse, error)

// Option changes how New builds a Coordhost.
type Option func(*options)

type options struct {
	bootstrap  []string
	assignors  map[string]assign.Native
	pluginsDir *string
	log        *slog.Logger
	recordLog  RecordLog
}

// WithDataPlane puts coordhost in front of an existing Kafka cluster: the
// brokers at bootstrap (host:port) hold the data and the committed
// offsets instead of the embedded data plane.
func WithDataPlane(bootstrap ...string) Option {
	return func(o *options) { o.bootstrap = append([]string(nil), bootstrap...) }
}

// RecordLog is a record log coordhost can run its partitions on
// (WithRecordLog): a runtime.Log (host/runtime) that also records its
// partition count, since the partition of every group depends on it.
// Partitions returns the recorded count (0: none yet); Partition(n)
// records n on a log without a count, and on a log with one refuses any
// other n with an error wrapping ErrPartitionCount.
type RecordLog = host.RecordLog

// ErrPartitionCount is wrapped by Start's error when the record log or
// the store was created with a partition count other than the
// configuration's store.partitions.
var ErrPartitionCount = store.ErrPartitionCount

// WithRecordLog runs coordhost's partitions on log instead of the bbolt
// store under the data directory (which is then not opened): every
// record the coordinator writes is appended to log, and every partition
// is replayed from it at start. Before the first replay Start calls
// log.Partition with the configuration's store.partitions, so a log
// written with another count is refused.
// A failed append is answered NOT_COORDINATOR, as a failed store append
// is. coordhost never closes log. It cannot be combined with
// store.kind = "kafka".
func WithRecordLog(log RecordLog) Option { return func(o *options) { o.recordLog = log } }

// MemRecordLog returns l as a RecordLog whose partition count is recorded
// in memory beside it: for a log that lives no longer than the process,
// such as runtime.NewMemLog() or a runtime.FaultLog over one. A durable
// log must record its count durably itself.
func MemRecordLog(l runtime.Log) RecordLog { return &memRecordLog{Log: l} }

type memRecordLog struct {
	runtime.Log
	mu    sync.Mutex
	parts int
}

func (m *memRecordLog) Partitions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts
}

func (m *memRecordLog) Partition(n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case n < 1:
		return fmt.Errorf("partition count %d: must be at least 1", n)
	case m.parts == 0:
		m.parts = n
	case m.parts != n:
		return fmt.Errorf("%w: the log was written with %d partitions and cannot be run with %d", ErrPartitionCount, m.parts, n)
	}
	return nil
}

// WithAssignor adds an in-process task assignor under name; streams
// groups whose streams.assignor.name is name use it. The built-in names
// (sticky, ha) cannot be taken.
func WithAssignor(name string, a Assignor) Option {
	return func(o *options) {
		if o.assignors == nil {
			o.assignors = map[string]assign.Native{}
		}
		o.assignors[name] = assign.Native(a)
	}
}

// WithPluginsDir sets the directory of the built-in assignor plugins
// (plugins.dir); a missing .wasm there runs the assignor's native build.
func WithPluginsDir(dir string) Option { return func(o *options) { o.pluginsDir = &dir } }

// WithLogger sets the logger; without it coordhost logs nothing.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Coordhost is one embedded coordhost server.
type Coordhost struct {
	cfg  *config.Config
	opts options

	mu      sync.Mutex // held while starting
	srv     atomic.Pointer[host.Server]
	closing atomic.Bool
	stop    chan struct{} // closed by the first Shutdown
	done    chan struct{} // closed when that Shutdown has drained
	err     error         // the first Shutdown's result
}

// New validates cfg with the options applied and returns a Coordhost
// that is not started yet. cfg is copied; New does no I/O.
func New(cfg *config.Config, opts ...Option) (*Coordhost, error) {
	if cfg == nil {
		return nil, errors.New("coordhost: nil config (start from config.Default())")
	}
	c := &Coordhost{stop: make(chan struct{}), done: make(chan struct{})}
	for _, opt := range opts {
		opt(&c.opts)
	}
	own := *cfg
	if c.opts.bootstrap != nil {
		own.DataPlane.Embedded, own.DataPlane.Bootstrap = false, c.opts.bootstrap
	}
	if c.opts.pluginsDir != nil {
		own.Plugins.Dir = *c.opts.pluginsDir
	}
	if err := own.Validate(); err != nil {
		return nil, err
	}
	if c.opts.recordLog != nil && own.Store.Kind == "kafka" {
		return nil, errors.New(`coordhost: WithRecordLog cannot be combined with store.kind = "kafka" (the state topic is a record log of its own)`)
	}
	for name, a := range c.opts.assignors {
		if _, builtin := assign.Builtins[name]; builtin || name == "" || a == nil {
			return nil, fmt.Errorf("coordhost: WithAssignor(%q): the name is empty or built in, or the assignor is nil", name)
		}
	}
	if c.opts.log == nil {
		c.opts.log = slog.New(slog.DiscardHandler)
	}
	c.cfg = &own
	return c, nil
}

// Start opens the store (with WithRecordLog: checks the log's partition
// count instead) and the data plane, replays the store or the log, starts
// the event loop, the Kafka listeners and the admin server, and returns once
// they accept clients. ctx bounds start-up only; a Shutdown called during
// start-up cancels it too. Starting a started Coordhost does nothing;
// after Shutdown, Start returns ErrClosed.
func (c *Coordhost) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing.Load() {
		return ErrClosed
	}
	if c.srv.Load() != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	srv, err := host.Start(ctx, host.Options{Config: c.cfg, Log: c.opts.log,
		Coordinator: host.NewCoordinatorWith(c.opts.assignors), RecordLog: c.opts.recordLog})
	if err != nil {
		return err
	}
	c.srv.Store(srv)
	return nil
}

// Serve starts coordhost if it is not started, serves until ctx ends or
// Shutdown is called, and then drains (for at most the configuration's
// ShutdownTimeout when ctx ended). It returns the drain's error, or
// Start's.
func (c *Coordhost) Serve(ctx context.Context) error {
	if err := c.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		dctx, cancel := context.WithTimeout(context.Background(), c.cfg.ShutdownTimeout)
		defer cancel()
		return c.Shutdown(dctx)
	case <-c.stop:
		<-c.done
		return c.err
	}
}

// Shutdown drains coordhost: the event loop makes its last round durable
// and answers what it parked, the listeners finish the requests in flight
// (until ctx ends), then the data plane and the store close. Only the
// first call drains; every call returns its result once it is done (or
// ctx's error if ctx ends first). Shutdown before Start closes a Coordhost
// that never served.
func (c *Coordhost) Shutdown(ctx context.Context) error {
	if !c.closing.CompareAndSwap(false, true) {
		select {
		case <-c.done:
			return c.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	close(c.stop)
	c.mu.Lock() // waits for a Start in progress
	srv := c.srv.Load()
	c.mu.Unlock()
	if srv != nil {
		c.err = srv.Shutdown(ctx)
	}
	close(c.done)
	return c.err
}

// KafkaAddr is the address of the first (bootstrap) Kafka listener, ""
// before Start.
func (c *Coordhost) KafkaAddr() string {
	if s := c.srv.Load(); s != nil {
		return s.KafkaAddr()
	}
	return ""
}

// AdminAddr is the admin HTTP server's address, "" before Start.
func (c *Coordhost) AdminAddr() string {
	if s := c.srv.Load(); s != nil {
		return s.AdminAddr()
	}
	return ""
}
