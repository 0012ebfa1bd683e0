package host

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/plugin"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

// NativeAssignor is an in-process assignor: the native build of a plugin's
// algorithm package.
type NativeAssignor func(req *abi.AssignRequest) (*abi.AssignResponse, error)

// BuiltinAssignors maps the built-in assignor names to their native builds
// (with the native probing policy of a module that exports one) and the
// .wasm file name `make plugins` writes for them.
var BuiltinAssignors = map[string]struct {
	Native NativeAssignor
	Probe  NativeProbe
	File   string
}{
	"sticky": {sticky.Assign, nil, "assignor-sticky.wasm"},
	"ha":     {ha.Assign, ha.Probe, "assignor-ha.wasm"},
}

// assignor is one configured assignor name: a loaded plugin (nil when the
// native build runs) and its fallback.
type assignor struct {
	name     string
	plugin   *plugin.Plugin
	path     string
	native   NativeAssignor // the same algorithm in-process, when built in
	probe    NativeProbe    // its probing policy in-process, when built in
	hasProbe atomic.Bool    // the loaded plugin exports coordhost_probe (read at load)
	// hasPartitions: the loaded plugin exports coordhost_assign_partitions
	// (read at load), so consumer groups may name it (consumer_assignors.go).
	hasPartitions atomic.Bool
	fallback      string // assignor used when the plugin fails
	runs          atomic.Int64
	failures      atomic.Int64 // plugin failures (the fallback answered)
	errors        atomic.Int64 // runs that failed altogether
	panics        atomic.Int64 // native runs that panicked (recovered, counted as errors)
	probes        probeCounters

	// module is the loaded module's file and hash (shadow.go).
	module atomic.Pointer[moduleFile]
}

// Assignors is the registry of task assignors the event loop runs:
// built-in ones from .wasm files (or, loudly logged, their native
// builds) and plugins loaded at runtime through /v1/plugins.
type Assignors struct {
	log      *slog.Logger
	cfg      plugin.Config
	fallback string
	mu       sync.RWMutex
	byName   map[string]*assignor
}

// NewAssignors loads the built-in assignors: dir/<file>.wasm when present,
// else the native algorithm package (logged as a warning). fallback names
// the assignor whose native build answers when a plugin fails.
func NewAssignors(ctx context.Context, dir, fallback string, cfg plugin.Config, log *slog.Logger) *Assignors {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	a := &Assignors{log: log, cfg: cfg, fallback: fallback, byName: map[string]*assignor{}}
	names := make([]string, 0, len(BuiltinAssignors))
	for n := range BuiltinAssignors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		b := BuiltinAssignors[name]
		as := &assignor{name: name, native: b.Native, probe: b.Probe, fallback: name}
		path := filepath.Join(dir, b.File)
		if _, err := os.Stat(path); err != nil {
			log.Warn("built-in assignor plugin not found: running its native Go build instead (run `make plugins` to build the .wasm)",
				"assignor", name, "path", path)
		} else {
			pc := cfg
			pc.Name = name
			p, err := plugin.LoadFile(ctx, path, pc)
			if err != nil {
				log.Error("built-in assignor plugin failed to load: running its native Go build instead", "assignor", name, "path", path, "err", err)
			} else {
				as.plugin, as.path = p, path
				as.noteKinds(ctx)
				as.noteVersion(path)
				log.Info("assignor plugin loaded", "assignor", name, "path", path)
			}
		}
		a.byName[name] = as
	}
	return a
}

// Names lists the configured assignors, sorted.
func (a *Assignors) Names() []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]string, 0, len(a.byName))
	for n := range a.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (a *Assignors) get(name string) *assignor {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.byName[name]
}

// Load adds (or replaces) a plugin assignor from a .wasm file; the fallback
// is the default assignor's native build.
func (a *Assignors) Load(ctx context.Context, name, path string) error {
	pc := a.cfg
	pc.Name = name
	p, err := plugin.LoadFile(ctx, path, pc)
	if err != nil {
		return err
	}
	a.mu.Lock()
	old := a.byName[name]
	as := &assignor{name: name, plugin: p, path: path, fallback: a.fallback}
	if old != nil {
		as.native, as.probe, as.fallback = old.native, old.probe, old.fallback
	}
	as.noteKinds(ctx)
	as.noteVersion(path)
	a.byName[name] = as
	a.mu.Unlock()
	if old != nil && old.plugin != nil {
		_ = old.plugin.Close(ctx)
	}
	a.log.Info("assignor plugin loaded", "assignor", name, "path", path)
	return nil
}

// Reload hot-reloads a loaded plugin from its file (or from path when not empty).
func (a *Assignors) Reload(ctx context.Context, name, path string) error {
	as := a.get(name)
	if as == nil || as.plugin == nil {
		return fmt.Errorf("assignor %q has no loaded plugin", name)
	}
	if path == "" {
		path = as.path
	}
	if err := as.plugin.ReloadFile(ctx, path); err != nil {
		return err
	}
	as.noteKinds(ctx)
	as.noteVersion(path)
	a.log.Info("assignor plugin reloaded", "assignor", name, "path", path)
	return nil
}

// Unload closes a plugin; a built-in assignor keeps running natively,
// another name is removed.
func (a *Assignors) Unload(ctx context.Context, name string) error {
	a.mu.Lock()
	as := a.byName[name]
	if as == nil || as.plugin == nil {
		a.mu.Unlock()
		return fmt.Errorf("assignor %q has no loaded plugin", name)
	}
	if as.native != nil {
		a.byName[name] = &assignor{name: name, native: as.native, probe: as.probe, fallback: as.fallback}
	} else {
		delete(a.byName, name)
	}
	a.mu.Unlock()
	a.log.Info("assignor plugin unloaded", "assignor", name)
	return as.plugin.Close(ctx)
}

// Close closes every plugin.
func (a *Assignors) Close(ctx context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, as := range a.byName {
		if as.plugin != nil {
			_ = as.plugin.Close(ctx)
		}
	}
}

// PluginInfo describes one assignor for /v1/plugins.
type PluginInfo struct {
	Name     string `json:"name"`
	Path     string `json:"path,omitempty"`
	Runtime  string `json:"runtime"` // "wasm" or "native"
	Fallback string `json:"fallback"`
	Runs     int64  `json:"runs"`
	Failures int64  `json:"plugin_failures"`
	Errors   int64  `json:"errors"`
	Panics   int64  `json:"native_panics"`
	// Probes and ProbeFailures count probing-policy calls of this module
	// and those that failed (the built-in policy decided instead).
	Probes        int64           `json:"probes"`
	ProbeFailures int64           `json:"probe_failures"`
	Metrics       *plugin.Metrics `json:"metrics,omitempty"`
}

// Info lists the assignors.
func (a *Assignors) Info() []PluginInfo {
	var out []PluginInfo
	for _, n := range a.Names() {
		as := a.get(n)
		if as == nil {
			continue
		}
		pi := PluginInfo{Name: n, Path: as.path, Runtime: "native", Fallback: as.fallback,
			Runs: as.runs.Load(), Failures: as.failures.Load(), Errors: as.errors.Load(), Panics: as.panics.Load(),
			Probes: as.probes.calls.Load(), ProbeFailures: as.probes.failures.Load()}
		if as.plugin != nil {
			pi.Runtime = "wasm"
			m := as.plugin.Metrics()
			pi.Metrics = &m
		}
		out = append(out, pi)
	}
	return out
}

// Run computes one assignment with the named assignor: its plugin with the
// fallback's native build behind it, or the native build alone.
func (a *Assignors) Run(ctx context.Context, name string, req *abi.AssignRequest) (*abi.AssignResponse, error) {
	resp, _, err := a.run(ctx, name, req)
	return resp, err
}

// run is Run that also reports, when the plugin failed and the fallback
// answered, the plugin's error and the fallback's name (nil otherwise).
func (a *Assignors) run(ctx context.Context, name string, req *abi.AssignRequest) (*abi.AssignResponse, *fellBack, error) {
	as := a.get(name)
	if as == nil {
		return nil, nil, fmt.Errorf("assignor %q is not configured (have %v)", name, a.Names())
	}
	as.runs.Add(1)
	fb := a.nativeOf(as.fallback)
	if as.plugin == nil {
		if as.native == nil {
			as.errors.Add(1)
			return nil, nil, fmt.Errorf("assignor %q has neither a plugin nor a native build", name)
		}
		resp, err := runNative(as, "assign", as.native, req)
		if err == nil {
			err = abi.ValidateAssignment(req, resp)
		}
		if err != nil {
			as.errors.Add(1)
		}
		return resp, nil, err
	}
	var fallback plugin.Fallback
	if fb != nil {
		fallback = func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
			return runNative(as, "fallback assign", fb, req)
		}
	}
	oc, err := as.plugin.AssignWithFallback(ctx, req, fallback)
	if oc.PluginErr != nil {
		as.failures.Add(1)
	}
	if err != nil {
		as.errors.Add(1)
		return nil, nil, err
	}
	if oc.UsedFallback {
		return oc.Response, &fellBack{fallback: as.fallback, err: oc.PluginErr}, nil
	}
	return oc.Response, nil, nil
}

func (a *Assignors) nativeOf(name string) NativeAssignor {
	if as := a.get(name); as != nil && as.native != nil {
		return as.native
	}
	if b, ok := BuiltinAssignors[name]; ok {
		return b.Native
	}
	return nil
}
