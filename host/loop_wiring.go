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
	c, err := core.New(cc)
	if err != nil {
		return nil, fmt.Errorf("coordinator config: %w", err)
	}
	// Compiled plugin code is cached under the data directory, so a restart
	// does not compile the built-in plugins again.
	pc := plugin.Config{CacheDir: filepath.Join(cfg.DataDir, "plugin-cache")}
	asg := NewAssignors(context.Background(), cfg.Plugins.Dir, cfg.Plugins.Fallback, pc, s.log)
	l, err := NewLoop(LoopDeps{
		Core: c, Store: s.store, DataPlane: s.dp, Assignors: asg, Metrics: s.metrics, Log: s.log.With("component", "loop"),
		Groups: cfg.Groups, HistoryTargets: cfg.Admin.HistoryTargets,
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
// matches) become the broker defaults, key by key as the key table binds
// them (config.Group.Core); the default assignor comes first in the
// assignor list, the other built-in ones after it.
func CoreConfig(cfg *config.Config) core.Config {
	cc := core.DefaultConfig()
	if cfg == nil || cfg.Groups == nil {
		return cc
	}
	cc = cfg.Groups.Defaults().Core(cc)
	cc.Assignors = []string{cc.Streams.AssignorName}
	for name := range BuiltinAssignors {
		if name != cc.Streams.AssignorName {
			cc.Assignors = append(cc.Assignors, name)
		}
	}
	return cc
}

// Metrics is the server's metrics registry.
func (s *Server) Metrics() *admin.Metrics { return s.metrics }

var _ http.Handler = (*groupsAPI)(nil)
