package admin

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// The admin page: static HTML, JavaScript and CSS, no build step and
// nothing fetched from elsewhere. It holds no data: the script reads the
// token-protected /v1 API, the token in an Authorization header.
//
//go:embed ui
var uiFiles embed.FS

// uiCSP allows the page its own files and requests to this server only:
// no inline script or style, no frames, no form submissions (the token
// form is handled by the script; a submission could carry it in a URL).
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// uiPath reports whether path is the page or one of its files, served
// without authentication.
func uiPath(path string) bool { return path == "/ui" || strings.HasPrefix(path, "/ui/") }

// uiHandler serves GET /ui (the page) and GET /ui/{file}.
func uiHandler() http.Handler {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded tree always has ui/
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", uiCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/ui" {
			http.ServeFileFS(w, r, sub, "index.html")
			return
		}
		if r.URL.Path == "/ui/" || r.URL.Path == "/ui/index.html" {
			http.Redirect(w, r, "/ui", http.StatusMovedPermanently)
			return
		}
		http.StripPrefix("/ui", files).ServeHTTP(w, r)
	})
}
