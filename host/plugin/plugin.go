package plugin

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/coordhost/coordhost/abi"
)

// Plugin is a loaded plugin: the current compiled version of a module, its
// instance pool, its metrics. It is safe for concurrent use; each instance
// runs one call at a time.
type Plugin struct {
	cfg     Config
	cur     atomic.Pointer[module]
	closed  atomic.Bool
	metrics metrics
}

// LoadFile loads the plugin in the .wasm file at path. cfg.Name defaults to
// the file's base name without extension.
func LoadFile(ctx context.Context, path string, cfg Config) (*Plugin, error) {
	if cfg.Name == "" {
		cfg.Name = strings.TrimSuffix(filepath.Base(path), ".wasm")
	}
	wasm, err := readModule(path, cfg.MaxModuleBytes)
	if err != nil {
		return nil, &Error{Plugin: cfg.Name, Op: "load", Kind: KindLoad, Err: err}
	}
	return Load(ctx, wasm, cfg)
}

// Load compiles and checks a plugin module. No guest code runs until the
// first call: a module that does not speak ABI v1 is refused with an Error
// of kind KindABIVersion before that.
func Load(ctx context.Context, wasm []byte, cfg Config) (*Plugin, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, &Error{Plugin: cfg.Name, Op: "load", Kind: KindLoad, Err: err}
	}
	p := &Plugin{cfg: cfg}
	m, err := newModule(ctx, p, wasm)
	if err != nil {
		return nil, err
	}
	p.cur.Store(m)
	return p, nil
}

// Name returns the plugin's configured name.
func (p *Plugin) Name() string { return p.cfg.Name }

// Kinds returns the operations the plugin implements (abi.KindAssign,
// abi.KindProbe bits): its exports, narrowed by its coordhost_kinds export,
// which needs an instance (one is created, and pooled, if none is idle).
func (p *Plugin) Kinds(ctx context.Context) (int32, error) {
	m, err := p.acquire()
	if err != nil {
		return 0, p.err("kinds", KindClosed, err)
	}
	defer m.unref(context.WithoutCancel(ctx))
	if err := m.pool.slot(ctx); err != nil {
		return 0, p.err("kinds", KindDeadline, err)
	}
	inst := m.pool.idleInstance()
	if inst == nil {
		if inst, err = p.instantiate(ctx, m); err != nil {
			m.pool.release(nil)
			return 0, err
		}
	}
	k := inst.kinds
	m.pool.release(inst)
	return k, nil
}

// Metrics returns a snapshot of the plugin's counters.
func (p *Plugin) Metrics() Metrics { return p.metrics.snapshot() }

// Reload atomically replaces the plugin's module with wasm: calls in flight
// finish on the old module, new calls use the new one. A module that fails
// to load leaves the old one serving; the failure is counted by kind.
func (p *Plugin) Reload(ctx context.Context, wasm []byte) error {
	if p.closed.Load() {
		return p.err("reload", KindClosed, errors.New("plugin is closed"))
	}
	m, err := newModule(ctx, p, wasm)
	if err != nil {
		p.metrics.errors[kindIndex(KindOf(err))].Add(1)
		p.cfg.Logger.Error("plugin reload refused; the previous version keeps serving",
			"plugin", p.cfg.Name, "kind", KindOf(err), "err", err)
		return err
	}
	old := p.cur.Swap(m)
	old.retire(ctx)
	p.metrics.reloads.Add(1)
	p.cfg.Logger.Info("plugin reloaded", "plugin", p.cfg.Name)
	return nil
}

// ReloadFile is Reload with the contents of a file.
func (p *Plugin) ReloadFile(ctx context.Context, path string) error {
	wasm, err := readModule(path, p.cfg.MaxModuleBytes)
	if err != nil {
		return p.err("reload", KindLoad, err)
	}
	return p.Reload(ctx, wasm)
}

// Close releases the plugin; calls in flight finish first.
func (p *Plugin) Close(ctx context.Context) error {
	if p.closed.Swap(true) {
		return nil
	}
	p.cur.Load().retire(ctx)
	return nil
}

func (p *Plugin) err(op string, kind Kind, err error) *Error {
	return &Error{Plugin: p.cfg.Name, Op: op, Kind: kind, Err: err}
}

// acquire returns the current module with a reference held.
func (p *Plugin) acquire() (*module, error) {
	for {
		if p.closed.Load() {
			return nil, errors.New("plugin is closed")
		}
		if m := p.cur.Load(); m.ref() {
			return m, nil
		}
	}
}

// call runs one operation export on a pooled instance. check decodes and
// validates the output before the instance goes back to the pool: any
// failure, including a failed check, discards the instance. The output
// lives in a reused buffer: check must copy whatever it keeps.
func (p *Plugin) call(ctx context.Context, op, export string, input []byte, check func([]byte) *Error) error {
	start := time.Now()
	p.metrics.calls.Add(1)
	m, err := p.acquire()
	if err == nil {
		err = p.callModule(ctx, m, op, export, input, check)
		m.unref(context.WithoutCancel(ctx))
	} else {
		err = p.err(op, KindClosed, err)
	}
	p.metrics.observe(time.Since(start))
	if err != nil {
		pe := err.(*Error)
		p.metrics.errors[kindIndex(pe.Kind)].Add(1)
		msg := "plugin call failed; instance discarded"
		if !pe.discarded {
			msg = "plugin call failed before reaching an instance"
		}
		p.cfg.Logger.Warn(msg, "plugin", p.cfg.Name, "op", op, "kind", pe.Kind, "err", pe.Err)
		return err
	}
	return nil
}

// callModule runs one call on module m, whose reference the caller holds.
func (p *Plugin) callModule(ctx context.Context, m *module, op, export string, input []byte, check func([]byte) *Error) error {
	if err := m.pool.slot(ctx); err != nil {
		return p.err(op, KindDeadline, fmt.Errorf("waiting for an instance: %w", err))
	}
	inst := m.pool.idleInstance()
	if inst == nil {
		var err error
		if inst, err = p.instantiate(ctx, m); err != nil {
			m.pool.release(nil)
			err.(*Error).discarded = true // wazero closed the half-made instance
			return err
		}
	}
	buf := getBuffer()
	out, perr := p.invoke(ctx, inst, op, export, input, (*buf)[:0])
	if perr == nil && check != nil {
		perr = check(out)
	}
	if cap(out) > cap(*buf) {
		*buf = out
	}
	putBuffer(buf)
	if perr != nil {
		p.discard(ctx, inst)
		m.pool.release(nil)
		perr.discarded = true
		return perr
	}
	size := uint64(inst.mod.Memory().Size())
	p.metrics.memoryBytes.Store(size)
	if size > p.cfg.RecycleAboveBytes {
		_ = inst.mod.Close(context.WithoutCancel(ctx))
		p.metrics.recycled.Add(1)
		inst = nil
	}
	m.pool.release(inst)
	return nil
}

func (p *Plugin) discard(ctx context.Context, inst *instance) {
	_ = inst.mod.Close(context.WithoutCancel(ctx))
	p.metrics.discarded.Add(1)
}

// instantiate creates a fresh instance: anonymous (so many coexist), with
// nothing granted (no FS, env, args; fake clocks; deterministic random;
// no-op sleep: wazero's defaults), running _initialize if exported.
func (p *Plugin) instantiate(ctx context.Context, m *module) (*instance, error) {
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize")
	ictx, cancel := p.deadline(ctx)
	defer cancel()
	mod, err := m.rt.InstantiateModule(ictx, m.compiled, cfg)
	if err != nil {
		kind := KindInit
		if isDeadline(err) {
			kind = KindDeadline
		}
		return nil, p.err("instantiate", kind, err)
	}
	if mod.IsClosed() { // proc_exit(0) during _initialize
		return nil, p.err("instantiate", KindInit, errors.New("module exited during _initialize"))
	}
	p.metrics.created.Add(1)
	inst := &instance{mod: mod, assign: mod.ExportedFunction(abi.ExportAssign), probe: mod.ExportedFunction(abi.ExportProbe),
		parts: mod.ExportedFunction(abi.ExportAssignPartitions), kinds: m.kinds}
	if k := mod.ExportedFunction(abi.ExportKinds); k != nil {
		res, err := k.Call(ictx)
		if err != nil || len(res) != 1 {
			_ = mod.Close(ctx)
			return nil, p.err("instantiate", KindInit, fmt.Errorf("%s: %v", abi.ExportKinds, err))
		}
		inst.kinds &= int32(res[0])
	}
	return inst, nil
}

func (p *Plugin) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.cfg.NoDeadline {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, p.cfg.Deadline)
}

// invoke calls the export with the input and classifies any failure.
func (p *Plugin) invoke(ctx context.Context, inst *instance, op, export string, input, outBuf []byte) ([]byte, *Error) {
	fn, bit := inst.assign, abi.KindAssign
	switch export {
	case abi.ExportProbe:
		fn, bit = inst.probe, abi.KindProbe
	case abi.ExportAssignPartitions:
		fn, bit = inst.parts, abi.KindAssignPartitions
	}
	if fn == nil || inst.kinds&bit == 0 {
		return nil, p.err(op, KindUnsupported, fmt.Errorf("plugin does not implement %s", export))
	}
	st := &callState{input: input, output: outBuf, maxOut: p.cfg.MaxOutputBytes}
	cctx, cancel := p.deadline(context.WithValue(ctx, stateKey{}, st))
	defer cancel()
	res, err := fn.Call(cctx, uint64(len(input)))
	switch {
	case err != nil:
		return nil, p.classifyTrap(inst, op, err)
	case st.outErr != nil:
		return nil, p.err(op, KindBadOutput, st.outErr)
	}
	if status := abi.Status(int32(res[0])); status != abi.StatusOK {
		msg := st.output
		if len(msg) > maxLogBytes {
			msg = msg[:maxLogBytes]
		}
		return nil, &Error{Plugin: p.cfg.Name, Op: op, Kind: KindStatus, Status: status, Err: errors.New(string(msg))}
	}
	if !st.written {
		return nil, p.err(op, KindBadOutput, errors.New("status OK but no output_write"))
	}
	return st.output, nil
}

func (p *Plugin) classifyTrap(inst *instance, op string, err error) *Error {
	if isDeadline(err) {
		return p.err(op, KindDeadline, fmt.Errorf("call stopped by its deadline (%v) or its caller's context: %w", p.cfg.Deadline, err))
	}
	limit := uint64(p.cfg.MemoryLimitPages) * 65536
	if mem := inst.mod.Memory(); mem != nil && uint64(mem.Size()) >= limit*3/4 {
		return p.err(op, KindMemory, fmt.Errorf("trapped with linear memory at %d of %d MiB: %w",
			mem.Size()>>20, limit>>20, err))
	}
	return p.err(op, KindTrap, err)
}

func isDeadline(err error) bool {
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		c := ee.ExitCode()
		return c == sys.ExitCodeDeadlineExceeded || c == sys.ExitCodeContextCanceled
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
