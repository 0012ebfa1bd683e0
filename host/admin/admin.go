// Package admin is coordhost's admin HTTP server: health, readiness,
// Prometheus metrics, group inspection and plugin management.
package admin

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coordhost/coordhost/host/config"
)

// Options configures the admin server.
type Options struct {
	// Token guards plugin management; empty disables it.
	Token string
	// Ready reports nil once coordhost serves Kafka clients.
	Ready func() error
	// Metrics is rendered at /metrics.
	Metrics *Metrics
	// Config supplies the effective per-group configuration.
	Config *config.Config
	// Groups serves /v1/groups, /v1/groups/{id}, its /history and /v1/ab
	// once group coordination is wired; nil answers 501.
	Groups http.Handler
	// Plugins serves /v1/plugins once the plugin host is wired; nil answers
	// 501. Mutating methods reach it only with the bearer token.
	Plugins http.Handler
	Log     *slog.Logger
}

// Server is the admin HTTP server.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Start serves the admin API on ln.
func Start(ln net.Listener, o Options) *Server {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: Handler(o), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Log.Error("admin server stopped", "err", err)
		}
	}()
	return s
}

// Addr is the listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops the server, letting requests in flight finish until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Handler returns the admin API's routes.
func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]string{"status": "ok"}) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if o.Ready != nil {
			if err := o.Ready(); err != nil {
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": err.Error()})
				return
			}
		}
		writeJSON(w, 200, map[string]string{"status": "ready"})
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if o.Metrics != nil {
			o.Metrics.WriteTo(w)
		}
	})
	mux.HandleFunc("GET /v1/groups/{id}/config", func(w http.ResponseWriter, r *http.Request) {
		if o.Groups != nil { // the coordinator adds runtime group configs
			o.Groups.ServeHTTP(w, r)
			return
		}
		if o.Config == nil {
			notWired(w, "configuration")
			return
		}
		id := r.PathValue("id")
		writeJSON(w, 200, map[string]any{"group": id, "config": o.Config.Groups.Explain(id)})
	})
	groups := o.Groups
	if groups == nil {
		groups = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { notWired(w, "group coordination") })
	}
	mux.Handle("/v1/groups", groups)
	mux.Handle("/v1/groups/{id}", groups)
	mux.Handle("GET /v1/groups/{id}/history", groups)
	mux.Handle("GET /v1/ab", groups)
	plugins := o.Plugins
	if plugins == nil {
		plugins = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { notWired(w, "the plugin host") })
	}
	mux.Handle("/v1/plugins", guard(o.Token, plugins))
	mux.Handle("/v1/plugins/{name}", guard(o.Token, plugins))
	return mux
}

// guard lets reads through and requires the bearer token for every method
// that changes plugins (load, reload, unload).
func guard(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		if token == "" {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "plugin management is disabled: set admin.token (COORDHOST_ADMIN_TOKEN) to enable it"})
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="coordhost"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "plugin management requires Authorization: Bearer <admin.token>"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func notWired(w http.ResponseWriter, what string) {
	writeJSON(w, http.StatusNotImplemented, map[string]string{"error": what + " is not wired into this build yet"})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
