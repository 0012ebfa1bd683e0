package core

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corerecords "github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/internal/testtool"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHeartbeatParityWithKafka drives Kafka 4.4's own GroupMetadataManager
// (interop/records-golden, HeartbeatParity) and coordhost's Coordinator with
// the same random scripts of streams heartbeats (joins, steady heartbeats,
// late revocations, null owned lists, leaves) and clock ticks (session
// timeouts), with the same deterministic assignor on both sides (coordhost's
// runs answered at once), and requires the same responses and the same
// records, byte for byte (the metadata hash, XXH3 in Kafka and FNV in
// coordhost, is masked).
var (
	parityScripts     = flag.Int("parity.scripts", 12, "number of heartbeat parity scripts")
	parityScriptSteps = flag.Int("parity.steps", 60, "steps per heartbeat parity script")
)

func TestHeartbeatParityWithKafka(t *testing.T) {
	var allLines, allOurs []string
	for script := 0; script < *parityScripts; script++ {
		rng := rand.New(rand.NewPCG(uint64(script), 2071))
		lines, ours := heartbeatScript(t, rng, *parityScriptSteps)
		allLines = append(allLines, lines...)
		allOurs = append(allOurs, lines[0])
		allOurs = append(allOurs, ours...)
	}
	in := filepath.Join(t.TempDir(), "scripts.txt")
	if err := os.WriteFile(in, []byte(strings.Join(allLines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := testtool.JavaMain(t, "../interop/records-golden", "coordhost.golden.HeartbeatParity", in)
	kafka := sortTargetRuns(maskHashes(t, strings.Split(strings.TrimSpace(string(out)), "\n")))
	ours := sortTargetRuns(maskHashes(t, allOurs))
	records, responses := 0, 0
	for _, l := range kafka {
		if strings.HasPrefix(l, "record ") {
			records++
		} else if strings.HasPrefix(l, "response ") {
			responses++
		}
	}
	staticLeaves := strings.Count(strings.Join(allLines, "\n"), "|-2|")
	t.Logf("%d scripts: Kafka wrote %d records and %d responses; %d static leaves", *parityScripts, records, responses, staticLeaves)
	if staticLeaves == 0 {
		t.Fatalf("no static member left with -2")
	}
	if records < 500 || responses < 500 {
		t.Fatalf("scripts exercised too little: %d records, %d responses", records, responses)
	}
	for i := 0; i < len(kafka) || i < len(ours); i++ {
		var k, o string
		if i < len(kafka) {
			k = kafka[i]
		}
		if i < len(ours) {
			o = ours[i]
		}
		if k != o {
			lo := max(i-12, 0)
			t.Fatalf("diverges at output line %d:\n kafka %s\n core  %s\ncontext (kafka):\n%s", i, k, o,
				strings.Join(kafka[lo:min(i+1, len(kafka))], "\n"))
		}
	}
}

// sortTargetRuns sorts each run of consecutive target-assignment-member
// records (type 21): Kafka writes them in Java HashMap order of member ids,
// coordhost sorted by member id; the set and its position are compared.
func sortTargetRuns(lines []string) []string {
	out := append([]string(nil), lines...)
	isTarget := func(l string) bool { return strings.HasPrefix(l, "record 0015") }
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && isTarget(out[j]) {
			j++
		}
		if j > i {
			sort.Strings(out[i:j])
			i = j
		} else {
			i++
		}
	}
	return out
}

// maskHashes zeroes the metadata hash of type-17 records.
func maskHashes(t *testing.T, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "record" || f[2] == "-" {
			continue
		}
		rec, err := corerecords.DecodeRecord(mustHex(f[1]), mustHex(f[2]))
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if v, ok := rec.Value.(corerecords.StreamsGroupMetadataValue); ok {
			v.MetadataHash = 0
			rec.Value = v
			k, val := corerecords.EncodeRecord(rec)
			out[i] = fmt.Sprintf("record %x %x", k, val)
		}
	}
	return out
}

type parityClient struct {
	joined  bool
	epoch   int32
	owned   []kmsg.TaskIDs
	standby []kmsg.TaskIDs
	late    []kmsg.TaskIDs // what a late revoker still reports
}

// heartbeatScript generates a script while running it against coordhost,
// returning the script and coordhost's output in HeartbeatParity's format.
func heartbeatScript(t *testing.T, rng *rand.Rand, steps int) ([]string, []string) {
	cfg := DefaultConfig()
	delay, interval := []int32{0, 3000}[rng.IntN(2)], []int32{0, 1000}[rng.IntN(2)]
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs = delay, interval
	cfg.Streams.NumStandbyReplicas = 1
	c, _ := New(cfg)
	parts := 2 + rng.IntN(5)
	c.updateTopics(0, []TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: int32(parts)},
		{Name: "store-changelog", ID: [16]byte{2}, Partitions: int32(parts)}})
	c.Commit()
	lines := []string{fmt.Sprintf("topics in:%d,store-changelog:%d %d %d", parts, parts, delay, interval)}
	var out []string
	clients := map[string]*parityClient{}
	// A dynamic member that left with -1 comes back as a new process with a
	// new member id, as Kafka Streams does (Kafka's per-epoch refined-
	// assignment cache would otherwise hand a same-id rejoiner its old
	// target within the assignment interval; see docs/RATIONALE.md).
	generation := map[int]int{}
	now := int64(1000)
	emit := func(o Output) {
		for _, r := range o.Records {
			k, v := corerecords.EncodeRecord(r)
			vh := "-"
			if v != nil {
				vh = fmt.Sprintf("%x", v)
			}
			out = append(out, fmt.Sprintf("record %x %s", k, vh))
		}
	}
	run := func(o Output) Output {
		// Answer assignor runs at once, as Kafka's synchronous assignor does.
		all := o
		for len(o.AssignorRuns) > 0 {
			run := o.AssignorRuns[0]
			c.Commit()
			o = c.assignorResult(now, run, ReferenceAssign(run.Input), nil)
			all.Records = append(all.Records, o.Records...)
			all.Responses = append(all.Responses, o.Responses...)
		}
		c.Commit()
		return all
	}
	for step := 0; step < steps; step++ {
		if rng.IntN(10) == 0 {
			now += int64(20000 + rng.IntN(40000))
			lines = append(lines, fmt.Sprintf("tick|%d", now))
			out = append(out, fmt.Sprintf("tick %d", now))
			for {
				o, fired := c.tickOne(now, false)
				if !fired {
					break
				}
				emit(run(o))
			}
			for id := range clients {
				if g, ok := c.groups["g"].(*streamsGroup); !ok || g.members[id] == nil {
					delete(clients, id)
				}
			}
			continue
		}
		now += int64(rng.IntN(3000))
		slot := 1 + rng.IntN(4)
		id := fmt.Sprintf("m%d", slot)
		if generation[slot] > 0 {
			id = fmt.Sprintf("m%d-%d", slot, generation[slot])
		}
		cl := clients[id]
		if cl == nil {
			cl = &parityClient{}
			clients[id] = cl
		}
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID = "g", id
		instance := ""
		if slot >= 3 { // static members
			instance = fmt.Sprintf("i-m%d", slot)
			req.InstanceID = &instance
		}
		process := ""
		owned := "null"
		switch {
		case !cl.joined:
			process = "p-" + id
			req.MemberEpoch, req.RebalanceTimeoutMillis, req.ProcessID = 0, 30000, &process
			req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
				{SubtopologyID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []kmsg.TopicInfo{{Topic: "store-changelog"}}}}}
			req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
			owned = ";;"
		case rng.IntN(12) == 0:
			req.MemberEpoch = -1
			if instance != "" && rng.IntN(2) == 0 {
				req.MemberEpoch = -2
			}
		default:
			req.MemberEpoch = cl.epoch
			if rng.IntN(6) > 0 {
				report := cl.owned
				if cl.late != nil && rng.IntN(2) == 0 {
					report = cl.late
				} else {
					cl.late = nil
				}
				req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = nonNil(report), nonNil(cl.standby), []kmsg.TaskIDs{}
				list := func(ids []kmsg.TaskIDs) string {
					return strings.ReplaceAll(strings.Trim(fmtKmsgTasks(ids), "[]"), " ", ",")
				}
				owned = list(report) + ";" + list(cl.standby) + ";"
			}
		}
		lines = append(lines, fmt.Sprintf("hb|%s|%d|%s|%s|%d|%s", id, req.MemberEpoch, process, owned, now, instance))
		o := run(c.streamsGroupHeartbeat(now, RequestID(step), ClientInfo{ClientID: "client-" + id, ClientHost: "localhost/127.0.0.1"}, req))
		emit(o)
		for _, r := range o.Responses {
			resp := r.Msg.(*kmsg.StreamsGroupHeartbeatResponse)
			if resp.ErrorCode != 0 {
				out = append(out, fmt.Sprintf("response %s error=%s", id, kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error).Message))
				if resp.ErrorCode == kerr.FencedMemberEpoch.Code || resp.ErrorCode == kerr.UnknownMemberID.Code {
					*cl = parityClient{}
				}
				continue
			}
			line := fmt.Sprintf("response %s epoch=%d", id, resp.MemberEpoch)
			if resp.ActiveTasks != nil {
				line += " active=" + fmtKmsgTasks(resp.ActiveTasks) + " standby=" + fmtKmsgTasks(resp.StandbyTasks)
			}
			line += " status="
			for _, s := range resp.Status {
				line += fmt.Sprintf("%d,", s.StatusCode)
			}
			out = append(out, line)
			if resp.MemberEpoch < 0 {
				delete(clients, id) // a static member (-2) rejoins later with epoch 0
				if resp.MemberEpoch == leaveEpoch && instance == "" {
					generation[slot]++
				}
				continue
			}
			cl.joined, cl.epoch = true, resp.MemberEpoch
			if resp.ActiveTasks != nil {
				if rng.IntN(3) == 0 {
					cl.late = cl.owned
				}
				cl.owned, cl.standby = resp.ActiveTasks, resp.StandbyTasks
			}
		}
	}
	return lines, out
}
