package admin

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestUIShellNeedsNoTokenAndHoldsNoData: with a token configured, the
// page and its files are served without it, under the Content Security
// Policy, and the data endpoints still refuse a request without it.
func TestUIShellNeedsNoTokenAndHoldsNoData(t *testing.T) {
	groups := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		WriteJSON(w, 200, map[string]any{"groups": []map[string]string{{"group": "secret-group"}}})
	})
	h := Handler(Options{Token: "tok", Groups: groups})
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	for path, ctype := range map[string]string{"/ui": "text/html", "/ui/ui.js": "text/javascript", "/ui/ui.css": "text/css", "/ui/favicon.svg": "image/svg+xml"} {
		rec := get(path)
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), ctype) {
			t.Errorf("GET %s without a token: %d %q, want 200 %s", path, rec.Code, rec.Header().Get("Content-Type"), ctype)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if strings.Contains(rec.Body.String(), "secret-group") {
			t.Errorf("GET %s serves group data", path)
		}
	}
	if rec := get("/v1/groups"); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /v1/groups without a token: %d, want 401", rec.Code)
	}
	if rec := get("/ui/nothing.js"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /ui/nothing.js: %d, want 404", rec.Code)
	}
	for _, path := range []string{"/ui/", "/ui/index.html"} {
		if rec := get(path); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/ui" {
			t.Errorf("GET %s: %d to %q, want a redirect to /ui", path, rec.Code, rec.Header().Get("Location"))
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/ui", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui: %d, want 405", rec.Code)
	}
}

// TestUIPageObeysItsPolicy: the page has no inline script, style or event
// handler (the policy would block them), no URL of another origin, and
// the token input has no name (a form submission could carry nothing).
func TestUIPageObeysItsPolicy(t *testing.T) {
	index, err := fs.ReadFile(uiFiles, "ui/index.html")
	if err != nil {
		t.Fatal(err)
	}
	page := string(index)
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1) {
		if !strings.Contains(m, ` src="/ui/`) {
			t.Errorf("inline or foreign script: %s", m)
		}
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<style`), regexp.MustCompile(`\sstyle=`), regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`(href|src|action)="[a-z]+:`), regexp.MustCompile(`<input[^>]*\bname=`),
	} {
		if m := bad.FindString(page); m != "" {
			t.Errorf("index.html has %q", m)
		}
	}
	script, err := fs.ReadFile(uiFiles, "ui/ui.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "localStorage", "location.search", "location.hash", "?token", "#token="} {
		if strings.Contains(string(script), bad) {
			t.Errorf("ui.js uses %s", bad)
		}
	}
}
