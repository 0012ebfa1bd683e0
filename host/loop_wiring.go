package host

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/plugin"
)

// NewCoordinator is the Options.Coordinator factory of a real server: it
// builds core from the configuration, loads the assignors, replays the
// store into core and starts the event loop, and installs the admin
// /v1/groups and /v1/plugins handlers.
func NewCoordinator(s *Server) (GroupCoordinator, error) {
	cfg := s.cfg
	cc := CoreConfig(cfg)
	if _, err := core.New(cc); err != nil {
		return nil, fmt.Errorf("coordinator config: %w", err)
	}
	// Compiled plugin code is cached under the data directory, so a restart
	// does not compile the built-in plugins again.
	pc := plugin.Config{CacheDir: filepath.Join(cfg.DataDir, "plugin-cache")}
	asg := NewAssignors(context.Background(), cfg.Plugins.Dir, cfg.Plugins.Fallback, pc, s.log)
	ctx := s.startCtx
	if ctx == nil {
		ctx = context.Background()
	}
	l, err := NewLoopContext(ctx, LoopDeps{
		NewCore: func() (*core.Coordinator, error) { return core.New(cc) },
		Store:   s.store, DataPlane: s.dp, Assignors: asg, Metrics: s.metrics, Log: s.log.With("component", "loop"),
		Groups: cfg.Groups,
	})
	if err != nil {
		asg.Close(context.Background())
		return nil, err
	}
	s.opts.GroupsAPI = l.GroupsHandler()
	s.opts.PluginsAPI = PluginsHandler(asg)
	return l, nil
}

// CoreConfig maps the configuration onto core's broker-wide settings: the
// groups.defaults values (the effective config of a group no glob
// matches) become the broker defaults.
func CoreConfig(cfg *config.Config) core.Config {
	cc := core.DefaultConfig()
	if cfg == nil || cfg.Groups == nil {
		return cc
	}
	d := cfg.Groups.Defaults()
	cc.Streams.SessionTimeoutMs = d.StreamsSessionTimeoutMs
	cc.Streams.HeartbeatIntervalMs = d.StreamsHeartbeatIntervalMs
	cc.Streams.NumStandbyReplicas = d.StreamsNumStandbyReplicas
	cc.Streams.NumWarmupReplicas = d.StreamsNumWarmupReplicas
	cc.Streams.AcceptableRecoveryLag = d.StreamsAcceptableRecoveryLag
	cc.Streams.ProbingIntervalMs = d.StreamsProbingIntervalMs
	cc.Streams.InitialRebalanceDelayMs = d.StreamsInitialRebalanceDelayMs
	cc.Streams.AssignmentIntervalMs = d.StreamsAssignmentIntervalMs
	cc.Streams.TaskOffsetIntervalMs = d.StreamsTaskOffsetIntervalMs
	cc.Streams.MaxSize = d.StreamsMaxSize
	cc.Streams.AssignorName = d.StreamsAssignorName
	cc.Assignors = []string{d.StreamsAssignorName}
	for name := range BuiltinAssignors {
		if name != d.StreamsAssignorName {
			cc.Assignors = append(cc.Assignors, name)
		}
	}
	if p, err := core.ParseMigrationPolicy(d.StreamsMigrationPolicy); err == nil {
		cc.StreamsMigrationPolicy = p
	}
	cc.Classic.InitialRebalanceDelayMs = d.InitialRebalanceDelayMs
	cc.Classic.MinSessionTimeoutMs = d.MinSessionTimeoutMs
	cc.Classic.MaxSessionTimeoutMs = d.MaxSessionTimeoutMs
	cc.Classic.MaxSize = d.MaxSize
	return cc
}

// StreamsOverrides is a group's effective streams configuration as core
// per-group overrides (every field set).
func StreamsOverrides(g config.Group) *core.StreamsGroupOverrides {
	return &core.StreamsGroupOverrides{
		MaxSize: &g.StreamsMaxSize, SessionTimeoutMs: &g.StreamsSessionTimeoutMs, HeartbeatIntervalMs: &g.StreamsHeartbeatIntervalMs,
		NumStandbyReplicas: &g.StreamsNumStandbyReplicas, InitialRebalanceDelayMs: &g.StreamsInitialRebalanceDelayMs,
		AssignmentIntervalMs: &g.StreamsAssignmentIntervalMs, AssignorName: &g.StreamsAssignorName,
		NumWarmupReplicas: &g.StreamsNumWarmupReplicas, AcceptableRecoveryLag: &g.StreamsAcceptableRecoveryLag,
		TaskOffsetIntervalMs: &g.StreamsTaskOffsetIntervalMs, ProbingIntervalMs: &g.StreamsProbingIntervalMs,
	}
}

// Metrics is the server's metrics registry.
func (s *Server) Metrics() *admin.Metrics { return s.metrics }

var _ http.Handler = (*groupsAPI)(nil)
