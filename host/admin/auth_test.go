package admin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTokenRequiredOnEveryDataEndpoint: with a token configured, every
// endpoint but the probes answers 401 without it, with a wrong one or with
// the token in the URL, and serves with Authorization: Bearer.
func TestTokenRequiredOnEveryDataEndpoint(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, 200, map[string]string{}) })
	h := Handler(Options{Token: "s3cret", Metrics: NewMetrics(), Groups: ok, Plugins: ok, Cluster: ok})
	do := func(method, target, auth string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, target, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if c := do("GET", p, ""); c != 200 {
			t.Errorf("GET %s without token: %d, want 200", p, c)
		}
	}
	for _, e := range []struct{ method, path string }{
		{"GET", "/metrics"}, {"GET", "/v1/groups"}, {"GET", "/v1/groups/g"}, {"GET", "/v1/groups/g/config"},
		{"GET", "/v1/plugins"}, {"GET", "/v1/plugins/ha"}, {"POST", "/v1/plugins/x"}, {"DELETE", "/v1/plugins/x"},
		{"GET", "/v1/cluster"}, {"GET", "/no-such-endpoint"},
	} {
		for _, auth := range []string{"", "Bearer wrong", "s3cret", "Basic s3cret"} {
			if c := do(e.method, e.path, auth); c != http.StatusUnauthorized {
				t.Errorf("%s %s with %q: %d, want 401", e.method, e.path, auth, c)
			}
		}
		if c := do(e.method, e.path+"?token=s3cret", ""); c != http.StatusUnauthorized {
			t.Errorf("%s %s with the token in the URL: %d, want 401", e.method, e.path, c)
		}
		want := 200
		if e.path == "/no-such-endpoint" {
			want = http.StatusNotFound
		}
		if c := do(e.method, e.path, "Bearer s3cret"); c != want {
			t.Errorf("%s %s with the token: %d, want %d", e.method, e.path, c, want)
		}
	}
	// Without a token reads stay open and plugin management is disabled.
	h = Handler(Options{Metrics: NewMetrics(), Groups: ok, Plugins: ok})
	if c := do("GET", "/metrics", ""); c != 200 {
		t.Errorf("no token configured: GET /metrics %d", c)
	}
	if c := do("POST", "/v1/plugins/x", "Bearer anything"); c != http.StatusForbidden {
		t.Errorf("no token configured: POST /v1/plugins %d, want 403", c)
	}
}

// fakeAddrListener is a loopback listener that reports another address.
type fakeAddrListener struct {
	net.Listener
	addr net.Addr
}

func (f fakeAddrListener) Addr() net.Addr { return f.addr }

// TestStartRefusesExposedListener: a non-loopback address without
// authentication and TLS refuses to start unless admin.insecure says so;
// a loopback one starts.
func TestStartRefusesExposedListener(t *testing.T) {
	cert, key, _ := writeCerts(t)
	exposed := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return fakeAddrListener{ln, &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 9644}}
	}
	for _, c := range []struct {
		name string
		o    Options
		want string // "" starts
	}{
		{"nothing", Options{}, "would have no authentication (admin.token or admin.tls.client.ca.file) and no TLS"},
		{"token only", Options{Token: "t"}, "would have no TLS (admin.tls.cert.file"},
		{"TLS only", Options{TLSCertFile: cert, TLSKeyFile: key}, "would have no authentication"},
		{"token and TLS", Options{Token: "t", TLSCertFile: cert, TLSKeyFile: key}, ""},
		{"insecure", Options{Insecure: true}, ""},
	} {
		s, err := Start(exposed(), c.o)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "admin.insecure")):
			t.Errorf("%s: error %v, want one containing %q and naming admin.insecure", c.name, err, c.want)
		}
		if s != nil {
			s.Shutdown(t.Context())
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(ln, Options{})
	if err != nil {
		t.Fatalf("loopback without token: %v", err)
	}
	s.Shutdown(t.Context())
}

// TestClientCertificateAuthenticates: over TLS with a client CA, a
// verified client certificate opens the data endpoints; without one they
// answer 401 and the probes still answer.
func TestClientCertificateAuthenticates(t *testing.T) {
	cert, key, ca := writeCerts(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(ln, Options{TLSCertFile: cert, TLSKeyFile: key, ClientCAFile: ca, Metrics: NewMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(t.Context())
	pool := x509.NewCertPool()
	pemCA, _ := os.ReadFile(ca)
	pool.AppendCertsFromPEM(pemCA)
	client := func(withCert bool) *http.Client {
		tc := &tls.Config{RootCAs: pool, ServerName: "localhost"}
		if withCert {
			c, err := tls.LoadX509KeyPair(cert, key) // the same leaf serves as a client certificate
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{c}
		}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	}
	get := func(c *http.Client, path string) int {
		resp, err := c.Get("https://" + s.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get(client(false), "/metrics"); c != http.StatusUnauthorized {
		t.Errorf("no client certificate: %d, want 401", c)
	}
	if c := get(client(false), "/healthz"); c != 200 {
		t.Errorf("probe without certificate: %d", c)
	}
	if c := get(client(true), "/metrics"); c != 200 {
		t.Errorf("with a client certificate: %d, want 200", c)
	}
}

// writeCerts writes a self-signed CA and a leaf for localhost/127.0.0.1
// (usable as server and client certificate); it returns the leaf's
// certificate and key files and the CA file.
func writeCerts(t *testing.T) (cert, key, ca string) {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(leafKey)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("leaf.pem", "CERTIFICATE", leafDER), write("leaf.key", "EC PRIVATE KEY", keyDER), write("ca.pem", "CERTIFICATE", caDER)
}
