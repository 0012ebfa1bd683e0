package core

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestScenarios runs the datadriven scenarios under testdata/scenarios.
// Rewrite expectations with: go test ./core -run TestScenarios -rewrite
// (review the diff like code). The commands are described in
// testdata/scenarios/README.md.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		if strings.HasSuffix(path, ".md") {
			return
		}
		var h *harness
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			args := map[string]string{}
			for _, a := range d.CmdArgs {
				args[a.Key] = strings.Join(a.Vals, ",")
			}
			if d.Cmd == "new" {
				h = newHarness(t, scenarioConfig(t, args))
				return "ok"
			}
			if h == nil {
				t.Fatalf("%s: run 'new' first", d.Pos)
			}
			return h.command(t, d, args)
		})
	})
}

func scenarioConfig(t *testing.T, args map[string]string) Config {
	cfg := DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs = 0
	cfg.Streams.AssignmentIntervalMs = 0
	cfg.AssignorWaitMs = 1000
	num := func(k string, dst *int32) {
		if v, ok := args[k]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			*dst = int32(n)
		}
	}
	num("session", &cfg.Streams.SessionTimeoutMs)
	num("heartbeat", &cfg.Streams.HeartbeatIntervalMs)
	num("delay", &cfg.Streams.InitialRebalanceDelayMs)
	num("assign-interval", &cfg.Streams.AssignmentIntervalMs)
	num("standbys", &cfg.Streams.NumStandbyReplicas)
	num("max-size", &cfg.Streams.MaxSize)
	num("warmups", &cfg.Streams.NumWarmupReplicas)
	num("unreleased-heartbeat", &cfg.Streams.UnreleasedHeartbeatIntervalMs)
	if v, ok := args["acceptable-lag"]; ok {
		cfg.Streams.AcceptableRecoveryLag = parseLag(v)
	}
	if v, ok := args["probing-interval"]; ok {
		cfg.Streams.ProbingIntervalMs = parseLag(v)
	}
	if v, ok := args["probing-policy"]; ok {
		cfg.Streams.ProbingPolicy = v
	}
	if v, ok := args["rack-tags"]; ok {
		cfg.Streams.RackAwareAssignmentTags = strings.Split(v, ",")
	}
	if v, ok := args["wait"]; ok {
		n, _ := strconv.Atoi(v)
		cfg.AssignorWaitMs = int64(n)
	}
	return cfg
}

func (h *harness) command(t *testing.T, d *datadriven.TestData, args map[string]string) string {
	prefix := ""
	if v, ok := args["at"]; ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		prefix = h.advanceTo(n)
	}
	return prefix + h.run(t, d, args)
}

func (h *harness) run(t *testing.T, d *datadriven.TestData, args map[string]string) string {
	switch d.Cmd {
	case "topics":
		h.lastTopics = parseTopics(d.Input)
		return h.finish(h.c.updateTopics(h.now, h.lastTopics), false) + "ok"
	case "topology":
		epoch, _ := strconv.Atoi(argOr(args, "epoch", "0"))
		h.topologies[argOr(args, "name", "default")] = parseTopology(int32(epoch), d.Input)
		return "ok"
	case "hb":
		return h.heartbeat(args)
	case "leave":
		args["epoch"] = "-1"
		if _, ok := args["static"]; ok {
			args["epoch"] = "-2"
		}
		return h.heartbeat(args)
	case "tick":
		n, _ := strconv.ParseInt(args["advance"], 10, 64)
		return h.advanceTo(h.now+n) + fmt.Sprintf("now=%d", h.now)
	case "assign":
		_, fail := args["fail"]
		out := h.answerRuns(argOr(args, "group", "g"), argOr(args, "mode", "ref"), fail)
		if e := h.c.LastAssignorError(argOr(args, "group", "g")); e != "" {
			out += "last assignor error: " + e + "\n"
		}
		return out
	case "state":
		return h.c.Dump() + "timers " + strings.Join(h.c.TimerKeys(), " ") + "\n"
	case "replay-check":
		return h.replayCheck()
	case "restart":
		return h.restart()
	case "delete":
		h.nextReq++
		h.reqMember[h.nextReq] = "admin"
		out := h.finish(h.c.deleteGroups(h.now, h.nextReq, &kmsg.DeleteGroupsRequest{Groups: []string{argOr(args, "group", "g")}}), false)
		_, exists := h.c.groups[argOr(args, "group", "g")]
		return out + fmt.Sprintf("group exists: %v", exists)
	case "describe":
		return h.describe(argOr(args, "group", "g"))
	case "offset-commit":
		return h.offsetCommit(args)
	case "set-config":
		var o StreamsGroupOverrides
		if v, ok := args["standbys"]; ok {
			n, _ := strconv.Atoi(v)
			n32 := int32(n)
			o.NumStandbyReplicas = &n32
		}
		if v, ok := args["tags"]; ok {
			o.RackAwareAssignmentTags = strings.Split(v, ",")
		}
		h.c.setStreamsGroupConfig(argOr(args, "group", "g"), o)
		return "ok"
	}
	if out, ok := h.warmupCommand(args, d.Cmd); ok {
		return out
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}
