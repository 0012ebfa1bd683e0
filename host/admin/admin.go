// Package admin is coordhost's admin HTTP server: health, readiness,
// Prometheus metrics, group inspection, plugin management and a web page
// (/ui) over the group inspection API.
package admin

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/coordhost/coordhost/host/config"
)

// Options configures the admin server.
type Options struct {
	// Token, when set, is required (Authorization: Bearer) on every
	// endpoint but /healthz, /readyz and the admin page's static /ui; empty leaves reads open and
	// disables plugin management unless client certificates are on.
	Token string
	// TLSCertFile and TLSKeyFile serve the API over TLS; ClientCAFile
	// makes a client certificate it verifies authenticate like the token.
	TLSCertFile, TLSKeyFile, ClientCAFile string
	// Insecure allows a non-loopback listener without authentication and
	// TLS (admin.insecure); without it Start refuses such a listener.
	Insecure bool
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
	// Cluster serves GET /v1/cluster (this node's view of partition
	// ownership) when the node is part of a cluster; nil answers 501.
	Cluster http.Handler
	Log     *slog.Logger
}

// Server is the admin HTTP server.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Start serves the admin API on ln. It refuses (and serves nothing) when
// ln is not a loopback address and the API would be reachable without
// authentication or TLS, unless o.Insecure; or when a TLS file is unusable.
func Start(ln net.Listener, o Options) (*Server, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if err := checkExposure(ln.Addr(), o); err != nil {
		return nil, err
	}
	if o.TLSCertFile != "" {
		tc, err := serverTLS(o)
		if err != nil {
			return nil, err
		}
		ln = tls.NewListener(ln, tc)
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: Handler(o), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Log.Error("admin server stopped", "err", err)
		}
	}()
	return s, nil
}

// checkExposure is the start-up rule for the listener's address.
func checkExposure(addr net.Addr, o Options) error {
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return nil
	}
	var missing []string
	if o.Token == "" && o.ClientCAFile == "" {
		missing = append(missing, "authentication (admin.token or admin.tls.client.ca.file)")
	}
	if o.TLSCertFile == "" {
		missing = append(missing, "TLS (admin.tls.cert.file, admin.tls.key.file)")
	}
	if len(missing) == 0 {
		return nil
	}
	if o.Insecure {
		o.Log.Warn("admin API on a non-loopback address without "+strings.Join(missing, " and ")+": admin.insecure is set", "addr", addr.String())
		return nil
	}
	return fmt.Errorf("admin.listen %s is not a loopback address and the admin API would have no %s; set them, or admin.insecure=true to serve it unprotected",
		addr, strings.Join(missing, " and no "))
}

// serverTLS loads the admin listener's certificate and, when configured,
// the CA that verifies client certificates (asked for, not required:
// /healthz and /readyz stay reachable without one).
func serverTLS(o Options) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("admin.tls.cert.file/admin.tls.key.file: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if o.ClientCAFile != "" {
		pem, err := os.ReadFile(o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("admin.tls.client.ca.file: %w", err)
		}
		tc.ClientCAs = x509.NewCertPool()
		if !tc.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("admin.tls.client.ca.file %q: no PEM certificate in it", o.ClientCAFile)
		}
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return tc, nil
}

// Addr is the listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops the server, letting requests in flight finish until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Handler returns the admin API's routes.
func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, 200, map[string]string{"status": "ok"}) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if o.Ready != nil {
			if err := o.Ready(); err != nil {
				WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": err.Error()})
				return
			}
		}
		WriteJSON(w, 200, map[string]string{"status": "ready"})
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
		WriteJSON(w, 200, map[string]any{"group": id, "config": o.Config.Groups.Explain(id)})
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
	mux.HandleFunc("GET /v1/cluster", func(w http.ResponseWriter, r *http.Request) {
		if o.Cluster == nil {
			notWired(w, "cluster ownership (cluster.id)")
			return
		}
		o.Cluster.ServeHTTP(w, r)
	})
	mux.Handle("/v1/plugins", guard(o, plugins))
	mux.Handle("/v1/plugins/{name}", guard(o, plugins))
	mux.Handle("POST /v1/debug/heap", debugHeap(o))
	ui := uiHandler()
	mux.Handle("GET /ui", ui)
	mux.Handle("GET /ui/", ui)
	return requireAuth(o, mux)
}

// open are the endpoints served without authentication (probes); the
// admin page's static files (uiPath) are too: they hold no data.
var open = map[string]bool{"/healthz": true, "/readyz": true}

// requireAuth asks every request but the probes for the token or a
// verified client certificate, when either is configured.
func requireAuth(o Options, next http.Handler) http.Handler {
	if o.Token == "" && o.ClientCAFile == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open[r.URL.Path] || uiPath(r.URL.Path) || authenticated(o, r) {
			next.ServeHTTP(w, r)
			return
		}
		unauthorized(w, "the admin API requires Authorization: Bearer <admin.token> or a client certificate")
	})
}

// authenticated: the bearer token matches, or TLS verified a client
// certificate against admin.tls.client.ca.file.
func authenticated(o Options, r *http.Request) bool {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && o.Token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(o.Token)) == 1
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="coordhost"`)
	WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": msg})
}

// guard lets reads through and requires authentication for every method
// that changes plugins (load, reload, unload); with neither a token nor
// client certificates configured, plugin management is disabled.
func guard(o Options, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		if o.Token == "" && o.ClientCAFile == "" {
			WriteJSON(w, http.StatusForbidden, map[string]string{"error": "plugin management is disabled: set admin.token (COORDHOST_ADMIN_TOKEN) or admin.tls.client.ca.file to enable it"})
			return
		}
		if !authenticated(o, r) {
			unauthorized(w, "plugin management requires Authorization: Bearer <admin.token> or a client certificate")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// debugHeap forces a garbage collection and answers the live heap it
// left (runtime/metrics /gc/heap/live:bytes), for memory benchmarks. A
// forced collection stops the world, so it needs authentication, and
// without a token or client certificates configured it is refused.
func debugHeap(o Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.Token == "" && o.ClientCAFile == "" {
			WriteJSON(w, http.StatusForbidden, map[string]string{"error": "the debug heap endpoint needs admin.token or admin.tls.client.ca.file"})
			return
		}
		if !authenticated(o, r) {
			unauthorized(w, "the debug heap endpoint requires Authorization: Bearer <admin.token> or a client certificate")
			return
		}
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"}}
		metrics.Read(s)
		WriteJSON(w, 200, map[string]uint64{"heapLiveBytes": s[0].Value.Uint64(), "runtimeTotalBytes": s[1].Value.Uint64()})
	})
}

func notWired(w http.ResponseWriter, what string) {
	WriteJSON(w, http.StatusNotImplemented, map[string]string{"error": what + " is not wired into this build yet"})
}

// WriteJSON answers v as indented JSON with the status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
