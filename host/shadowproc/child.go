package shadowproc

// The shadow process: the coordhost executable (or a test binary that
// links this package) started again with EnvChild set. It loads the
// shadow modules itself with the parent's plugin limits, answers one
// frame at a time on stdout, and exits when stdin ends.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/coordhost/coordhost/host/plugin"
)

// EnvChild, set to "1", makes a process that links this package serve as
// a shadow process instead of running its main (or its tests).
const EnvChild = "COORDHOST_SHADOW_PROCESS"

// maxLoaded bounds the modules a shadow process keeps loaded.
const maxLoaded = 16

func init() {
	if os.Getenv(EnvChild) != "1" {
		return
	}
	_ = os.Unsetenv(EnvChild)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := lowerPriority(); err != nil {
		log.Warn("shadow process keeps the normal priority", "err", err)
	}
	if err := serve(context.Background(), os.Stdin, os.Stdout, log); !errors.Is(err, io.EOF) {
		log.Error("shadow process stops", "err", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// Version is a module's version as coordhost reports it: a prefix of the
// SHA-256 of its bytes.
func Version(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return "wasm sha256:" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// loaded is one module the child holds for a shadow name.
type loaded struct {
	version string
	plugin  *plugin.Plugin
}

// child is the shadow process's state.
type child struct {
	ctx     context.Context
	log     *slog.Logger
	cfg     plugin.Config
	plugins map[string]loaded
}

// serve answers frames from r on w until r ends (it returns io.EOF) or
// fails: a frame that is not a valid message, a write that fails (then it
// returns that error; the parent restarts the process).
func serve(ctx context.Context, r io.Reader, w io.Writer, log *slog.Logger) error {
	in, out := bufio.NewReader(r), bufio.NewWriter(w)
	p, err := readFrame(in, maxControlFrame, nil)
	if err != nil {
		return err
	}
	msg, err := decodeFrame(p)
	if err != nil {
		return err
	}
	l, ok := msg.(limits)
	if !ok {
		return fmt.Errorf("shadowproc: first message is %T, want the limits", msg)
	}
	c := &child{ctx: ctx, log: log, plugins: map[string]loaded{},
		cfg: plugin.Config{MemoryLimitPages: l.MemoryLimitPages, Deadline: l.Deadline, NoDeadline: l.NoDeadline,
			PoolSize: 1, MaxModuleBytes: l.MaxModuleBytes, MaxOutputBytes: int(l.MaxOutputBytes),
			RecycleAboveBytes: l.RecycleAboveBytes, CacheDir: l.CacheDir, Interpreter: l.Interpreter, Logger: log}}
	var buf, reply []byte
	for {
		if buf, err = readFrame(in, maxFrame, buf); err != nil {
			return err
		}
		if msg, err = decodeFrame(buf); err != nil {
			return err
		}
		var res result
		switch m := msg.(type) {
		case load:
			res = result{ID: m.ID}
			if err := c.load(m); err != nil {
				res.Err = err.Error()
			}
		case assign:
			res = c.assign(m)
		default:
			return fmt.Errorf("shadowproc: unexpected %T from the parent", msg)
		}
		if len(res.Output) > maxData {
			res = result{ID: res.ID, Err: fmt.Sprintf("output of %d bytes, limit %d", len(res.Output), maxData)}
		}
		reply = appendResult(reply, res)
		if err := writeFrame(out, reply, maxFrame); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// load loads the module at m.Path for m.Name, unless that version is
// loaded already; the file must still hold the version the parent runs.
func (c *child) load(m load) error {
	if cur, ok := c.plugins[m.Name]; ok && cur.version == m.Version {
		return nil
	}
	wasm, err := plugin.ReadModule(m.Path, c.cfg.MaxModuleBytes)
	if err != nil {
		return fmt.Errorf("plugin %q: load: %w", m.Name, err)
	}
	if v, _ := Version(bytes.NewReader(wasm)); v != m.Version {
		return fmt.Errorf("plugin %q: load: %s now holds %s, not the loaded %s (reload the plugin)", m.Name, m.Path, v, m.Version)
	}
	cfg := c.cfg
	cfg.Name = m.Name
	p, err := plugin.Load(c.ctx, wasm, cfg)
	if err != nil {
		return err
	}
	if old, ok := c.plugins[m.Name]; ok {
		_ = old.plugin.Close(c.ctx)
		delete(c.plugins, m.Name)
	}
	for name, old := range c.plugins {
		if len(c.plugins) < maxLoaded {
			break
		}
		_ = old.plugin.Close(c.ctx)
		delete(c.plugins, name)
	}
	c.plugins[m.Name] = loaded{version: m.Version, plugin: p}
	return nil
}

// assign runs one call; the output is checked to decode only (the parent
// validates it against the request).
func (c *child) assign(m assign) result {
	res := result{ID: m.ID}
	cur, ok := c.plugins[m.Name]
	if !ok {
		res.Err = fmt.Sprintf("plugin %q is not loaded in the shadow process", m.Name)
		return res
	}
	ctx, cancel := context.WithTimeout(c.ctx, m.Timeout)
	defer cancel()
	start := time.Now()
	out, err := cur.plugin.AssignRaw(ctx, m.Input)
	res.Compute = time.Since(start)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	res.Output = out
	return res
}
