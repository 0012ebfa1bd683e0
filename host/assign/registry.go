// Package assign is the assignor side of the host: the registry of
// assignors and probing policies (wasm plugins and native builds), the
// translation between core's assignor runs and the plugin ABI, the
// fallback when a plugin fails, and the server-side assignors of consumer
// groups. It knows nothing of the event loop: the host's loop hands it
// runs on its workers and takes the results back to core.
package assign

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

// Native is an in-process assignor: the native build of a plugin's
// algorithm package.
type Native func(req *abi.AssignRequest) (*abi.AssignResponse, error)

// Builtins maps the built-in assignor names to their native builds
// (with the native probing policy of a module that exports one) and the
// .wasm file name `make plugins` writes for them.
var Builtins = map[string]struct {
	Native Native
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
	native   Native      // the same algorithm in-process, when built in
	probe    NativeProbe // its probing policy in-process, when built in
	hasProbe atomic.Bool // the loaded plugin exports coordhost_probe (read at load)
	// hasPartitions: the loaded plugin exports coordhost_assign_partitions
	// (read at load), so consumer groups may name it (consumer.go).
	hasPartitions atomic.Bool
	fallback      string // assignor used when the plugin fails
	runs          atomic.Int64
	failures      atomic.Int64 // plugin failures (the fallback answered)
	errors        atomic.Int64 // runs that failed altogether
	panics        atomic.Int64 // native runs that panicked (recovered, counted as errors)
	probes        probeCounters

	// module is the loaded module's file and hash (shadow.go).
	module atomic.Pointer[Module]
}

// Registry is the registry of task assignors the event loop runs:
// built-in ones from .wasm files (or, loudly logged, their native
// builds) and plugins loaded at runtime through /v1/plugins.
type Registry struct {
	log      *slog.Logger
	cfg      plugin.Config
	fallback string
	mu       sync.RWMutex
	byName   map[string]*assignor
}

// New loads the built-in assignors: dir/<file>.wasm when present,
// else the native algorithm package (logged as a warning). fallback names
// the assignor whose native build answers when a plugin fails.
func New(ctx context.Context, dir, fallback string, cfg plugin.Config, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	a := &Registry{log: log, cfg: cfg, fallback: fallback, byName: map[string]*assignor{}}
	names := make([]string, 0, len(Builtins))
	for n := range Builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		b := Builtins[name]
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
func (a *Registry) Names() []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]string, 0, len(a.byName))
	for n := range a.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (a *Registry) get(name string) *assignor {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.byName[name]
}

// Load adds (or replaces) a plugin assignor from a .wasm file; the fallback
// is the default assignor's native build.
func (a *Registry) Load(ctx context.Context, name, path string) error {
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
func (a *Registry) Reload(ctx context.Context, name, path string) error {
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
func (a *Registry) Unload(ctx context.Context, name string) error {
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
func (a *Registry) Close(ctx context.Context) {
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
func (a *Registry) Info() []PluginInfo {
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
func (a *Registry) Run(ctx context.Context, name string, req *abi.AssignRequest) (*abi.AssignResponse, error) {
	resp, _, err := a.RunWithFallback(ctx, name, req)
	return resp, err
}

// FellBack says that a plugin assignor failed and its fallback answered.
type FellBack struct {
	Fallback string // the assignor that answered instead
	Err      error  // why the plugin failed
}

// RunWithFallback is Run that also reports, when the plugin failed and the
// fallback answered, the plugin's error and the fallback's name (nil
// otherwise).
func (a *Registry) RunWithFallback(ctx context.Context, name string, req *abi.AssignRequest) (*abi.AssignResponse, *FellBack, error) {
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
		return oc.Response, &FellBack{Fallback: as.fallback, Err: oc.PluginErr}, nil
	}
	return oc.Response, nil, nil
}

func (a *Registry) nativeOf(name string) Native {
	if as := a.get(name); as != nil && as.native != nil {
		return as.native
	}
	if b, ok := Builtins[name]; ok {
		return b.Native
	}
	return nil
}

// NewNative is a registry of in-process assignors only, each its own
// fallback (see AddNative): no built-in assignor, no plugin.
func NewNative(log *slog.Logger, natives map[string]Native) (*Registry, error) {
	a := &Registry{log: log, byName: map[string]*assignor{}}
	if err := a.AddNative(natives); err != nil {
		return nil, err
	}
	return a, nil
}

// AddNative registers in-process assignors beside the built-in ones. Each
// is its own fallback: a run that fails or returns an invalid assignment
// is an error, as for a built-in assignor's native build. A name already
// registered is refused.
func (a *Registry) AddNative(custom map[string]Native) error {
	names := make([]string, 0, len(custom))
	for n := range custom {
		names = append(names, n)
	}
	sort.Strings(names)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, name := range names {
		fn := custom[name]
		switch {
		case name == "":
			return fmt.Errorf("in-process assignor: empty name")
		case fn == nil:
			return fmt.Errorf("in-process assignor %q: nil function", name)
		case a.byName[name] != nil:
			return fmt.Errorf("in-process assignor %q: the name is taken by a built-in assignor", name)
		}
		a.byName[name] = &assignor{name: name, native: fn, fallback: name}
		a.log.Info("in-process assignor registered", "assignor", name)
	}
	return nil
}
