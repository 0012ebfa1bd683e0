package admin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestDebugHeapNeedsToken: POST /v1/debug/heap forces a collection only
// for an authenticated caller, is refused outright when no token or client
// CA is configured, and answers a non-zero live heap.
func TestDebugHeapNeedsToken(t *testing.T) {
	do := func(h http.Handler, method, auth string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, "/v1/debug/heap", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		h.ServeHTTP(rec, req)
		return rec
	}
	open := Handler(Options{Metrics: NewMetrics()})
	for _, auth := range []string{"", "Bearer anything"} {
		if c := do(open, "POST", auth).Code; c != http.StatusForbidden {
			t.Errorf("no token configured, auth %q: %d, want 403", auth, c)
		}
	}
	h := Handler(Options{Token: "s3cret", Metrics: NewMetrics()})
	for _, auth := range []string{"", "Bearer wrong", "s3cret"} {
		if c := do(h, "POST", auth).Code; c != http.StatusUnauthorized {
			t.Errorf("auth %q: %d, want 401", auth, c)
		}
	}
	if c := do(h, "GET", "Bearer s3cret").Code; c != http.StatusMethodNotAllowed {
		t.Errorf("GET with the token: %d, want 405", c)
	}
	rec := do(h, "POST", "Bearer s3cret")
	if rec.Code != 200 {
		t.Fatalf("POST with the token: %d %s", rec.Code, rec.Body)
	}
	var got map[string]uint64
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["heapLiveBytes"] == 0 || got["runtimeTotalBytes"] < got["heapLiveBytes"] {
		t.Errorf("answer %v: want a live heap below the runtime's total", got)
	}
}
