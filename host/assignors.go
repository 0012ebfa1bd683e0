package host

// The host's names for the assignor side (host/assign): the embedding API
// and the commands name assignors through these.

import (
	"context"
	"log/slog"

	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/plugin"
)

// NativeAssignor is an in-process assignor: the native build of a plugin's
// algorithm package.
type NativeAssignor = assign.Native

// NativeProbe is an in-process probing policy: the native build of a
// plugin's probe operation.
type NativeProbe = assign.NativeProbe

// Assignors is the registry of task assignors the event loop runs.
type Assignors = assign.Registry

// PluginInfo describes one assignor for /v1/plugins.
type PluginInfo = assign.PluginInfo

// BuiltinAssignors maps the built-in assignor names to their native builds
// and the .wasm file name `make plugins` writes for them.
var BuiltinAssignors = assign.Builtins

// The special values of streams.probing.policy.
const (
	// ProbingPolicyAuto (the default) uses the group assignor's own probe
	// export when its module has one, else core's built-in interval policy.
	ProbingPolicyAuto = assign.ProbingPolicyAuto
	// ProbingPolicyBuiltin is core's built-in interval policy.
	ProbingPolicyBuiltin = assign.ProbingPolicyBuiltin
)

// NewAssignors loads the built-in assignors (assign.New).
func NewAssignors(ctx context.Context, dir, fallback string, cfg plugin.Config, log *slog.Logger) *Assignors {
	return assign.New(ctx, dir, fallback, cfg, log)
}
