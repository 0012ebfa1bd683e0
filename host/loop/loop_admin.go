package host

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/plugin"
)

// groupsAPI serves GET /v1/groups, GET /v1/groups/{id} (and its /config
// and /history) and GET /v1/ab.
type groupsAPI struct{ l *Loop }

// GroupsHandler is the admin /v1/groups handler of the loop.
func (l *Loop) GroupsHandler() http.Handler { return &groupsAPI{l} }

// GroupSummary is one entry of GET /v1/groups.
type GroupSummary struct {
	Group string `json:"group"`
	Type  string `json:"type"`
	State string `json:"state"`
}

// GroupDetail is GET /v1/groups/{id}.
type GroupDetail struct {
	Group    string `json:"group"`
	Type     string `json:"type"`
	State    string `json:"state"`
	Assignor string `json:"assignor,omitempty"`
	// LastAssignorError is why the last assignor run failed ("" if not).
	LastAssignorError string `json:"last_assignor_error,omitempty"`
	// AssignorFallback is set while the group's last target came from the
	// fallback assignor because its plugin failed.
	AssignorFallback *AssignorFallback `json:"assignor_fallback,omitempty"`
	// Streams is Kafka's StreamsGroupDescribe of a streams group: members
	// with epochs, current and target assignments, the topology.
	Streams *kmsg.StreamsGroupDescribeResponseGroup `json:"streams,omitempty"`
	// Classic is Kafka's DescribeGroups of a classic group.
	Classic *kmsg.DescribeGroupsResponseGroup `json:"classic,omitempty"`
	// Consumer is Kafka's ConsumerGroupDescribe of a KIP-848 consumer group.
	Consumer *kmsg.ConsumerGroupDescribeResponseGroup `json:"consumer,omitempty"`
	// RecentEvents are the latest rebalance reasons, oldest first.
	RecentEvents []string `json:"recent_events"`
	// Config is the group's effective configuration, key by key with the
	// source of each value (runtime values: "dynamic").
	Config []config.Setting `json:"config"`
}

func (a *groupsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeJSONResp(w, http.StatusMethodNotAllowed, map[string]string{"error": "GET only"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	id := r.PathValue("id")
	switch {
	case r.URL.Path == "/v1/ab":
		writeJSONResp(w, 200, a.l.ab.Report())
	case strings.HasSuffix(r.URL.Path, "/history"):
		a.history(ctx, w, id)
	case id == "":
		a.list(ctx, w)
	case strings.HasSuffix(r.URL.Path, "/config"):
		a.config(ctx, w, id)
	default:
		a.describe(ctx, w, id)
	}
}

func (a *groupsAPI) list(ctx context.Context, w http.ResponseWriter) {
	var out []GroupSummary
	err := a.l.read(ctx, func(c *core.Coordinator, _ int64) core.Output {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = 5
		for _, g := range readCore[*kmsg.ListGroupsResponse](a.l, c, req).Groups {
			out = append(out, GroupSummary{Group: g.Group, Type: g.GroupType, State: g.GroupState})
		}
		return core.Output{}
	})
	if err != nil {
		writeJSONResp(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	if out == nil {
		out = []GroupSummary{}
	}
	writeJSONResp(w, 200, map[string]any{"groups": out})
}

func (a *groupsAPI) describe(ctx context.Context, w http.ResponseWriter, id string) {
	var d *GroupDetail
	err := a.l.readGroup(ctx, id, func(c *core.Coordinator, _ int64) core.Output {
		g, ok := c.Group(id)
		if !ok {
			return core.Output{}
		}
		d = &GroupDetail{Group: id, State: g.StateName(), LastAssignorError: c.LastAssignorError(id), Config: a.l.groupSettings(id)}
		switch g.Kind() {
		case core.GroupKindStreams:
			d.Type = "streams"
			req := kmsg.NewPtrStreamsGroupDescribeRequest()
			req.Version, req.Groups = 1, []string{id}
			if resp := readCore[*kmsg.StreamsGroupDescribeResponse](a.l, c, req); len(resp.Groups) == 1 {
				d.Streams = &resp.Groups[0]
				if n := d.Streams.AssignorName; n != nil {
					d.Assignor = *n // core's effective assignor of the group
				}
			}
		case core.GroupKindConsumer:
			d.Type = "consumer"
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Version, req.Groups = 1, []string{id}
			if resp := readCore[*kmsg.ConsumerGroupDescribeResponse](a.l, c, req); len(resp.Groups) == 1 {
				d.Consumer = &resp.Groups[0]
				d.Assignor = d.Consumer.AssignorName
			}
		default:
			d.Type = "classic"
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Version, req.Groups = 5, []string{id}
			if resp := readCore[*kmsg.DescribeGroupsResponse](a.l, c, req); len(resp.Groups) == 1 {
				d.Classic = &resp.Groups[0]
			}
		}
		return core.Output{}
	})
	if err != nil {
		writeJSONResp(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	if d == nil {
		writeJSONResp(w, http.StatusNotFound, map[string]string{"error": "group " + id + " not found"})
		return
	}
	d.AssignorFallback = a.l.fallbacks.get(id)
	d.RecentEvents = a.l.history.get(id)
	if d.RecentEvents == nil {
		d.RecentEvents = []string{}
	}
	writeJSONResp(w, 200, d)
}

// config serves GET /v1/groups/{id}/config: the effective configuration
// of any group id (existing or not), runtime values included.
func (a *groupsAPI) config(ctx context.Context, w http.ResponseWriter, id string) {
	var settings []config.Setting
	if err := a.l.readGroup(ctx, id, func(*core.Coordinator, int64) core.Output { settings = a.l.groupSettings(id); return core.Output{} }); err != nil {
		writeJSONResp(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	writeJSONResp(w, 200, map[string]any{"group": id, "config": settings})
}

// history serves GET /v1/groups/{id}/history: the group's last targets
// with their reasons, assignor, metrics and moves.
func (a *groupsAPI) history(ctx context.Context, w http.ResponseWriter, id string) {
	found := false
	if err := a.l.readGroup(ctx, id, func(c *core.Coordinator, _ int64) core.Output { _, found = c.Group(id); return core.Output{} }); err != nil {
		writeJSONResp(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	if !found {
		writeJSONResp(w, http.StatusNotFound, map[string]string{"error": "group " + id + " not found"})
		return
	}
	writeJSONResp(w, 200, a.l.ab.History(id))
}

// PluginsHandler serves /v1/plugins: GET lists the assignors; POST
// /v1/plugins/{name} {"path": "..."} loads a plugin, PUT reloads it
// (optionally from a new path), DELETE unloads it. A path is checked
// against files (plugin directories, names, file type and size) before
// anything is read. The admin server requires the token for every method
// but GET.
func PluginsHandler(a *Assignors, files plugin.FilePolicy) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if r.Method == http.MethodGet {
			info := a.Info()
			if name == "" {
				writeJSONResp(w, 200, map[string]any{"plugins": info})
				return
			}
			for _, pi := range info {
				if pi.Name == name {
					writeJSONResp(w, 200, pi)
					return
				}
			}
			writeJSONResp(w, http.StatusNotFound, map[string]string{"error": "no assignor " + name})
			return
		}
		if name == "" {
			writeJSONResp(w, http.StatusBadRequest, map[string]string{"error": "name the plugin: /v1/plugins/{name}"})
			return
		}
		var body struct {
			Path string `json:"path"`
		}
		if r.Method != http.MethodDelete {
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
				writeJSONResp(w, http.StatusBadRequest, map[string]string{"error": "body must be {\"path\": \"/file.wasm\"}: " + err.Error()})
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
			writeJSONResp(w, http.StatusMethodNotAllowed, map[string]string{"error": "GET, POST, PUT or DELETE"})
			return
		}
		if err != nil {
			code := http.StatusBadRequest
			if strings.Contains(err.Error(), "has no loaded plugin") {
				code = http.StatusNotFound
			}
			writeJSONResp(w, code, map[string]string{"error": err.Error()})
			return
		}
		writeJSONResp(w, 200, map[string]any{"ok": true, "plugins": a.Info()})
	})
}

func writeJSONResp(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
