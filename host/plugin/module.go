package plugin

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/coordhost/coordhost/abi"
)

// module is one compiled version of a plugin in its own wazero Runtime (the
// trust boundary), with its instance pool. A hot reload replaces the whole
// module; the old one closes when its last in-flight call returns.
type module struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	kinds    int32
	pool     *pool

	mu      sync.Mutex
	refs    int
	retired bool
}

var (
	cachesMu sync.Mutex
	caches   = map[string]wazero.CompilationCache{}
)

// compilationCache returns the process-wide cache for dir ("" = memory).
func compilationCache(dir string) (wazero.CompilationCache, error) {
	cachesMu.Lock()
	defer cachesMu.Unlock()
	if c, ok := caches[dir]; ok {
		return c, nil
	}
	var c wazero.CompilationCache
	if dir == "" {
		c = wazero.NewCompilationCache()
	} else {
		var err error
		if c, err = wazero.NewCompilationCacheWithDir(dir); err != nil {
			return nil, err
		}
	}
	caches[dir] = c
	return c, nil
}

// newModule compiles wasm, checks it against ABI v1 before running any of
// its code, and prepares its runtime: WASI with nothing granted, and the
// coordhost_v1 host functions.
func newModule(ctx context.Context, p *Plugin, wasm []byte) (*module, error) {
	cache, err := compilationCache(p.cfg.CacheDir)
	if err != nil {
		return nil, p.err("load", KindLoad, fmt.Errorf("compilation cache %q: %w", p.cfg.CacheDir, err))
	}
	rc := wazero.NewRuntimeConfig()
	if p.cfg.Interpreter {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	rc = rc.WithCompilationCache(cache).
		WithMemoryLimitPages(p.cfg.MemoryLimitPages).
		WithCloseOnContextDone(!p.cfg.NoDeadline)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	m := &module{rt: rt}
	fail := func(kind Kind, err error) (*module, error) {
		_ = rt.Close(ctx)
		return nil, p.err("load", kind, err)
	}
	if m.compiled, err = rt.CompileModule(ctx, wasm); err != nil {
		return fail(KindLoad, err)
	}
	if kind, err := checkABI(m.compiled); err != nil {
		return fail(kind, err)
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return fail(KindLoad, err)
	}
	if err := instantiateHost(ctx, rt, p); err != nil {
		return fail(KindLoad, err)
	}
	m.kinds = exportedKinds(m.compiled)
	m.pool = newPool(p.cfg.PoolSize)
	return m, nil
}

// checkABI refuses a module that does not speak ABI v1, before any of its
// code runs: the version marker, allowed import modules, a memory, no
// _start.
func checkABI(cm wazero.CompiledModule) (Kind, error) {
	exports := cm.ExportedFunctions()
	var versions []int
	for name := range exports {
		if v, ok := strings.CutPrefix(name, abi.MarkerPrefix); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return KindABIVersion, fmt.Errorf("malformed version marker export %q", name)
			}
			versions = append(versions, n)
		}
	}
	switch {
	case len(versions) == 0:
		return KindABIVersion, fmt.Errorf("not a coordhost plugin: no %q export (this host serves ABI v%d)", abi.MarkerExport, abi.Version)
	case len(versions) > 1:
		return KindABIVersion, fmt.Errorf("plugin declares several ABI versions %v; exactly one is allowed", versions)
	case versions[0] != abi.Version:
		return KindABIVersion, fmt.Errorf("plugin speaks ABI v%d; this host serves ABI v%d", versions[0], abi.Version)
	}
	if def := exports[abi.MarkerExport]; len(def.ParamTypes()) != 0 || len(def.ResultTypes()) != 0 {
		return KindABIVersion, fmt.Errorf("%s must have type () -> ()", abi.MarkerExport)
	}
	if _, ok := exports["_start"]; ok {
		return KindLoad, fmt.Errorf("module exports _start: plugins must be reactors (Go: -buildmode=c-shared; clang: -mexec-model=reactor)")
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		return KindLoad, fmt.Errorf("module exports no memory named \"memory\"")
	}
	if len(cm.ImportedMemories()) > 0 {
		return KindLoad, fmt.Errorf("module imports a memory; plugins must define their own")
	}
	for _, def := range cm.ImportedFunctions() {
		mod, name, _ := def.Import()
		if mod != abi.ImportModule && mod != wasi_snapshot_preview1.ModuleName {
			return KindLoad, fmt.Errorf("module imports %s.%s: only %s and %s are provided", mod, name, abi.ImportModule, wasi_snapshot_preview1.ModuleName)
		}
	}
	ops := []string{abi.ExportAssign, abi.ExportProbe, abi.ExportAssignPartitions}
	for _, op := range ops {
		def, ok := exports[op]
		if !ok {
			continue
		}
		if p, r := def.ParamTypes(), def.ResultTypes(); len(p) != 1 || p[0] != api.ValueTypeI32 || len(r) != 1 || r[0] != api.ValueTypeI32 {
			return KindLoad, fmt.Errorf("%s must have type (i32) -> i32", op)
		}
	}
	if exportedKinds(cm) == 0 {
		return KindLoad, fmt.Errorf("module exports none of %s", strings.Join(ops, ", "))
	}
	return "", nil
}

// exportedKinds is the operation set implied by the exports; an instance's
// coordhost_kinds export may narrow it.
func exportedKinds(cm wazero.CompiledModule) int32 {
	var k int32
	exports := cm.ExportedFunctions()
	if _, ok := exports[abi.ExportAssign]; ok {
		k |= abi.KindAssign
	}
	if _, ok := exports[abi.ExportProbe]; ok {
		k |= abi.KindProbe
	}
	if _, ok := exports[abi.ExportAssignPartitions]; ok {
		k |= abi.KindAssignPartitions
	}
	return k
}

// ref takes a reference for one call; false if the module was retired.
func (m *module) ref() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.retired {
		return false
	}
	m.refs++
	return true
}

func (m *module) unref(ctx context.Context) {
	m.mu.Lock()
	m.refs--
	last := m.retired && m.refs == 0
	m.mu.Unlock()
	if last {
		m.close(ctx)
	}
}

// retire stops new calls; the module closes once in-flight calls return.
func (m *module) retire(ctx context.Context) {
	m.mu.Lock()
	m.retired = true
	idle := m.refs == 0
	m.mu.Unlock()
	if idle {
		m.close(ctx)
	}
}

func (m *module) close(ctx context.Context) {
	m.pool.drain(ctx)
	_ = m.rt.Close(ctx)
}
