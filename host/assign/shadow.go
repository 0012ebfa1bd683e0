package assign

// Shadow runs' side of the registry: an assignor computed for comparison
// only, and the module file and version of each loaded plugin.

import (
	"context"
	"fmt"
	"os"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/shadowproc"
)

// RunShadow computes one assignment with the named assignor for
// comparison only: no fallback answers when its plugin fails, and the
// registry's run counters (/v1/plugins) are not touched. It returns the
// assignor's version with the result.
func (a *Registry) RunShadow(ctx context.Context, name string, req *abi.AssignRequest) (*abi.AssignResponse, string, error) {
	as := a.get(name)
	if as == nil {
		return nil, "", fmt.Errorf("assignor %q is not configured (have %v)", name, a.Names())
	}
	var (
		resp *abi.AssignResponse
		err  error
	)
	switch {
	case as.plugin != nil:
		resp, err = as.plugin.Assign(ctx, req)
	case as.native != nil:
		resp, err = runNative(as, "shadow assign", as.native, req)
	default:
		err = fmt.Errorf("assignor %q has neither a plugin nor a native build", name)
	}
	if err == nil {
		err = abi.ValidateAssignment(req, resp)
	}
	return resp, as.versionString(), err
}

// Module is the file a plugin assignor was (re)loaded from and its
// version (the hash the shadow process checks).
type Module struct {
	Path, Version string
}

// noteVersion records the module file at path and its hash as the
// assignor's version (read at load and reload).
func (as *assignor) noteVersion(path string) {
	mod := &Module{Path: path, Version: "wasm"}
	if f, err := os.Open(path); err == nil {
		if v, err := shadowproc.Version(f); err == nil {
			mod.Version = v
		}
		_ = f.Close()
	}
	as.module.Store(mod)
}

// versionString is the assignor's version: its module's hash, or
// "native" for a native build.
func (as *assignor) versionString() string {
	if as.plugin == nil {
		return "native"
	}
	if m := as.module.Load(); m != nil {
		return m.Version
	}
	return "wasm"
}

// ShadowModule is the named assignor's module file when it runs a
// plugin whose version is known (nil otherwise).
func (a *Registry) ShadowModule(name string) *Module {
	as := a.get(name)
	if as == nil || as.plugin == nil {
		return nil
	}
	if m := as.module.Load(); m != nil && m.Version != "wasm" {
		return m
	}
	return nil
}

// Version is the named assignor's version ("" when unknown).
func (a *Registry) Version(name string) string {
	if as := a.get(name); as != nil {
		return as.versionString()
	}
	return ""
}

// PluginConfig is the plugin runtime configuration the registry loads
// modules with (the shadow process loads them the same way).
func (a *Registry) PluginConfig() plugin.Config { return a.cfg }
