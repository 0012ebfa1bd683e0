package plugin

import (
	"fmt"
	"log/slog"
	"time"
)

// Config is the per-plugin setting of the runtime. The zero value of every
// field selects its default.
type Config struct {
	// Name identifies the plugin in logs, metrics and errors.
	Name string
	// MemoryLimitPages caps each instance's linear memory in 64 KiB pages
	// (default 1024 = 64 MiB).
	MemoryLimitPages uint32
	// Deadline bounds each call (default 10s). It is enforced with wazero's
	// close-on-context-done, which slows Go guests several-fold
	// (docs/BENCHMARKS.md).
	Deadline time.Duration
	// NoDeadline runs the plugin without deadline enforcement: only for
	// trusted, shipped plugins. A runaway call then cannot be stopped.
	NoDeadline bool
	// PoolSize bounds the number of instances, and so of concurrent calls
	// (default 2).
	PoolSize int
	// MaxModuleBytes caps the size of a module file LoadFile and
	// ReloadFile read (default DefaultMaxModuleBytes); only regular files
	// are read.
	MaxModuleBytes int64
	// MaxOutputBytes caps a call's output (default 64 MiB).
	MaxOutputBytes int
	// RecycleAboveBytes retires an instance after a successful call that
	// left its linear memory above this size (default: half the memory
	// limit). Wasm memory never shrinks; a fresh instance starts small.
	RecycleAboveBytes uint64
	// CacheDir keeps compiled code across processes; "" uses a cache in
	// memory shared by the whole process.
	CacheDir string
	// Interpreter forces wazero's interpreter instead of its compiler.
	Interpreter bool
	// Logger receives failures and guest log lines (default slog.Default()).
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.MemoryLimitPages == 0 {
		c.MemoryLimitPages = 1024
	}
	if c.MemoryLimitPages > 65536 {
		return c, fmt.Errorf("plugin %q: MemoryLimitPages %d exceeds 65536 (4 GiB)", c.Name, c.MemoryLimitPages)
	}
	if c.Deadline == 0 {
		c.Deadline = 10 * time.Second
	}
	if c.Deadline < 0 {
		return c, fmt.Errorf("plugin %q: negative Deadline %v", c.Name, c.Deadline)
	}
	if c.PoolSize == 0 {
		c.PoolSize = 2
	}
	if c.PoolSize < 0 {
		return c, fmt.Errorf("plugin %q: negative PoolSize %d", c.Name, c.PoolSize)
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = 64 << 20
	}
	if c.RecycleAboveBytes == 0 {
		c.RecycleAboveBytes = uint64(c.MemoryLimitPages) * 65536 / 2
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
