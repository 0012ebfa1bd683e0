package experiment

// Rebalance history: for each group, the last N targets the assignor
// computed and core installed, each with why it was computed (core's
// events since the previous run), the assignor and its version, the
// assignment metrics (abi/metrics) and the active tasks that changed
// process. Served at GET /v1/groups/{id}/history and logged, one line per
// installed target. Soft state: a restart starts it empty.

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/coordhost/coordhost/abi"
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

// Target is a primary's measured result on its way to the history: the
// host carries it from the assignor worker to the input that hands the
// result to core.
type Target struct {
	rec *TargetRecord
}

// newTarget is the history entry of the primary's result resp for run,
// measured as rep, computed at now.
func newTarget(run core.AssignorRun, req *abi.AssignRequest, resp *abi.AssignResponse, version string, rep metrics.Report, now time.Time) *Target {
	hand, _ := metrics.HandOvers(req, resp, metrics.Options{})
	rec := &TargetRecord{Epoch: run.Epoch, Time: now.UTC(), Probe: run.Probe, Assignor: run.Assignor,
		Version: version, Metrics: rep}
	rec.Moves, rec.MovesNotListed = moves(req, resp, hand)
	if rec.Moves == nil {
		rec.Moves = []Move{}
	}
	return &Target{rec: rec}
}

// targetHistory keeps the rebalance history of every group.
type targetHistory struct {
	log   *slog.Logger
	limit int

	mu      sync.Mutex
	reasons map[string][]Reason        // since the last dispatched run
	pending map[string]*TargetRecord   // computed, waiting to be installed
	byGroup map[string][]*TargetRecord // installed, oldest first
}

func newTargetHistory(limit int, log *slog.Logger) *targetHistory {
	if limit <= 0 {
		limit = DefaultHistoryTargets
	}
	return &targetHistory{log: log, limit: limit, reasons: map[string][]Reason{},
		pending: map[string]*TargetRecord{}, byGroup: map[string][]*TargetRecord{}}
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
			if rec := h.pending[e.Group]; rec != nil && rec.Epoch == e.Epoch {
				delete(h.pending, e.Group)
				h.install(e.Group, rec)
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
	rec := t.rec
	rec.Reasons = reasons
	for _, e := range events {
		if e.Kind == core.EventTargetAssigned && e.Group == group {
			rec.Epoch = e.Epoch
			h.mu.Lock()
			if _, known := h.pending[group]; !known && len(h.pending) >= maxGroups {
				forgetOne(h.pending)
			}
			h.pending[group] = rec
			h.mu.Unlock()
			return
		}
	}
}

// install records rec and logs it. Called with h.mu held.
func (h *targetHistory) install(group string, rec *TargetRecord) {
	s := h.byGroup[group]
	if s == nil && len(h.byGroup) >= maxGroups {
		forgetOne(h.byGroup)
	}
	s = append(s, rec)
	if len(s) > h.limit {
		s = s[len(s)-h.limit:]
	}
	h.byGroup[group] = s
	mv := rec.Metrics.Movement
	h.log.Info("new target assignment", "group", group, "epoch", rec.Epoch, "reasons", reasonsText(rec.Reasons),
		"assignor", rec.Assignor, "version", rec.Version, "moved", mv.Moved+mv.New, "moved_process", mv.MovedProcess,
		"cold", mv.Cold, "warm", mv.Warm, "active_spread", rec.Metrics.Balance.ActivePerProcess.Spread,
		"standbys_short", rec.Metrics.Standbys.Short, "warmups", rec.Metrics.Warmups.Open, "compute", rec.Metrics.ComputeTime)
}

// get returns group's history, oldest first (nil when none).
func (h *targetHistory) get(group string) []TargetRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]TargetRecord, 0, len(h.byGroup[group]))
	for _, r := range h.byGroup[group] {
		out = append(out, *r)
	}
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

// moves lists the active tasks of resp on another process than in req's
// current assignment, in task order, with the cold hand-overs marked.
func moves(req *abi.AssignRequest, resp *abi.AssignResponse, hand []metrics.HandOver) (out []Move, notListed int) {
	ts := abi.NewTaskSpace(req.Subtopologies)
	was := make(map[int32]int32, ts.Total())
	for _, m := range req.Members {
		for _, t := range m.Active {
			was[t] = m.Process
		}
	}
	cold := map[int32]bool{}
	for _, h := range hand {
		cold[h.Task] = h.Cold
	}
	type mv struct{ task, from, to int32 }
	var all []mv
	for i, m := range resp.Members {
		to := req.Members[i].Process
		for _, t := range m.Active {
			from, ok := was[t]
			if !ok {
				from = -1
			}
			if from != to {
				all = append(all, mv{t, from, to})
			}
		}
	}
	slices.SortFunc(all, func(a, b mv) int { return int(a.task) - int(b.task) })
	for i, x := range all {
		if i == maxListedMoves {
			return out, len(all) - i
		}
		s, p := ts.Locate(x.task)
		m := Move{Task: fmt.Sprintf("%s_%d", req.Subtopologies[s].ID, p), To: req.Processes[x.to], Cold: cold[x.task]}
		if x.from >= 0 {
			m.From = req.Processes[x.from]
		}
		out = append(out, m)
	}
	return out, 0
}
