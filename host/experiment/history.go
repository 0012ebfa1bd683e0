package experiment

// Rebalance history: for each group, the last N targets the assignor
// computed and core installed, each with why it was computed (core's
// events since the previous run), the assignor and its version, the
// assignment metrics (abi/metrics) and the active tasks that changed
// process. Served at GET /v1/groups/{id}/history and logged, one line per
// installed target. Soft state: a restart starts it empty.

import (
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/coordhost/coordhost/abi/metrics"
	"github.com/coordhost/coordhost/core"
)

// DefaultHistoryTargets is the default of admin.history.targets: how many
// targets the history keeps per group.
const DefaultHistoryTargets = 20

// maxListedMoves bounds the moves one history entry lists; the rest are
// counted in MovesNotListed.
const maxListedMoves = 100

// maxGroups bounds how many groups the history, the A/B results and the
// split arms each keep: bounded memory under group-id churn.
const maxGroups = 10000

// maxPendingReasons bounds the reasons kept for one group's next run.
const maxPendingReasons = 32

// Reason is one of core's events that made a new target due.
type Reason struct {
	// Kind is "member-joined", "member-left", "member-fenced",
	// "topology-changed", "metadata-changed", "member-updated",
	// "config-changed", "probe", "warmup-caught-up" or "migration".
	Kind   string `json:"kind"`
	Member string `json:"member,omitempty"`
	// Detail is core's reason where Kind does not say it all (why a member
	// was fenced, which way a migration went).
	Detail string `json:"detail,omitempty"`
}

// Move is one active task that changed process in a target.
type Move struct {
	Task string `json:"task"`           // Kafka Streams' task id, "0_3"
	From string `json:"from,omitempty"` // process that ran it; "" when no member did
	To   string `json:"to"`
	// Cold marks a stateful hand-over to a process without its state
	// (abi/metrics.HandOver).
	Cold bool `json:"cold,omitempty"`
}

// TargetRecord is one entry of a group's rebalance history.
type TargetRecord struct {
	// Epoch is the assignment epoch core installed the target at.
	Epoch int32     `json:"epoch"`
	Time  time.Time `json:"time"`
	// Reasons are core's events since the previous run, oldest first.
	Reasons  []Reason `json:"reasons"`
	Probe    bool     `json:"probe,omitempty"`
	Assignor string   `json:"assignor"`
	// Version is "wasm sha256:<prefix of the module's hash>" or "native".
	Version string `json:"version"`
	// Metrics are measured against the members' current assignment when
	// the run started (what the group was running).
	Metrics        metrics.Report `json:"metrics"`
	Moves          []Move         `json:"moves"`
	MovesNotListed int            `json:"moves_not_listed,omitempty"`
	// Inputs are the offsets the assignor was handed (absent when the
	// request carried none or more than the history keeps).
	Inputs *Inputs `json:"inputs,omitempty"`
}

// GroupHistory is GET /v1/groups/{id}/history.
type GroupHistory struct {
	Group string `json:"group"`
	// Limit is how many targets are kept (admin.history.targets).
	Limit int `json:"limit"`
	// Targets are the last installed targets, oldest first.
	Targets []TargetRecord `json:"targets"`
}

// History is group's rebalance history, oldest first.
func (a *Runtime) History(group string) GroupHistory {
	return GroupHistory{Group: group, Limit: a.history.limit, Targets: a.history.get(group)}
}

// targetHistory keeps the rebalance history of every group.
type targetHistory struct {
	log   *slog.Logger
	limit int

	mu      sync.Mutex
	reasons map[string][]Reason // since the last dispatched run
	pending map[string]*Target  // computed, waiting to be installed
	byGroup map[string]*entries // installed
}

// entries are a group's installed targets: oldest first until limit
// are kept, then a ring whose oldest is at start.
type entries struct {
	s     []entry
	start int
}

// add keeps e, dropping the oldest beyond limit. The slice grows to limit
// at most, never past it.
func (es *entries) add(e entry, limit int) {
	if len(es.s) < limit {
		if len(es.s) == cap(es.s) { // append could grow it past limit
			s := make([]entry, len(es.s), min(max(2*len(es.s), 1), limit))
			copy(s, es.s)
			es.s = s
		}
		es.s = append(es.s, e)
		return
	}
	es.s[es.start] = e
	es.start = (es.start + 1) % len(es.s)
}

// all calls fn for each entry, oldest first.
func (es *entries) all(fn func(*entry)) {
	for i := range es.s {
		fn(&es.s[(es.start+i)%len(es.s)])
	}
}

func newTargetHistory(limit int, log *slog.Logger) *targetHistory {
	if limit <= 0 {
		limit = DefaultHistoryTargets
	}
	return &targetHistory{log: log, limit: limit, reasons: map[string][]Reason{},
		pending: map[string]*Target{}, byGroup: map[string]*entries{}}
}

// reasonOf is the history's reading of a committed event; ok is false for
// events that do not make a new target due.
func reasonOf(e core.Event) (Reason, bool) {
	switch e.Kind {
	case core.EventMemberJoined:
		return Reason{Kind: "member-joined", Member: e.Member}, true
	case core.EventMemberLeft:
		return Reason{Kind: "member-left", Member: e.Member}, true
	case core.EventMemberFenced:
		return Reason{Kind: "member-fenced", Member: e.Member, Detail: string(e.Reason)}, true
	case core.EventEpochBumped:
		switch e.Reason {
		case core.ReasonMemberJoined, core.ReasonMemberLeft, "": // the member event says it
			return Reason{}, false
		}
		return Reason{Kind: string(e.Reason)}, true
	case core.EventProbe:
		return Reason{Kind: "probe"}, true
	case core.EventWarmupPromoted:
		return Reason{Kind: "warmup-caught-up", Member: e.Member}, true
	case core.EventGroupConverted:
		return Reason{Kind: "migration", Detail: string(e.Reason)}, true
	}
	return Reason{}, false
}

// observe reads a committed batch's events: reasons for the next run, and
// the installation (or discarding) of computed targets.
func (h *targetHistory) observe(events []core.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range events {
		switch e.Kind {
		case core.EventTargetAssigned:
			if t := h.pending[e.Group]; t != nil && t.e.epoch == e.Epoch {
				delete(h.pending, e.Group)
				h.install(e.Group, &t.e)
			}
			continue
		case core.EventAssignorResultDiscarded:
			delete(h.pending, e.Group)
			continue
		case core.EventGroupDeleted:
			delete(h.reasons, e.Group)
			delete(h.pending, e.Group)
			delete(h.byGroup, e.Group)
			continue
		}
		r, ok := reasonOf(e)
		if !ok {
			continue
		}
		rs := h.reasons[e.Group]
		if len(rs) > 0 && rs[len(rs)-1] == r {
			continue
		}
		if len(rs) >= maxPendingReasons {
			rs = rs[1:]
		}
		if _, known := h.reasons[e.Group]; !known && len(h.reasons) >= maxGroups {
			forgetOne(h.reasons)
		}
		h.reasons[e.Group] = append(rs, r)
	}
}

// take returns (and forgets) the reasons gathered for group's next run.
func (h *targetHistory) take(group string) []Reason {
	h.mu.Lock()
	defer h.mu.Unlock()
	rs := h.reasons[group]
	delete(h.reasons, group)
	return rs
}

// computed notes the target t computed for group because of reasons, to
// be recorded once the batch in which core installed it (events) is
// committed. Called on the loop goroutine.
func (h *targetHistory) computed(group string, t *Target, reasons []Reason, events []core.Event) {
	if t == nil {
		return
	}
	t.e.reasons = slices.Clip(reasons)
	for _, e := range events {
		if e.Kind == core.EventTargetAssigned && e.Group == group {
			t.e.epoch = e.Epoch
			h.mu.Lock()
			if _, known := h.pending[group]; !known && len(h.pending) >= maxGroups {
				forgetOne(h.pending)
			}
			h.pending[group] = t
			h.mu.Unlock()
			return
		}
	}
}

// install records e and logs it. Called with h.mu held.
func (h *targetHistory) install(group string, e *entry) {
	es := h.byGroup[group]
	if es == nil {
		if len(h.byGroup) >= maxGroups {
			forgetOne(h.byGroup)
		}
		es = &entries{}
		h.byGroup[group] = es
	}
	es.add(*e, h.limit)
	rep := e.metrics.unpack()
	mv := rep.Movement
	h.log.Info("new target assignment", "group", group, "epoch", e.epoch, "reasons", reasonsText(e.reasons),
		"assignor", e.assignor, "version", e.version, "moved", mv.Moved+mv.New, "moved_process", mv.MovedProcess,
		"cold", mv.Cold, "warm", mv.Warm, "active_spread", rep.Balance.ActivePerProcess.Spread,
		"standbys_short", rep.Standbys.Short, "warmups", rep.Warmups.Open, "compute", rep.ComputeTime)
}

// get returns group's history, oldest first.
func (h *targetHistory) get(group string) []TargetRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	es := h.byGroup[group]
	if es == nil {
		return []TargetRecord{}
	}
	out := make([]TargetRecord, 0, len(es.s))
	es.all(func(e *entry) { out = append(out, e.record()) })
	return out
}

func reasonsText(rs []Reason) string {
	if len(rs) == 0 {
		return "-"
	}
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += ","
		}
		s += r.Kind
		if r.Member != "" {
			s += ":" + r.Member
		}
		if r.Detail != "" {
			s += "(" + r.Detail + ")"
		}
	}
	return s
}

// forgetOne drops some entry: bounded memory under group-id churn.
func forgetOne[V any](m map[string]V) {
	for k := range m {
		delete(m, k)
		return
	}
}
