package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/plugin"
)

// PluginsHandler serves /v1/plugins: GET lists the assignors; POST
// /v1/plugins/{name} {"path": "..."} loads a plugin, PUT reloads it
// (optionally from a new path), DELETE unloads it. A path is checked
// against files (plugin directories, names, file type and size) before
// anything is read. The admin server requires the token for every method
// but GET.
func PluginsHandler(a *assign.Registry, files plugin.FilePolicy) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if r.Method == http.MethodGet {
			info := a.Info()
			if name == "" {
				WriteJSON(w, 200, map[string]any{"plugins": info})
				return
			}
			for _, pi := range info {
				if pi.Name == name {
					WriteJSON(w, 200, pi)
					return
				}
			}
			WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no assignor " + name})
			return
		}
		if name == "" {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "name the plugin: /v1/plugins/{name}"})
			return
		}
		var body struct {
			Path string `json:"path"`
		}
		if r.Method != http.MethodDelete {
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
				WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be {\"path\": \"/file.wasm\"}: " + err.Error()})
				return
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		defer cancel()
		var err error
		switch r.Method {
		case http.MethodPost:
			var path string
			if path, err = files.Resolve(body.Path); err == nil {
				err = a.Load(ctx, name, path)
			}
		case http.MethodPut:
			path := body.Path
			if path != "" {
				path, err = files.Resolve(path)
			}
			if err == nil {
				err = a.Reload(ctx, name, path)
			}
		case http.MethodDelete:
			err = a.Unload(ctx, name)
		default:
			WriteJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "GET, POST, PUT or DELETE"})
			return
		}
		if err != nil {
			code := http.StatusBadRequest
			if strings.Contains(err.Error(), "has no loaded plugin") {
				code = http.StatusNotFound
			}
			WriteJSON(w, code, map[string]string{"error": err.Error()})
			return
		}
		WriteJSON(w, 200, map[string]any{"ok": true, "plugins": a.Info()})
	})
}
