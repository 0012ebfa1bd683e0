package main

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

func TestPhaseRate(t *testing.T) {
	for _, c := range []struct {
		phase  string
		closed float64
		want   float64
		err    bool
	}{
		{"closed", 0, 0, false},
		{"rate=2000", 0, 2000, false},
		{"rate=0.8x", 5000, 4000, false},
		{"rate=0.8x", 0, 0, true}, // no closed phase before it
		{"rate=fast", 0, 0, true},
		{"rate=0", 0, 0, true},
		{"open", 0, 0, true},
	} {
		got, err := phaseRate(c.phase, c.closed)
		if (err != nil) != c.err || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("phaseRate(%q, %v) = %v, %v; want %v, error %v", c.phase, c.closed, got, err, c.want, c.err)
		}
	}
}

// TestServerCPU reads this process's own /proc/<pid>/stat while it burns
// CPU: the figure must grow with the CPU used, as getrusage sees it.
func TestServerCPU(t *testing.T) {
	if serverCPU(0) != 0 {
		t.Error("pid 0 must read as no process")
	}
	pid := os.Getpid()
	s0, r0 := serverCPU(pid), selfCPU()
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for serverCPU(pid)-s0 < 0.1 && time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			x += i % 7
		}
	}
	s, r := serverCPU(pid)-s0, selfCPU()-r0
	if s < 0.1 {
		t.Fatalf("/proc/%d/stat grew by %.2f s in 30 s of spinning (getrusage: %.2f s; x=%d)", pid, s, r, x)
	}
	if math.Abs(s-r) > 0.1 {
		t.Errorf("/proc/%d/stat grew by %.2f s, getrusage by %.2f s", pid, s, r)
	}
}

// pollerServed reads coordhost's counter from a Prometheus page, and
// reports no figure for a page without it, a failed request or no URL.
func TestPollerServed(t *testing.T) {
	page := "# HELP coordhost_kafka_poller_engaged x\ncoordhost_kafka_poller_engaged 1\n" +
		"# TYPE coordhost_kafka_poller_served_total counter\ncoordhost_kafka_poller_served_total 123456\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprint(w, page)
		case "/off":
			fmt.Fprint(w, "coordhost_kafka_connections 3\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	if n, ok := pollerServed(srv.URL + "/metrics"); !ok || n != 123456 {
		t.Errorf("pollerServed = %d, %v; want 123456, true", n, ok)
	}
	for _, url := range []string{srv.URL + "/off", srv.URL + "/missing", ""} {
		if n, ok := pollerServed(url); ok {
			t.Errorf("pollerServed(%q) = %d, true; want no figure", url, n)
		}
	}
}
