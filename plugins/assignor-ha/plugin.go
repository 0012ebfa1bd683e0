package ha

import (
	"fmt"
	"strconv"

	"github.com/coordhost/coordhost/abi"
)

// ConfigProbingInterval is the assignment config (AssignRequest configs
// key) holding the probing interval in ms, as Kafka Streams'
// probing.rebalance.interval.ms.
const ConfigProbingInterval = "probing.rebalance.interval.ms"

// DefaultProbingIntervalMs is Kafka Streams' default probing interval (10 min).
const DefaultProbingIntervalMs int64 = 600_000

// Assign is the plugin's task assignor operation (abi/SPEC.md 3.2): Kafka's
// HighAvailabilityTaskAssignor per process, split over each process's
// members. NextProbeMs asks for a probing rebalance after the probing
// interval when warm-ups were placed or moves are still pending.
func Assign(req *abi.AssignRequest) (*abi.AssignResponse, error) {
	interval, err := ProbingInterval(req)
	if err != nil {
		return nil, err
	}
	r, err := AssignProcesses(req)
	if err != nil {
		return nil, err
	}
	stateful := statefulTasks(req)
	resp := &abi.AssignResponse{Members: splitOverMembers(req, r, stateful), NextProbeMs: -1}
	if r.ProbingNeeded {
		resp.NextProbeMs = interval
	}
	return resp, nil
}

// ProbingInterval reads the probing interval from req's configs, or the
// default; a value that is not a positive integer is an error naming it.
func ProbingInterval(req *abi.AssignRequest) (int64, error) {
	for _, kv := range req.Configs.All {
		if kv.Key == ConfigProbingInterval {
			v, err := strconv.ParseInt(kv.Value, 10, 64)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("config %s=%q: want a positive number of ms", kv.Key, kv.Value)
			}
			return v, nil
		}
	}
	return DefaultProbingIntervalMs, nil
}

func statefulTasks(req *abi.AssignRequest) []bool {
	out := make([]bool, 0, req.NumTasks())
	for _, s := range req.Subtopologies {
		for p := int32(0); p < s.Partitions; p++ {
			out = append(out, s.Stateful)
		}
	}
	return out
}

// Probe is the plugin's probing policy (abi/SPEC.md 3.4). It asks for a
// rebalance as soon as a warm-up of the current target is caught up (its
// process is within acceptable_recovery_lag, with a known end offset), and
// otherwise once the probing interval has passed since the target was
// computed while the target still holds warm-ups. NextProbeMs is the time
// left until the interval ends (the interval again after a rebalance).
func Probe(req *abi.ProbeRequest) (*abi.ProbeResponse, error) {
	interval, err := ProbingInterval(&req.Group)
	if err != nil {
		return nil, err
	}
	if err := checkProbeRequest(req); err != nil {
		return nil, err
	}
	warm, caught := warmupStatus(req)
	due := req.LastAssignMs + interval
	switch {
	case caught:
		return &abi.ProbeResponse{Rebalance: true, NextProbeMs: interval}, nil
	case warm && req.NowMs >= due:
		return &abi.ProbeResponse{Rebalance: true, NextProbeMs: interval}, nil
	case req.NowMs >= due:
		return &abi.ProbeResponse{NextProbeMs: interval}, nil
	default:
		return &abi.ProbeResponse{NextProbeMs: due - req.NowMs}, nil
	}
}

// warmupStatus reports whether the target holds any warm-up, and whether
// one of them is caught up on its process.
func warmupStatus(req *abi.ProbeRequest) (any, caught bool) {
	var lags *Lags
	for i, ma := range req.Target {
		if len(ma.Warmup) == 0 {
			continue
		}
		any = true
		if lags == nil {
			lags = ComputeLags(&req.Group)
		}
		p, total := req.Group.Members[i].Process, req.Group.NumTasks()
		for _, t := range ma.Warmup {
			if t >= 0 && t < total && lags.Lag(p, t) != LagRunning && lags.CaughtUp(p, t, req.Group.Configs.AcceptableRecoveryLag) {
				return true, true
			}
		}
	}
	return any, false
}
