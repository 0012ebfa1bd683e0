package admin

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestMetricsText(t *testing.T) {
	m := NewMetrics()
	m.Conn(2)
	m.Conn(-1)
	m.Served(3, 2*time.Second, nil)
	m.Served(3, time.Second, errors.New("closed"))
	m.Served(0, time.Second, nil)
	m.Gauge("store_records_at_start", "Records at start.", func() float64 { return 7 })
	m.Gauge("coordhost_probe_checks_total", "Already prefixed.", func() float64 { return 3 })
	m.Counter("kafka_poller_served_total", "A counter.", func() float64 { return 5 })
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"coordhost_kafka_connections 1\n",
		`coordhost_kafka_requests_total{api="Produce"} 1` + "\n",
		`coordhost_kafka_requests_total{api="Metadata"} 2` + "\n",
		`coordhost_kafka_request_errors_total{api="Metadata"} 1` + "\n",
		`coordhost_kafka_request_seconds_total{api="Metadata"} 3` + "\n",
		"# TYPE coordhost_store_records_at_start gauge\ncoordhost_store_records_at_start 7\n",
		"\ncoordhost_probe_checks_total 3\n",
		"# TYPE coordhost_kafka_poller_served_total counter\ncoordhost_kafka_poller_served_total 5\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "coordhost_coordhost_") {
		t.Errorf("prefix doubled:\n%s", b.String())
	}
}

func TestReadyzReportsReason(t *testing.T) {
	h := Handler(Options{Ready: func() error { return errors.New("draining") }})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "draining") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// TestClusterNotWired: without cluster ownership /v1/cluster answers 501,
// with it the handler serves; other methods are not routed.
func TestClusterNotWired(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(Options{}).ServeHTTP(rec, httptest.NewRequest("GET", "/v1/cluster", nil))
	if rec.Code != 501 {
		t.Fatalf("GET /v1/cluster without a cluster: %d, want 501", rec.Code)
	}
	served := false
	h := Handler(Options{Cluster: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served = true })})
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/cluster", nil))
	if !served || rec.Code != 200 {
		t.Fatalf("GET /v1/cluster: served %v, code %d", served, rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/cluster", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /v1/cluster: %d, want 405", rec.Code)
	}
}
