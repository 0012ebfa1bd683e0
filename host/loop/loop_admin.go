package loop

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/config"
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
		admin.WriteJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "GET only"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	id := r.PathValue("id")
	switch {
	case r.URL.Path == "/v1/ab":
		admin.WriteJSON(w, 200, a.l.ab.Report())
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
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	if out == nil {
		out = []GroupSummary{}
	}
	admin.WriteJSON(w, 200, map[string]any{"groups": out})
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
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	if d == nil {
		admin.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "group " + id + " not found"})
		return
	}
	d.AssignorFallback = a.l.fallbacks.get(id)
	d.RecentEvents = a.l.history.get(id)
	if d.RecentEvents == nil {
		d.RecentEvents = []string{}
	}
	admin.WriteJSON(w, 200, d)
}

// config serves GET /v1/groups/{id}/config: the effective configuration
// of any group id (existing or not), runtime values included.
func (a *groupsAPI) config(ctx context.Context, w http.ResponseWriter, id string) {
	var settings []config.Setting
	if err := a.l.readGroup(ctx, id, func(*core.Coordinator, int64) core.Output { settings = a.l.groupSettings(id); return core.Output{} }); err != nil {
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	admin.WriteJSON(w, 200, map[string]any{"group": id, "config": settings})
}

// history serves GET /v1/groups/{id}/history: the group's last targets
// with their reasons, assignor, metrics and moves.
func (a *groupsAPI) history(ctx context.Context, w http.ResponseWriter, id string) {
	found := false
	if err := a.l.readGroup(ctx, id, func(c *core.Coordinator, _ int64) core.Output { _, found = c.Group(id); return core.Output{} }); err != nil {
		admin.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	if !found {
		admin.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "group " + id + " not found"})
		return
	}
	admin.WriteJSON(w, 200, a.l.ab.History(id))
}
