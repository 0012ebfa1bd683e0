// Package shadowproc runs shadow assignor plugins in a child process with
// its own Go runtime and garbage collector, at the lowest scheduling
// priority: Go cannot preempt a goroutine running compiled wasm, so in
// coordhost's own process a collection would wait for a shadow's call,
// and the primary's runs with it (docs/BENCHMARKS.md).
//
// The child is the running executable started again with EnvChild set;
// this package's init turns such a process into the shadow process, so
// the coordhost binary and any test binary that links this package serve
// alike. A child that crashes, breaks the protocol or does not answer in
// time is killed and started again after a backoff.
package shadowproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordhost/coordhost/host/plugin"
)

// ErrCrashed wraps every error of a run during which the shadow process
// died or stopped answering (it was killed; the next run starts another).
var ErrCrashed = errors.New("shadow process crashed or hung")

// Config sets up a Proc.
type Config struct {
	// Plugin holds the limits the child loads modules with (memory
	// limit, deadline, output and module size, compilation cache); its
	// Name, PoolSize and Logger are not used.
	Plugin plugin.Config
	// Grace is how long past a run's deadline the child may take to
	// answer before it is killed (default 2s); a load may take
	// LoadTimeout (default 60s: a cold compile of a large module).
	Grace, LoadTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a child is started
	// again after a crash (defaults 100ms and 30s; it doubles with each
	// crash in a row).
	MinBackoff, MaxBackoff time.Duration
	// Log receives the child's starts and crashes, and its stderr.
	Log *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Grace <= 0 {
		c.Grace = 2 * time.Second
	}
	if c.LoadTimeout <= 0 {
		c.LoadTimeout = time.Minute
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(30*time.Second, c.MinBackoff)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Plugin.Deadline == 0 {
		c.Plugin.Deadline = 10 * time.Second
	}
	return c
}

// Proc is the parent's handle on the shadow process. Runs are serialised:
// one computes at a time. It is safe for concurrent use.
type Proc struct {
	cfg Config

	mu      sync.Mutex
	cur     *running
	next    uint64
	crashes int       // in a row
	retry   time.Time // no start before
	closed  bool
	buf     []byte
	pid     atomic.Int64 // of cur; read without mu
}

// running is one started child.
type running struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	results chan result // closed when the child's stdout ends
	readErr error       // why it ended; read after results is closed
	loaded  map[string]string
}

// New returns a Proc; the child starts with the first run.
func New(cfg Config) *Proc {
	return &Proc{cfg: cfg.withDefaults()}
}

// Assign runs the module at path (loaded by the parent as name, at
// version) on input, an encoded abi.AssignRequest, in the child, within
// timeout (and the plugin deadline). It returns the module's raw output
// (decodable; not yet validated against the request) and the time the
// call took in the child. An error wrapping ErrCrashed means the child
// was killed during the run.
func (p *Proc) Assign(ctx context.Context, name, path, version string, input []byte, timeout time.Duration) ([]byte, time.Duration, error) {
	if len(input) > maxData {
		return nil, 0, fmt.Errorf("shadow %q: request of %d bytes, limit %d", name, len(input), maxData)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r, err := p.started(ctx)
	if err != nil {
		return nil, 0, err
	}
	if r.loaded[name] != version {
		p.next++
		p.buf = appendLoad(p.buf, load{ID: p.next, Name: name, Path: path, Version: version})
		res, err := p.exchange(ctx, r, p.cfg.LoadTimeout)
		if err != nil {
			return nil, 0, err
		}
		if res.Err != "" {
			return nil, 0, errors.New(res.Err)
		}
		r.loaded[name] = version
	}
	wait := timeout
	if !p.cfg.Plugin.NoDeadline {
		wait = min(wait, p.cfg.Plugin.Deadline)
	}
	p.next++
	p.buf = appendAssign(p.buf, assign{ID: p.next, Timeout: timeout, Name: name, Input: input})
	res, err := p.exchange(ctx, r, wait+p.cfg.Grace)
	if err != nil {
		return nil, 0, err
	}
	p.crashes = 0
	if res.Err != "" {
		return nil, res.Compute, errors.New(res.Err)
	}
	return res.Output, res.Compute, nil
}

// exchange sends the frame in p.buf and waits up to wait for its result;
// a child that does not answer in time is killed.
func (p *Proc) exchange(ctx context.Context, r *running, wait time.Duration) (result, error) {
	id := p.next
	timer := time.NewTimer(wait)
	defer timer.Stop()
	sent := make(chan error, 1)
	go func() { sent <- writeFrame(r.stdin, p.buf, maxFrame) }()
	defer func() {
		if sent != nil {
			<-sent // r is stopped, so the write ends; p.buf is free again
		}
	}()
	for {
		select {
		case err := <-sent:
			if err != nil {
				return result{}, p.crashed(r, fmt.Errorf("writing to it: %w", err))
			}
			sent = nil
		case res, ok := <-r.results:
			if !ok {
				return result{}, p.crashed(r, fmt.Errorf("it exited: %w", r.readErr))
			}
			if res.ID != id {
				return result{}, p.crashed(r, fmt.Errorf("it answered %d, not %d", res.ID, id))
			}
			return res, nil // the child read the whole frame before answering
		case <-timer.C:
			return result{}, p.crashed(r, fmt.Errorf("no answer within %v", wait))
		case <-ctx.Done():
			p.stop(r)
			return result{}, ctx.Err()
		}
	}
}

// started returns the running child, starting one (after the backoff
// that follows a crash) when there is none.
func (p *Proc) started(ctx context.Context) (*running, error) {
	if p.closed {
		return nil, errors.New("shadow process: closed")
	}
	if p.cur != nil {
		return p.cur, nil
	}
	if d := time.Until(p.retry); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r, err := p.start()
	if err != nil {
		d := p.backoff()
		p.cfg.Log.Warn("shadow process failed to start; the primary's runs are not affected", "err", err, "backoff", d)
		return nil, fmt.Errorf("%w: starting it: %v", ErrCrashed, err)
	}
	p.cur = r
	p.pid.Store(int64(r.cmd.Process.Pid))
	p.cfg.Log.Info("shadow process started", "pid", r.cmd.Process.Pid)
	return r, nil
}

func (p *Proc) start() (*running, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), EnvChild+"=1")
	cmd.SysProcAttr = sysProcAttr()
	cmd.Stderr = &logWriter{log: p.cfg.Log}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &running{cmd: cmd, stdin: stdin, results: make(chan result, 1), loaded: map[string]string{}}
	go r.read(stdout, p.cfg.Plugin.MaxOutputBytes)
	pc := p.cfg.Plugin
	p.buf = appendLimits(p.buf, limits{MemoryLimitPages: pc.MemoryLimitPages, Deadline: pc.Deadline, NoDeadline: pc.NoDeadline,
		Interpreter: pc.Interpreter, MaxModuleBytes: pc.MaxModuleBytes, MaxOutputBytes: int64(pc.MaxOutputBytes),
		RecycleAboveBytes: pc.RecycleAboveBytes, CacheDir: pc.CacheDir})
	if err := writeFrame(stdin, p.buf, maxControlFrame); err != nil {
		p.stop(r)
		return nil, err
	}
	return r, nil
}

// read hands the child's results to r.results until its stdout ends or
// holds something that is not a result.
func (r *running) read(stdout io.Reader, maxOutput int) {
	defer close(r.results)
	limit := maxFrame
	if maxOutput > 0 && maxOutput < maxData {
		limit = maxOutput + maxControlFrame
	}
	in := bufio.NewReader(stdout)
	for {
		b, err := readFrame(in, limit, nil)
		if err != nil {
			r.readErr = err
			return
		}
		msg, err := decodeFrame(b)
		if err != nil {
			r.readErr = err
			return
		}
		res, ok := msg.(result)
		if !ok {
			r.readErr = fmt.Errorf("shadowproc: %T from the child", msg)
			return
		}
		r.results <- res
	}
}

// crashed kills r, schedules the next start and returns the run's error.
func (p *Proc) crashed(r *running, why error) error {
	pid := r.cmd.Process.Pid
	p.stop(r)
	d := p.backoff()
	err := fmt.Errorf("%w: pid %d: %v", ErrCrashed, pid, why)
	p.cfg.Log.Warn("shadow process killed; the primary's runs are not affected, the next shadow run starts another",
		"pid", pid, "err", err, "exit", r.cmd.ProcessState.String(), "backoff", d)
	return err
}

// backoff notes one more crash in a row and returns the wait before the
// next start.
func (p *Proc) backoff() time.Duration {
	p.crashes++
	d := p.cfg.MinBackoff
	for i := 1; i < p.crashes && d < p.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.cfg.MaxBackoff)
	p.retry = time.Now().Add(d)
	return d
}

// stop kills r's process and reaps it.
func (p *Proc) stop(r *running) {
	_ = r.stdin.Close()
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	for range r.results { // the reader ends with the child's stdout
	}
	if p.cur == r {
		p.cur = nil
		p.pid.Store(0)
	}
}

// PID is the running child's process id (0 when none runs).
func (p *Proc) PID() int { return int(p.pid.Load()) }

// Close kills the child; later runs fail.
func (p *Proc) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.cur != nil {
		p.stop(p.cur)
	}
}

// logWriter logs the child's stderr, a line at a time (at most 4 KiB of
// each).
type logWriter struct {
	log  *slog.Logger
	line []byte
}

func (w *logWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.line = append(w.line, b[:min(len(b), 4096-len(w.line))]...)
			break
		}
		w.line = append(w.line, b[:min(i, 4096-len(w.line))]...)
		w.log.Warn("shadow process: " + string(w.line))
		w.line, b = w.line[:0], b[i+1:]
	}
	return n, nil
}
