package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/sim"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSimValidate checks `coordhost simulate` against real runs (make
// sim-validate, docs/AB-TESTING.md "How the simulator compares with real
// runs"): for the sticky and the HA assignor plugins it records, on real
// Kafka 4.4 with coordhost in front, the online roll (the classic -> streams
// migration roll of the interop app) and a 3 -> 6 scale-out, derives the
// equivalent simulator scenario from each recording, runs the simulator and
// compares tasks moved and unavailable task-seconds.
//
// $COORDHOST_INTEROP_SIMVALIDATE_OUT names the Markdown table to write;
// $COORDHOST_INTEROP_SIMVALIDATE_REPLAY names a directory of recordings
// from an earlier run to compare again without Kafka (each run writes its
// recordings to build/sim-validate beside the table).
func TestSimValidate(t *testing.T) {
	needInterop(t)
	out := os.Getenv("COORDHOST_INTEROP_SIMVALIDATE_OUT")
	if out == "" {
		t.Skip("set COORDHOST_INTEROP_SIMVALIDATE_OUT (make sim-validate) to run the comparison")
	}
	recDir := filepath.Join(filepath.Dir(out), "sim-validate")
	if err := os.MkdirAll(recDir, 0o755); err != nil {
		t.Fatal(err)
	}
	plugins := buildAssignorPlugins(t)
	var recs []*simRecording
	if dir := os.Getenv("COORDHOST_INTEROP_SIMVALIDATE_REPLAY"); dir != "" {
		recs = loadRecordings(t, dir)
	} else {
		reps := 1
		if n, err := strconv.Atoi(os.Getenv("COORDHOST_INTEROP_SIMVALIDATE_RUNS")); err == nil && n > 0 {
			reps = n
		}
		old, _ := filepath.Glob(filepath.Join(recDir, "*.json"))
		for _, f := range old { // a replay of the directory reads every recording in it
			os.Remove(f)
		}
		dir := logDir(t)
		b := startBroker(t, dir)
		// Repetitions alternate the assignors, so both see the machine's
		// load of the same stretch of time.
		for rep := 1; rep <= reps; rep++ {
			for _, run := range []string{"roll", "scale-out"} {
				for _, a := range []string{"sticky", "ha"} {
					r := recordSimRun(t, dir, b, plugins, run, a, rep)
					data, err := json.MarshalIndent(r, "", " ")
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(recDir, r.name()+".json"), data, 0o644); err != nil {
						t.Fatal(err)
					}
					recs = append(recs, r)
				}
			}
		}
	}
	// The model's figures per repetition and kind of run, the two
	// assignors' recordings pooled: the repetitions may see the machine
	// under very different load.
	models := map[string]simModel{}
	key := func(r *simRecording) string { return fmt.Sprintf("%s, run %d", r.Run, r.Rep) }
	var head strings.Builder
	for _, r := range recs {
		k := key(r)
		if _, ok := models[k]; ok {
			continue
		}
		var kind []*simRecording
		for _, o := range recs {
			if key(o) == k {
				kind = append(kind, o)
			}
		}
		models[k] = calibrate(kind)
		fmt.Fprintf(&head, "- %s: %s\n", k, models[k])
	}
	var rows []simRow
	for _, r := range recs {
		rows = append(rows, compareSimRun(t, r, plugins, recDir, models[key(r)]))
	}
	markMatches(rows)
	medians := medianRows(rows)
	table := fmt.Sprintf("Measured on the real runs, per repetition and kind of run with both assignors pooled, and given to the model:\n\n%s\n%s\nMedians over the runs:\n\n%s\n%s",
		head.String(), formatSimTable(rows), formatMedianTable(medians), formatTaskDiffs(rows))
	t.Logf("sim-validate:\n%s", table)
	if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	checkSimRows(t, rows, medians)
}

// name is the recording's file name without extension.
func (r *simRecording) name() string {
	if r.Rep == 0 {
		return r.Run + "-" + r.Assignor
	}
	return fmt.Sprintf("%s-%s-%d", r.Run, r.Assignor, r.Rep)
}

// medianRows has one row per run and assignor: the median of the
// repetitions' real and simulated unavailable task-seconds.
func medianRows(rows []simRow) []simRow {
	var out []simRow
	for _, run := range []string{"roll", "scale-out"} {
		for _, a := range []string{"sticky", "ha"} {
			var real, sim, model []float64
			m := simRow{run: run, assignor: a}
			for _, r := range rows {
				if r.run != run || r.assignor != a {
					continue
				}
				if r.simErr != "" {
					m.simErr = r.simErr
				}
				if r.model.err != "" {
					m.model.err = r.model.err
				}
				real, sim, model = append(real, r.realUnavail), append(sim, r.simUnavail), append(model, r.model.unavail)
				m.model.moved += r.model.moved
				m.realMoved, m.simMoved = m.realMoved+r.realMoved, m.simMoved+r.simMoved
				m.modelMoved, m.inputs = m.modelMoved+r.modelMoved, m.inputs+r.inputs
				m.matched += matched(r.match)
				m.model.matched += matched(r.model.match)
				for i, d := range r.delays {
					m.delays[i] += d
				}
				m.rep++
			}
			if m.rep == 0 {
				continue
			}
			m.realUnavail, m.simUnavail, m.model.unavail = medianF(real), medianF(sim), medianF(model)
			out = append(out, m)
		}
	}
	return out
}

// matched is 1 when a repetition's tasks moved matched (markMatches), else 0.
func matched(match string) int {
	if match == "" || match == "no" {
		return 0
	}
	return 1
}

// simWindowSettle bounds the wait for a group to go quiet (no new target
// for simQuiet and no warm-up open) before a recording window opens or
// closes.
const (
	simQuiet        = 10 * time.Second
	simWindowSettle = 8 * time.Minute
)

// simRecording is what one real run left: the rebalance history of the
// group, the members' processes, the active tasks' running intervals as
// the instances logged them, and the group's assignment configs.
type simRecording struct {
	Run      string `json:"run"`
	Assignor string `json:"assignor"`
	Rep      int    `json:"rep,omitempty"` // the repetition, from 1
	Group    string `json:"group"`
	// Start is the baseline target's time; the compared window opens at
	// windowStart (every task running again) and closes at End, when
	// the recording stopped.
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Baseline int32     `json:"baseline_epoch"`
	// BaselineMembers are the member ids of the group at Start.
	BaselineMembers []string `json:"baseline_members"`
	// Initial is the baseline target and the lags the members reported.
	Initial   []initialMember   `json:"initial,omitempty"`
	Processes map[string]string `json:"processes"` // member id -> process id
	// Joined is when the polls first saw each member (it joined within
	// the 200 ms before); recordings made before it was kept hold none.
	Joined  map[string]time.Time `json:"joined,omitempty"`
	Targets []histTarget         `json:"targets"`
	// Owners are the targets as the describe polls saw them, one per
	// assignment epoch: active task -> member id.
	Owners []epochOwners `json:"owners"`
	// Current are the members' current assignments as the polls saw
	// them change.
	Current []ownersAt        `json:"current,omitempty"`
	Running []taskRun         `json:"running"`
	Configs map[string]string `json:"configs"`
	// ChangelogEnd is the mean end offset of the stateful tasks'
	// changelogs when the window was taken (after Start).
	ChangelogEnd int64 `json:"changelog_end"`
	// ChangelogEndAt is when ChangelogEnd was read: when the window was
	// taken, after the baseline target (zero in recordings made before
	// it was kept).
	ChangelogEndAt time.Time `json:"changelog_end_at,omitzero"`
	// Restores are the active tasks' restores of a whole changelog (the
	// scale-out's new instances, whose restore is limited).
	Restores []restoreRun `json:"restores,omitempty"`
	// Reports are when the polls saw a member's reported task offsets
	// or end offsets change (its report reached coordhost in the 200 ms
	// before), and what coordhost then held of them; a report that
	// changed nothing does not show. Recordings made before these were
	// kept hold none, and before the values were kept only the times.
	Reports []memberReport `json:"reports,omitempty"`
	// HostReads are coordhost's own reads of the changelogs' end
	// offsets for the group, as its debug log shows them; recordings
	// made before they were kept hold none.
	HostReads []hostRead `json:"host_reads,omitempty"`
	// Changelog is what the scale-out's changelog partitions held in
	// bytes, as the broker stores them (what a fetch carries), after its
	// padding and when the recording stopped; recordings made before it
	// was kept hold none.
	Changelog *changelogBytes `json:"changelog_bytes,omitempty"`
}

// changelogBytes: the mean bytes of a changelog partition after
// prepareLargeState (its simPadRecords records of padding) and at the end
// of the recording, with its mean end offset then.
type changelogBytes struct {
	PadBytes int64 `json:"pad_bytes"`
	EndBytes int64 `json:"end_bytes"`
	End      int64 `json:"end_offset"`
}

// restoreQuota is the derived scenario's restore_quota of a limited
// instance: the quota and fetch size the run set, its padding's bytes as
// the head of each changelog, and the app's records' bytes per offset
// after it; nil without the measurements.
func (c *changelogBytes) restoreQuota() map[string]any {
	if c == nil || c.PadBytes <= 0 || c.End <= simPadRecords || c.EndBytes <= c.PadBytes {
		return nil
	}
	return map[string]any{
		"bytes_per_s":     simRestoreBytesPerS,
		"fetch_max_bytes": simRestoreFetchBytes,
		"head_records":    simPadRecords,
		"head_bytes":      c.PadBytes,
		"record_bytes":    max(1, int64(math.Round(float64(c.EndBytes-c.PadBytes)/float64(c.End-simPadRecords)))),
	}
}

// hostRead is one read of the changelogs' end offsets by coordhost from
// the data plane: when it handed them to the coordinator, and the end of
// each task it read (an unknown end left out).
type hostRead struct {
	Time time.Time        `json:"time"`
	Ends map[string]int64 `json:"end_offsets"`
}

// hostReadsOf are group's end-offset reads in coordhost's log at path
// (host/loop: "changelog end offsets read", ends as task=offset, -1
// unknown).
func hostReadsOf(path, group string) ([]hostRead, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []hostRead
	for _, line := range strings.Split(string(data), "\n") {
		at, fields, ok := coordhostLine(line, group)
		if !ok || fields["msg"] != "changelog end offsets read" {
			continue
		}
		read := hostRead{Time: at, Ends: map[string]int64{}}
		for _, e := range strings.Fields(fields["ends"]) {
			task, off, ok := strings.Cut(e, "=")
			n, err := strconv.ParseInt(off, 10, 64)
			if !ok || err != nil {
				return nil, fmt.Errorf("%s: %q: end %q", path, line, e)
			}
			if n >= 0 {
				read.Ends[task] = n
			}
		}
		out = append(out, read)
	}
	return out, nil
}

// memberReport is one report of a member, as the polls saw it: the task
// offsets and end offsets coordhost held for it after the report, by
// task id (an unknown end, Long.MAX_VALUE, left out).
type memberReport struct {
	Time    time.Time        `json:"time"`
	Member  string           `json:"member"`
	Offsets map[string]int64 `json:"task_offsets,omitempty"`
	Ends    map[string]int64 `json:"task_end_offsets,omitempty"`
}

// byTask is a member's reported offsets by task id, the ones a scenario
// takes (0 to 2^50; Kafka Streams' unknown end, Long.MAX_VALUE, left
// out).
func byTask(os []taskOffset) map[string]int64 {
	out := map[string]int64{}
	for _, o := range os {
		if o.Offset >= 0 && o.Offset <= 1<<50 {
			out[fmt.Sprintf("%s_%d", o.SubtopologyID, o.Partition)] = o.Offset
		}
	}
	return out
}

// ownersAt is the members' current assignment (what they own) as describe
// saw it at Time: the owner of each active task.
type ownersAt struct {
	Time   time.Time         `json:"time"`
	Owners map[string]string `json:"owners"`
}

// epochOwners is one target seen by describe: the owner of each active task.
type epochOwners struct {
	Epoch  int32             `json:"epoch"`
	Owners map[string]string `json:"owners"`
}

// histTarget is the part of a rebalance history entry (host.TargetRecord)
// the comparison reads.
type histTarget struct {
	Epoch   int32     `json:"epoch"`
	Time    time.Time `json:"time"`
	Reasons []struct {
		Kind   string `json:"kind"`
		Member string `json:"member,omitempty"`
		// Detail says why a member was fenced ("session-timeout",
		// "rebalance-timeout"); recordings before it was kept hold none.
		Detail string `json:"detail,omitempty"`
	} `json:"reasons"`
	Probe   bool `json:"probe,omitempty"`
	Metrics struct {
		Movement struct {
			Moved int `json:"moved"`
			New   int `json:"new"`
			Warm  int `json:"warm"`
			Cold  int `json:"cold"`
		} `json:"movement"`
		Warmups struct {
			Open int `json:"open"`
		} `json:"warmups"`
	} `json:"metrics"`
	Moves []struct {
		Task string `json:"task"`
		From string `json:"from,omitempty"`
		To   string `json:"to"`
	} `json:"moves"`
	MovesNotListed int `json:"moves_not_listed,omitempty"`
	// Inputs are the offsets coordhost handed the assignor (host
	// experiment.Inputs): the derived scenario hands them to the
	// simulated assignor at this target's time.
	Inputs *histInputs `json:"inputs,omitempty"`
}

// histInputs is a history entry's experiment.Inputs.
type histInputs struct {
	EndOffsets map[string]int64 `json:"end_offsets"`
	Processes  []struct {
		Process     string           `json:"process"`
		TaskOffsets map[string]int64 `json:"task_offsets"`
	} `json:"processes"`
}

// taskRun is one interval in which an instance ran a task as active and
// restored: from Kafka Streams' "Restored and ready to run" to "Suspended
// from RUNNING" (or the instance's exit).
type taskRun struct {
	Task     string    `json:"task"`
	Instance string    `json:"instance"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
}

// buildAssignorPlugins builds the sticky and HA assignor plugins to wasm,
// as make plugins does, into a temporary directory.
func buildAssignorPlugins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"assignor-sticky", "assignor-ha"} {
		cmd := exec.Command(goTool, "build", "-buildmode=c-shared", "-trimpath",
			"-gcflags=github.com/coordhost/coordhost/plugins/assignor-sticky=-B",
			"-gcflags=github.com/coordhost/coordhost/plugins/assignor-ha=-B",
			"-o", filepath.Join(dir, name+".wasm"), "../plugins/"+name+"/wasm")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	return dir
}

// recordSimRun records one real run ("roll" or "scale-out") with assignor
// through a coordhost of its own (a fresh history) in front of broker b.
func recordSimRun(t *testing.T, dir string, b *broker, plugins, run, assignor string, rep int) *simRecording {
	t.Helper()
	admin := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	flags := []string{"--admin.listen=" + admin, "--plugins.dir=" + plugins,
		"--groups.defaults.streams.assignor.name=" + assignor, "--admin.history.targets=1000", "--admin.history.inputs=true"}
	if run == "scale-out" {
		flags = append(flags, fmt.Sprintf("--groups.defaults.streams.acceptable.recovery.lag=%d", simAcceptableLag),
			fmt.Sprintf("--groups.defaults.streams.num.warmup.replicas=%d", simWarmups))
	}
	c := startCoordhost(t, dir, b.addr, flags...)
	if err := groupsServed(c.addr, "interop-probe", 30*time.Second); err != nil {
		t.Fatalf("coordhost: %v\n%s", err, c.proc.tail(60))
	}
	group := fmt.Sprintf("simval-%s-%s-%d", run, assignor, rep)
	rec := &simRecording{Run: run, Assignor: assignor, Rep: rep, Group: group, Processes: map[string]string{}, Joined: map[string]time.Time{}}
	api := &adminClient{base: "http://" + admin, group: group}
	name := "sim-validate " + run + " " + assignor
	s := newScenarioApp(t, aggApp, name, dir, c.addr, group, c.proc, b.proc)
	stopPoll := api.pollGroup(rec)
	defer stopPoll()
	switch run {
	case "roll":
		s.fleet.setClose(closeLeave)
		s.startClassic()
		time.Sleep(steadyPeriod)
		s.must("phase", s.lg.phase("rolling-upgrade"))
		// The first streams member converts the group; the window opens
		// once the converted group is quiet.
		s.restartAs(0, "streams", 1, "", "streams")
		api.openWindow(s, rec, b.addr)
		s.restartAs(1, "streams", 1, "", "streams")
		s.restartAs(2, "streams", 1, "", "streams")
	case "scale-out":
		s.fleet = newFleet(t, dir, c.addr, group, 6, topicsOf(group))
		s.fleet.setApp(aggApp)
		s.fleet.setClose(closeLeave)
		prepareLargeState(t, b.addr, group)
		pad, _, err := changelogSize(b.addr, group+"-agg-changelog")
		s.must("the padding's size", err)
		rec.Changelog = &changelogBytes{PadBytes: pad}
		for i := 3; i < 6; i++ {
			s.fleet.cfgs[i].extra = append(s.fleet.cfgs[i].extra,
				fmt.Sprintf("restore.consumer.max.partition.fetch.bytes=%d", simRestoreFetchBytes),
				fmt.Sprintf("restore.consumer.fetch.max.bytes=%d", simRestoreFetchBytes))
		}
		limitRestore(t, b.addr, limitedInstances...)
		s.must("phase", s.lg.phase("startup"))
		for i := range 3 {
			s.fleet.start(i, "streams", 0)
		}
		s.must("instances running", s.fleet.waitRunning(startBound))
		s.must("streams group of 3", s.stable("streams", 3))
		s.must("startup backlog", s.caughtUp(startBound))
		time.Sleep(steadyPeriod)
		api.openWindow(s, rec, b.addr)
		s.must("phase", s.lg.phase("scale-out"))
		for i := 3; i < 6; i++ {
			s.fleet.start(i, "streams", 0)
		}
		s.must("new instances running", s.fleet.waitRunning(startBound))
		s.must("streams group of 6", s.stable("streams", 6))
		s.must("output after the scale-out", s.settled())
	}
	api.quiet(t)
	time.Sleep(steadyPeriod)
	rec.End = time.Now()
	if rec.Changelog != nil {
		size, end, err := changelogSize(b.addr, group+"-agg-changelog")
		s.must("the changelog's size", err)
		rec.Changelog.EndBytes, rec.Changelog.End = size, end
	}
	targets, err := api.history()
	s.must("history", err)
	rec.Targets = targets
	stopPoll()
	s.finish()
	s.must("stop instances", s.fleet.stopAll())
	rec.Running = taskRuns(t, s.fleet.all())
	rec.Restores = restoreRuns(t, s.fleet.all(), 1)
	if err := c.proc.stop(30 * time.Second); err != nil {
		t.Logf("stop coordhost: %v", err)
	}
	reads, err := hostReadsOf(c.proc.log, group)
	s.must("coordhost's end-offset reads", err)
	if len(reads) == 0 {
		t.Fatalf("%s: coordhost's log shows no end-offset read of %s", name, group)
	}
	rec.HostReads = reads
	return rec
}

// adminClient reads one group from coordhost's admin API.
type adminClient struct {
	base, group string
}

func (a *adminClient) get(path string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return json.Unmarshal(body, v)
}

func (a *adminClient) history() ([]histTarget, error) {
	var h struct {
		Targets []histTarget `json:"targets"`
	}
	err := a.get("/v1/groups/"+a.group+"/history", &h)
	return h.Targets, err
}

// groupDetail is the part of GET /v1/groups/{id} the comparison reads
// (Kafka's StreamsGroupDescribe and the effective configuration).
type groupDetail struct {
	Streams *struct {
		AssignmentEpoch int32
		Members         []struct {
			MemberID         string
			ProcessID        string
			Assignment       streamsTasks
			TargetAssignment streamsTasks
			TaskOffsets      []taskOffset
			TaskEndOffsets   []taskOffset
		}
	} `json:"streams"`
	Config []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"config"`
}

// taskOffset is one offset a member reported for a task.
type taskOffset struct {
	SubtopologyID string
	Partition     int32
	Offset        int64
}

// initialMember is a member's part of the scenario's starting point (the
// simulator's "initial"): its target and its process's lags.
type initialMember struct {
	Member  string           `json:"member"`
	Active  []string         `json:"active,omitempty"`
	Standby []string         `json:"standby,omitempty"`
	Lags    map[string]int64 `json:"lags,omitempty"`
}

// streamsTasks is the part of a describe assignment the comparison reads.
type streamsTasks struct {
	ActiveTasks, StandbyTasks []taskIDs
}

type taskIDs struct {
	SubtopologyID string
	Partitions    []int32
}

// names are the tasks of ids as Kafka Streams prints them.
func names(ids []taskIDs) []string {
	var out []string
	for _, at := range ids {
		for _, p := range at.Partitions {
			out = append(out, fmt.Sprintf("%s_%d", at.SubtopologyID, p))
		}
	}
	return out
}

// owners adds each active task of ts to out as owned by member.
func (ts streamsTasks) owners(member string, out map[string]string) {
	for _, task := range names(ts.ActiveTasks) {
		out[task] = member
	}
}

// pollGroup records, every 200 ms until the returned stop is called,
// each member's process id (a restart gives a member a new id on the same
// process: Kafka Streams keeps the process id in its state directory) and
// the target of each assignment epoch it sees: the owner of every active
// task.
func (a *adminClient) pollGroup(rec *simRecording) (stop func()) {
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		reported := map[string]string{} // member id -> its last reported offsets
		for {
			var d groupDetail
			if a.get("/v1/groups/"+a.group, &d) == nil && d.Streams != nil {
				owners, current := map[string]string{}, map[string]string{}
				for _, m := range d.Streams.Members {
					m.TargetAssignment.owners(m.MemberID, owners)
					m.Assignment.owners(m.MemberID, current)
				}
				simProcMu.Lock()
				if n := len(rec.Current); n == 0 || !maps.Equal(rec.Current[n-1].Owners, current) {
					rec.Current = append(rec.Current, ownersAt{Time: time.Now(), Owners: current})
				}
				for _, m := range d.Streams.Members {
					rec.Processes[m.MemberID] = m.ProcessID
					if _, seen := rec.Joined[m.MemberID]; !seen {
						rec.Joined[m.MemberID] = time.Now()
					}
					if r := fmt.Sprint(m.TaskOffsets, m.TaskEndOffsets); len(m.TaskOffsets)+len(m.TaskEndOffsets) > 0 && reported[m.MemberID] != r {
						reported[m.MemberID] = r
						rec.Reports = append(rec.Reports, memberReport{Time: time.Now(), Member: m.MemberID,
							Offsets: byTask(m.TaskOffsets), Ends: byTask(m.TaskEndOffsets)})
					}
				}
				if n := len(rec.Owners); n == 0 || rec.Owners[n-1].Epoch != d.Streams.AssignmentEpoch {
					rec.Owners = append(rec.Owners, epochOwners{Epoch: d.Streams.AssignmentEpoch, Owners: owners})
				}
				simProcMu.Unlock()
			}
			select {
			case <-quit:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	var once bool
	return func() {
		if !once {
			once = true
			close(quit)
			<-done
		}
	}
}

// quiet waits (bounded by simWindowSettle) until the group's last target
// is simQuiet old and opens no warm-up.
func (a *adminClient) quiet(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(simWindowSettle)
	for time.Now().Before(deadline) {
		h, err := a.history()
		if err == nil && len(h) > 0 {
			last := h[len(h)-1]
			if time.Since(last.Time) >= simQuiet && last.Metrics.Warmups.Open == 0 {
				return
			}
		}
		time.Sleep(time.Second)
	}
	t.Logf("group %s: not quiet within %v; the window closes anyway", a.group, simWindowSettle)
}

// openWindow waits for the group to go quiet and takes the baseline: the
// last target, the members, the configs and the changelogs' end offsets.
func (a *adminClient) openWindow(s *scenarioRun, rec *simRecording, broker string) {
	s.t.Helper()
	a.quiet(s.t)
	h, err := a.history()
	s.must("history", err)
	if len(h) == 0 {
		s.t.Fatalf("%s: no target in the history", s.name)
	}
	var d groupDetail
	s.must("describe", a.get("/v1/groups/"+a.group, &d))
	if d.Streams == nil {
		s.t.Fatalf("%s: not a streams group at the baseline", s.name)
	}
	rec.Start, rec.Baseline = h[len(h)-1].Time, h[len(h)-1].Epoch
	for _, m := range d.Streams.Members {
		rec.BaselineMembers = append(rec.BaselineMembers, m.MemberID)
		im := initialMember{Member: m.MemberID, Active: names(m.TargetAssignment.ActiveTasks),
			Standby: names(m.TargetAssignment.StandbyTasks), Lags: map[string]int64{}}
		ends := map[string]int64{}
		for _, o := range m.TaskEndOffsets {
			ends[fmt.Sprintf("%s_%d", o.SubtopologyID, o.Partition)] = o.Offset
		}
		for _, o := range m.TaskOffsets {
			task := fmt.Sprintf("%s_%d", o.SubtopologyID, o.Partition)
			// The target's own copies run caught up (the simulator's
			// starting point); other local state is as far behind as
			// the member reported.
			if e, ok := ends[task]; ok && o.Offset >= 0 && !slices.Contains(im.Active, task) && !slices.Contains(im.Standby, task) {
				im.Lags[task] = max(e-o.Offset, 0)
			}
		}
		rec.Initial = append(rec.Initial, im)
	}
	rec.Configs = map[string]string{}
	for _, c := range d.Config {
		rec.Configs[c.Key] = fmt.Sprint(c.Value)
	}
	end, err := changelogEnd(broker, a.group+"-agg-changelog")
	s.must("changelog end offsets", err)
	rec.ChangelogEnd, rec.ChangelogEndAt = end, time.Now()
}

// simProcMu guards the process maps written by pollProcesses.
var simProcMu sync.Mutex

// changelogSize is the mean size in bytes of topic's partitions on the
// broker (DescribeLogDirs: the batches as stored, which a fetch carries
// as they are) and their mean end offset.
func changelogSize(broker, topic string) (size, end int64, err error) {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic = topic
	for p := range int32(aggApp.partitions) {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := askBroker[*kmsg.DescribeLogDirsResponse](broker, req)
	if err != nil {
		return 0, 0, err
	}
	var sum, n int64
	for _, d := range resp.Dirs {
		if d.ErrorCode != 0 {
			return 0, 0, fmt.Errorf("DescribeLogDirs %s: error code %d", d.Dir, d.ErrorCode)
		}
		for _, tp := range d.Topics {
			for _, p := range tp.Partitions {
				sum += p.Size
				n++
			}
		}
	}
	if n != int64(aggApp.partitions) {
		return 0, 0, fmt.Errorf("DescribeLogDirs %s: %d partitions, want %d", topic, n, aggApp.partitions)
	}
	end, err = changelogEnd(broker, topic)
	return sum / n, end, err
}

// askBroker sends req to broker with a client of its own and a 10 s
// deadline.
func askBroker[R any](broker string, req interface {
	RequestWith(context.Context, kmsg.Requestor) (R, error)
}) (R, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		var none R
		return none, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return req.RequestWith(ctx, cl)
}

// changelogEnd is the mean end offset of topic's partitions.
func changelogEnd(broker, topic string) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range int32(aggApp.partitions) {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := askBroker[*kmsg.ListOffsetsResponse](broker, req)
	if err != nil {
		return 0, err
	}
	var sum, n int64
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				return 0, fmt.Errorf("ListOffsets %s-%d: error code %d", topic, p.Partition, p.ErrorCode)
			}
			sum += p.Offset
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("ListOffsets %s: no partition", topic)
	}
	return sum / n, nil
}

// taskRuns reads the active tasks' running intervals from the instances'
// logs (Kafka Streams' StreamTask lines at INFO).
func taskRuns(t *testing.T, procs []*proc) []taskRun {
	t.Helper()
	var out []taskRun
	for _, p := range procs {
		lines := p.grep("] Restored and ready to run", "] Suspended from RUNNING", "] Closed dirty")
		if !slices.ContainsFunc(lines, startsTask) {
			// Every instance of the runs takes tasks: without its task
			// runs the real unavailable time would count its tasks as
			// never running (or miss its part of the hand-overs).
			t.Fatalf("instance %s: its log (%s) shows no task run (no StreamTask \"Restored and ready to run\" line at INFO): the real run's figures cannot be measured", p.name, p.log)
		}
		open := map[string]time.Time{}
		var last time.Time
		for _, l := range lines {
			if !strings.Contains(l, "StreamTask:") {
				continue
			}
			at, err := logTime(l, time.Now())
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			task := between(l, "task [", "]")
			last = at
			switch {
			case strings.Contains(l, "Restored and ready to run"):
				open[task] = at
			default:
				if from, ok := open[task]; ok {
					out = append(out, taskRun{Task: task, Instance: p.name, From: from, To: at})
					delete(open, task)
				}
			}
		}
		for task, from := range open { // no suspend logged: running until the log's last line
			if tail := p.tail(1); tail != "" {
				if at, err := logTime(tail, time.Now()); err == nil && at.After(last) {
					last = at
				}
			}
			out = append(out, taskRun{Task: task, Instance: p.name, From: from, To: last})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].From.Before(out[j].From) })
	return out
}

// startsTask says whether a log line is Kafka Streams' StreamTask starting
// an active task ("Restored and ready to run").
func startsTask(line string) bool {
	return strings.Contains(line, "StreamTask:") && strings.Contains(line, "Restored and ready to run")
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.Index(s, b); j >= 0 {
		return s[:j]
	}
	return s
}

// logTime reads the HH:mm:ss.SSS prefix of a JVM log line (local time) as
// the instant closest to ref.
func logTime(line string, ref time.Time) (time.Time, error) {
	if len(line) < 12 {
		return time.Time{}, fmt.Errorf("log line %q has no time", line)
	}
	c, err := time.ParseInLocation("15:04:05.000", line[:12], time.Local)
	if err != nil {
		return time.Time{}, err
	}
	y, m, d := ref.In(time.Local).Date()
	at := time.Date(y, m, d, c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), time.Local)
	switch {
	case at.Sub(ref) > 12*time.Hour:
		at = at.AddDate(0, 0, -1)
	case ref.Sub(at) > 12*time.Hour:
		at = at.AddDate(0, 0, 1)
	}
	return at, nil
}

func loadRecordings(t *testing.T, dir string) []*simRecording {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*simRecording
	for _, f := range files {
		if strings.HasSuffix(f, ".scenario.json") || strings.HasSuffix(f, ".sim.json") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := &simRecording{}
		if err := json.Unmarshal(data, r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(r.Running) == 0 {
			t.Fatalf("%s: the recording holds no task run of any instance: its real figures cannot be measured", f)
		}
		recs = append(recs, r)
	}
	if len(recs) == 0 {
		t.Fatalf("no recordings in %s", dir)
	}
	return recs
}

// realMoved is the real figure of tasks moved, as the simulator counts
// it: per target after the baseline, the active tasks whose owner changed
// — abi/metrics' moved (on another member than before) plus new (active
// on no member of the run's input: after the baseline every task had an
// owner, so its owner left). A restarted instance is a new member on the
// same process, so this counts its tasks going back to it too.
//
// With the describe polls' targets (Owners), a target's moved tasks are
// those whose owner differs from the previous target's, as the simulator
// counts them; the history's figures are measured against what members
// owned when the run started, which misses tasks still being revoked
// from the previous target (they count as new).
func (r *simRecording) realMoved() (total int, per []int) {
	if len(r.Owners) > 0 {
		return r.movedFromOwners()
	}
	for _, h := range r.Targets {
		if h.Epoch <= r.Baseline || h.Time.After(r.End) {
			continue
		}
		n := h.Metrics.Movement.Moved + h.Metrics.Movement.New
		per = append(per, n)
		total += n
	}
	return total, per
}

func (r *simRecording) movedFromOwners() (total int, per []int) {
	var prev map[string]string
	for _, o := range r.Owners {
		if o.Epoch < r.Baseline {
			continue
		}
		if prev != nil && r.targetTime(o.Epoch).Before(r.End) {
			n := 0
			for task, m := range o.Owners {
				if prev[task] != m {
					n++
				}
			}
			per = append(per, n)
			total += n
		}
		prev = o.Owners
	}
	return total, per
}

// targetTime is when the history recorded the target of epoch e (End
// when it did not).
func (r *simRecording) targetTime(e int32) time.Time {
	for _, h := range r.Targets {
		if h.Epoch == e {
			return h.Time
		}
	}
	return r.End
}

// aggTasks are the interop app's tasks: subtopology 0 (the re-keying,
// stateless) and 1 (the aggregate, with a changelogged store).
func aggTasks() []string {
	var out []string
	for _, s := range []string{"0", "1"} {
		for p := range aggApp.partitions {
			out = append(out, fmt.Sprintf("%s_%d", s, p))
		}
	}
	return out
}

// realUnavailable is the simulator's figure measured on the real run:
// the sum over tasks of the time in [Start, End) in which no instance ran
// the task as an active that had restored its state ("Restored and ready
// to run" until "Suspended from RUNNING").
func (r *simRecording) realUnavailable() float64 {
	var total float64
	for _, s := range r.realUnavailableByTask() {
		total += s
	}
	return total
}

// realUnavailableByTask is realUnavailable per task, in seconds.
func (r *simRecording) realUnavailableByTask() map[string]float64 {
	start := r.windowStart()
	out := map[string]float64{}
	for _, task := range aggTasks() {
		out[task] = (r.End.Sub(start) - r.ranFor(task, start, r.End)).Seconds()
	}
	return out
}

// ranFor is how long within [from, to) some instance ran task as an active
// that had restored its state (the union of its runs).
func (r *simRecording) ranFor(task string, from, to time.Time) time.Duration {
	var iv [][2]time.Time
	for _, run := range r.Running {
		if run.Task == task && run.To.After(from) && run.From.Before(to) {
			iv = append(iv, [2]time.Time{maxTime(run.From, from), minTime(run.To, to)})
		}
	}
	sort.Slice(iv, func(i, j int) bool { return iv[i][0].Before(iv[j][0]) })
	covered, cursor := time.Duration(0), from
	for _, x := range iv {
		if x[1].After(cursor) {
			covered += x[1].Sub(maxTime(x[0], cursor))
			cursor = x[1]
		}
	}
	return covered
}

// windowStart is when the compared window opens: the simulator's
// starting point is the baseline target running, its actives caught up,
// so the window opens at the start of the last stretch in which every
// task has a running active that begins within simQuiet of the baseline
// target (openWindow waited that long: nothing of the run's own happens
// before) — after the baseline target's own hand-overs, which the group
// may still be doing at its time while every task's previous owner still
// runs it. Without such a stretch: the first instant from the baseline
// on at which every task runs.
func (r *simRecording) windowStart() time.Time {
	running := func(task string, at time.Time) bool {
		for _, run := range r.Running {
			if run.Task == task && !at.Before(run.From) && at.Before(run.To) {
				return true
			}
		}
		return false
	}
	allRunning := func(at time.Time) bool {
		for _, task := range aggTasks() {
			if !running(task, at) {
				return false
			}
		}
		return true
	}
	cands := []time.Time{r.Start}
	for _, run := range r.Running {
		for _, c := range []time.Time{run.From, run.To} {
			if c.After(r.Start) {
				cands = append(cands, c)
			}
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Before(cands[j]) })
	var start time.Time
	covered := false
	for _, c := range cands {
		if c.After(r.Start.Add(simQuiet)) {
			break
		}
		all := allRunning(c)
		if all && !covered {
			start = c
		}
		covered = all
	}
	if !start.IsZero() {
		return start
	}
	for _, c := range cands {
		if allRunning(c) {
			return c
		}
	}
	return r.Start
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// roundMs is the simulator's millisecond of a time in seconds.
func roundMs(s float64) int64 { return int64(math.Round(s * 1000)) }

// roundTick rounds d to the derived scenarios' 100 ms tick, in ms.
func roundTick(d time.Duration) int64 { return int64(math.Round(d.Seconds()*10)) * 100 }

// simScenario is the simulator scenario equivalent to the recording: the
// baseline members at 0 s, each member-joined, member-left and
// member-fenced reason of a later target at its target's time, the app's
// topology, the group's assignment configs and changelogs as measured.
// With recorded, each later target's assignor input from the history
// (the offsets coordhost handed the assignor) is handed to the simulated
// assignor at its time: the replay then checks the assignor's decisions
// and the timing model, not the offset-reporting model (the targets
// before the window opens fold into the starting point, their inputs
// with them).
func (r *simRecording) simScenario(m simModel, recorded bool) ([]byte, error) {
	type ev struct {
		AtS         float64 `json:"at_s"`
		Join        string  `json:"join,omitempty"`
		Process     string  `json:"process,omitempty"`
		MemberID    string  `json:"member_id,omitempty"`
		RestorePerS int64   `json:"restore_records_per_s,omitempty"`
		// RestoreQuota: the limited instances' quota, with the
		// changelog's measured bytes.
		RestoreQuota map[string]any `json:"restore_quota,omitempty"`
		Leave        string         `json:"leave,omitempty"`
		Crash        string         `json:"crash,omitempty"`
	}
	simProcMu.Lock()
	defer simProcMu.Unlock()
	proc := func(id string) string {
		if p := r.Processes[id]; p != "" {
			return p
		}
		return "process-of-" + id
	}
	start := r.windowStart()
	// The processes of the baseline restore at the rate measured on the
	// instances whose restore is not limited; with a limited rate
	// measured (the scale-out), every process that joins later (the new
	// instances) restores at that one.
	restorePerS, limited := int64(simRestorePerS), int64(0)
	if m.freePerS > 0 {
		restorePerS = int64(math.Round(m.freePerS))
	}
	if m.restorePerS > 0 {
		limited = int64(math.Round(m.restorePerS))
	}
	num := func(key string, def int64) int64 {
		if v, err := strconv.ParseInt(r.Configs[key], 10, 64); err == nil {
			return v
		}
		return def
	}
	sessionMs := num("streams.session.timeout.ms", 45000)
	var events []ev
	live := map[string]bool{}
	lastMs := map[string]int64{} // per member, its last join's time (-1: at 0 s)
	for _, id := range r.BaselineMembers {
		lastMs[id] = -1
		events = append(events, ev{Join: id, Process: proc(id), MemberID: id})
		live[id] = true
	}
	for i, h := range r.Targets {
		if h.Epoch <= r.Baseline || h.Time.After(r.End) {
			continue
		}
		at := max(0, h.Time.Sub(start).Seconds())
		for _, rs := range h.Reasons {
			switch rs.Kind {
			case "member-joined":
				if !live[rs.Member] {
					joinAt := max(0, r.joinTime(i, rs.Member).Sub(start).Seconds())
					e := ev{AtS: joinAt, Join: rs.Member, Process: proc(rs.Member), MemberID: rs.Member, RestorePerS: limited}
					if limited > 0 {
						e.RestoreQuota = r.Changelog.restoreQuota()
					}
					events = append(events, e)
					live[rs.Member] = true
				}
			case "member-left":
				if live[rs.Member] {
					events = append(events, ev{AtS: at, Leave: rs.Member})
					delete(live, rs.Member)
				}
			case "member-fenced":
				if !live[rs.Member] {
					continue
				}
				delete(live, rs.Member)
				// Fenced on its session timeout: it went silent that
				// long before, a crash the simulator fences at the
				// recorded time (its tasks run until the recorded stops
				// of their moves). Fenced otherwise, or silent before it
				// joined: removed at the fence, as a leave.
				crashMs := roundMs(at) - sessionMs
				if (rs.Detail == "" || rs.Detail == "session-timeout") && crashMs > lastMs[rs.Member] {
					events = append(events, ev{AtS: float64(crashMs) / 1000, Crash: rs.Member})
				} else {
					events = append(events, ev{AtS: at, Leave: rs.Member})
				}
			}
			if rs.Kind == "member-joined" {
				lastMs[rs.Member] = roundMs(at)
			}
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].AtS < events[j].AtS })
	// coordhost reads the changelogs' end offsets when the group first
	// has a topology (its first target, within the fetcher's 1 s tick)
	// and every refresh period after.
	refresh := num("streams.end.offsets.refresh.ms", 30000)
	var phase int64
	if len(r.Targets) > 0 && refresh > 0 {
		phase = ((r.Targets[0].Time.Sub(start).Milliseconds())%refresh + refresh) % refresh
	}
	reports := map[string]any{
		"task_offset_interval_ms": num("streams.task.offset.interval.ms", 60000),
		"end_offsets_refresh_ms":  refresh,
		"end_offsets_phase_ms":    phase,
	}
	at, values := r.reportTimes(start)
	if len(at) > 0 {
		reports["at"] = at
	}
	if len(values) > 0 {
		reports["values"] = values
	}
	sc := map[string]any{
		"name":              r.Group,
		"duration_s":        r.End.Sub(start).Seconds(),
		"tick_ms":           100,
		"handover_ms":       roundTick(m.handover),
		"handover_first_ms": roundTick(m.handoverFirst),
		"grant_ms":          roundTick(m.grant),
		"grant_first_ms":    roundTick(m.grantFirst),
		"session_timeout_s": float64(sessionMs) / 1000,
		// The members' heartbeat interval: the core engine's clients
		// heartbeat at it (the model's timing takes grant_ms instead).
		"heartbeat_interval_ms": num("streams.heartbeat.interval.ms", 5000),
		"subtopologies": []map[string]any{
			{"id": "0", "partitions": aggApp.partitions, "stateful": false},
			{"id": "1", "partitions": aggApp.partitions, "stateful": true},
		},
		"assignment": map[string]any{
			"num_standby_replicas":    num("streams.num.standby.replicas", 0),
			"num_warmup_replicas":     num("streams.num.warmup.replicas", 2),
			"acceptable_recovery_lag": num("streams.acceptable.recovery.lag", 10000),
			"probing_interval_ms":     num("streams.probing.rebalance.interval.ms", 600000),
		},
		"state": map[string]any{
			"changelog_records":     r.changelogAt(start),
			"append_records_per_s":  r.changelogGrowth(),
			"restore_records_per_s": restorePerS,
			"shared_restore":        true,
		},
		"reports": reports,
		"events":  events,
	}
	if len(r.Initial) > 0 {
		sc["initial"] = r.Initial
	}
	if ins := r.recordedInputs(start); recorded && len(ins) > 0 {
		sc["recorded_inputs"] = ins
		if reads := r.hostReadsFrom(start); len(reads) > 0 {
			reports["host_reads"] = reads
		}
	}
	return json.MarshalIndent(sc, "", " ")
}

// changelogAt is the mean changelog end offset at start (the window's
// opening) for the derived scenario: ChangelogEnd, read when the window
// was taken (after start, the baseline's hand-overs done), less what the
// scenario's own growth (the load's records per second and task) adds
// between start and that read, so the replay's changelogs hold the
// measured end at the time it was measured. Without the read's time:
// ChangelogEnd.
func (r *simRecording) changelogAt(start time.Time) int64 {
	if r.ChangelogEndAt.IsZero() || !r.ChangelogEndAt.After(start) {
		return r.ChangelogEnd
	}
	grown := int64(math.Round(r.ChangelogEndAt.Sub(start).Seconds() * float64(r.changelogGrowth())))
	return max(r.ChangelogEnd-grown, 0)
}

// changelogGrowth is how many offsets a task's changelog grows by per
// second while the task runs, measured on the recording: the offsets the
// changelogs grew by between coordhost's first and last end-offset read,
// over the seconds in between in which each task ran (the instances' logs,
// as realUnavailable reads them; nobody writes a changelog while its task
// waits for its new owner). Under exactly-once each transaction's commit
// marker takes an offset of every partition it wrote, so a changelog grows
// faster than the input's records: with a commit every 100 ms, 42 offsets
// a second against 33 records in the recordings of 5 December 2026. A
// recording without two reads and a run between them gives the load's
// records per task.
func (r *simRecording) changelogGrowth() int64 {
	load := int64(recordsPerSec / aggApp.partitions)
	if len(r.HostReads) < 2 {
		return load
	}
	first, last := r.HostReads[0], r.HostReads[len(r.HostReads)-1]
	var grown int64
	var ran float64
	for _, task := range aggTasks() {
		a, okA := first.Ends[task]
		b, okB := last.Ends[task]
		if !okA || !okB || a < 0 || b < a {
			continue
		}
		if covered := r.ranFor(task, first.Time, last.Time); covered > 0 {
			grown += b - a
			ran += covered.Seconds()
		}
	}
	if ran < 1 || grown <= 0 {
		return load
	}
	return max(1, int64(math.Round(float64(grown)/ran)))
}

// joinTime is when member, whose join is a reason of the target
// Targets[i], joined: when the polls first saw it, if between the target
// before and that one; else the target's time — unless the target folds
// several changes of the group (its epoch is more than one past the
// target before) and came within the group's assignment interval and
// one heartbeat interval after the target before, so the interval held
// it back: then the member joined at some time since that target (the
// history keeps the reasons, not their times), and it joins just after
// it, so core holds the target back by the interval as the real one did
// and folds the joins of that stretch into one target.
func (r *simRecording) joinTime(i int, member string) time.Time {
	at := r.Targets[i].Time
	if i == 0 {
		return at
	}
	prev := r.Targets[i-1].Time
	// A member seen before the previous target joined before it and
	// joins again here (fenced, with its own id): its first sighting
	// says nothing of this join.
	if seen, ok := r.Joined[member]; ok && seen.After(prev) && seen.Before(at) {
		return seen
	}
	num := func(key string, def int64) time.Duration {
		if v, err := strconv.ParseInt(r.Configs[key], 10, 64); err == nil {
			return time.Duration(v) * time.Millisecond
		}
		return time.Duration(def) * time.Millisecond
	}
	folded := r.Targets[i].Epoch-r.Targets[i-1].Epoch > 1 // the group epoch moved more than once between them
	if folded && at.Sub(prev) <= num("streams.assignment.interval.ms", 1000)+num("streams.heartbeat.interval.ms", 5000) {
		return prev.Add(simAfterTick)
	}
	return at
}

// reportTimes are the scenario's reports.at and reports.values: per
// member, the times from start (the window's opening) to End at which
// the polls saw its report — with what it reported (values) when the
// recording kept that for each of them, else the times alone (at).
func (r *simRecording) reportTimes(start time.Time) (at map[string][]float64, values map[string][]sim.ReportValue) {
	at, values = map[string][]float64{}, map[string][]sim.ReportValue{}
	timesOnly := map[string]bool{}
	for _, x := range r.Reports {
		if x.Time.Before(start) || x.Time.After(r.End) {
			continue
		}
		s := x.Time.Sub(start).Seconds()
		at[x.Member] = append(at[x.Member], s)
		values[x.Member] = append(values[x.Member], sim.ReportValue{AtS: s, TaskOffsets: x.Offsets, TaskEndOffsets: x.Ends})
		timesOnly[x.Member] = timesOnly[x.Member] || (x.Offsets == nil && x.Ends == nil)
	}
	for m := range at {
		if timesOnly[m] {
			delete(values, m)
		} else {
			delete(at, m)
		}
	}
	return at, values
}

// hostReadsFrom are the scenario's reports.host_reads: coordhost's reads
// of the changelogs' end offsets from start (the window's opening) to
// End, the last one before start at 0 s (what coordhost knew when the
// window opened). The recorded inputs' end offsets mix these with the
// members' reported ends; the replay's host knows these alone.
func (r *simRecording) hostReadsFrom(start time.Time) []sim.HostRead {
	var out []sim.HostRead
	for _, h := range r.HostReads {
		switch {
		case h.Time.After(r.End):
		case !h.Time.After(start):
			out = append(out[:0], sim.HostRead{EndOffsets: h.Ends})
		default:
			out = append(out, sim.HostRead{AtS: h.Time.Sub(start).Seconds(), EndOffsets: h.Ends})
		}
	}
	return out
}

// recordedInputs are the scenario's recorded_inputs: the history's input
// of each target after the baseline, from start (the window's opening)
// to End, with the target's real hand-overs (moves).
func (r *simRecording) recordedInputs(start time.Time) []map[string]any {
	var out []map[string]any
	for _, h := range r.Targets {
		if h.Epoch <= r.Baseline || h.Time.After(r.End) || h.Time.Before(start) || h.Inputs == nil {
			continue
		}
		procs := map[string]map[string]int64{}
		for _, p := range h.Inputs.Processes {
			procs[p.Process] = p.TaskOffsets
		}
		in := map[string]any{"at_s": h.Time.Sub(start).Seconds(), "probe": h.Probe,
			"end_offsets": h.Inputs.EndOffsets, "processes": procs}
		if mv := r.moves(h.Epoch, h.Time); len(mv) > 0 {
			in["moves"] = mv
		}
		out = append(out, in)
	}
	return out
}

// moves are the real hand-overs of the target of epoch e, computed at
// at: per active task whose owner in the polled target differs from the
// previous polled target's, the new owner (member id: the derived
// scenario's label), grant_ms — until the polls first saw the task in
// that owner's current assignment — and handover_ms — until the task's
// next "Restored and ready to run" less its restore in between (when the
// new owner could start it). Each is searched for until the polled
// targets move the task away from that owner (End when they do not); a
// delay not seen by then is left out, and the simulator takes the
// model's — except a grant not seen before the task moved on: it came
// after that move (the polls last saw the task with nobody), so the
// replay's grant comes just after the tick of that target.
func (r *simRecording) moves(e int32, at time.Time) map[string]map[string]any {
	i := slices.IndexFunc(r.Owners, func(o epochOwners) bool { return o.Epoch == e })
	if i <= 0 {
		return nil
	}
	out := map[string]map[string]any{}
	for task, m := range r.Owners[i].Owners {
		if prev := r.Owners[i-1].Owners[task]; prev == m {
			continue
		}
		until, movedOn := r.End, false
		for _, o := range r.Owners[i+1:] {
			if o.Owners[task] != m {
				until, movedOn = r.targetTime(o.Epoch), true
				break
			}
		}
		mv := map[string]any{"member": m}
		if stop, ok := r.stopBefore(i, task, at); ok {
			mv["from"], mv["stop_ms"] = r.Owners[i-1].Owners[task], stop.Milliseconds()
		}
		if g, ok := r.grantAfter(task, m, at, until); ok {
			mv["grant_ms"] = g.Milliseconds()
		} else if movedOn {
			// Not granted when the group moved it on: the task was
			// nobody's in that target's input too.
			mv["grant_ms"] = (until.Sub(at) + simAfterTick).Milliseconds()
		}
		for _, x := range r.Running {
			if x.Task == task && x.From.After(at) && x.From.Before(until) {
				ready := x.From.Add(-r.restoredBetween(task, x.Instance, at, x.From))
				mv["handover_ms"] = max(ready.Sub(at), 0).Milliseconds()
				break
			}
		}
		if len(mv) > 1 {
			out[task] = mv
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// stopBefore is when the previous owner of task at the polled target
// Owners[i] stopped running it, from at (the target's time; negative
// before it): the end of the task's last running interval that started
// before at, if it started after the polled targets gave the task to
// that owner (else the logs show no run of it by that owner).
func (r *simRecording) stopBefore(i int, task string, at time.Time) (time.Duration, bool) {
	prev := r.Owners[i-1].Owners[task]
	if prev == "" {
		return 0, false
	}
	var since time.Time // when the polled targets gave the task to prev
	for k := i - 1; k >= 0 && r.Owners[k].Owners[task] == prev; k-- {
		since = time.Time{}
		if k > 0 {
			since = r.targetTime(r.Owners[k].Epoch)
		}
	}
	var last *taskRun
	for j := range r.Running {
		x := &r.Running[j]
		if x.Task == task && x.From.Before(at) && (last == nil || x.From.After(last.From)) {
			last = x
		}
	}
	if last == nil || last.From.Before(since) {
		return 0, false
	}
	return last.To.Sub(at), true
}

// simAfterTick puts a recorded time after the tick (100 ms) of a target
// at a given time, its rounding to milliseconds included.
const simAfterTick = 150 * time.Millisecond

// grantAfter is the time from at until the first poll before until that
// saw task in member's current assignment.
func (r *simRecording) grantAfter(task, member string, at, until time.Time) (time.Duration, bool) {
	for _, c := range r.Current {
		if c.Time.Before(at) {
			continue
		}
		if !c.Time.Before(until) {
			break
		}
		if c.Owners[task] == member {
			return c.Time.Sub(at), true
		}
	}
	return 0, false
}

// restoredBetween is the time instance spent restoring task in restores
// that ended in (from, to].
func (r *simRecording) restoredBetween(task, instance string, from, to time.Time) time.Duration {
	var d time.Duration
	for _, x := range r.Restores {
		if x.Task == task && x.Instance == instance && x.To.After(from) && !x.To.After(to) {
			d += x.To.Sub(maxTime(x.From, from))
		}
	}
	return d
}

// simRestorePerS is the restore rate of the derived scenarios without a
// measured one (no restore of a whole changelog on an instance whose
// restore is not limited: the roll's hand-overs are warm, and the app's
// stores hold ten small keys per task, which a RocksDB restore reads far
// faster).
const simRestorePerS = 10000

// simModel are the environment's figures a derived scenario takes, each
// measured on the real runs of one kind (roll or scale-out), both
// assignors pooled: what the model is given, not what it is checked on.
type simModel struct {
	// handover and handoverFirst are the mean time a moved task waited,
	// its restore excluded, from its previous owner's "Suspended from
	// RUNNING" to its new owner's "Restored and ready to run": for a
	// new owner that already ran a task, and for one that ran none yet.
	handover, handoverFirst time.Duration
	nHandover, nFirst       int
	// grant and grantFirst are the median time from a target to the
	// moved task showing in its new owner's current assignment (describe
	// polls, 200 ms apart): for a new owner that owned a task then, and
	// for one that owned none (it just joined).
	grant, grantFirst time.Duration
	nGrant, nFirstG   int
	// restorePerS is the records restored per second by the limited
	// instances (the scale-out's new ones), each through its one restore
	// link: an instance's restored records over the time in which it
	// restored any; 0 without one. freePerS is the same on the instances
	// whose restore is not limited (their restores at start-up).
	restorePerS, freePerS float64
	nRestore, nFree       int
}

// calibrate measures the model's figures on recs (one kind's recordings).
func calibrate(recs []*simRecording) simModel {
	var m simModel
	var sum, sumFirst time.Duration
	var grants, grantsFirst []time.Duration
	var limited, free []restoreRun
	for _, r := range recs {
		for _, h := range r.handOvers() {
			if h.first {
				sumFirst += h.wait
				m.nFirst++
			} else {
				sum += h.wait
				m.nHandover++
			}
		}
		g, gf := r.grantDelays()
		grants, grantsFirst = append(grants, g...), append(grantsFirst, gf...)
		start := r.windowStart()
		for _, x := range r.Restores {
			// The rates from the restores of a whole changelog; an
			// instance's name is its process within one recording.
			if x.Records < simPadRecords {
				continue
			}
			x.Instance = r.name() + "/" + x.Instance
			switch {
			case !slices.Contains(limitedInstances, x.Instance[strings.LastIndex(x.Instance, "/")+1:]):
				free = append(free, x)
			case x.From.After(start):
				limited = append(limited, x)
			}
		}
	}
	m.restorePerS, m.nRestore = linkRate(limited)
	m.freePerS, m.nFree = linkRate(free)
	if m.nHandover > 0 {
		m.handover = sum / time.Duration(m.nHandover)
	}
	if m.nFirst > 0 {
		m.handoverFirst = sumFirst / time.Duration(m.nFirst)
	}
	if m.nHandover == 0 {
		m.handover = m.handoverFirst
	}
	if m.nFirst == 0 {
		m.handoverFirst = m.handover
	}
	m.grant, m.nGrant = median(grants), len(grants)
	m.grantFirst, m.nFirstG = median(grantsFirst), len(grantsFirst)
	if m.nGrant == 0 {
		m.grant = m.grantFirst
	}
	if m.nFirstG == 0 {
		m.grantFirst = m.grant
	}
	return m
}

// linkRate is the records restored per second through the instances'
// restore links: the restores' records over, summed per instance, the time
// in which the instance restored any (restores at once share its link),
// and the number of restores; 0 without one.
func linkRate(runs []restoreRun) (float64, int) {
	byInstance := map[string][]restoreRun{}
	var records int64
	for _, x := range runs {
		byInstance[x.Instance] = append(byInstance[x.Instance], x)
		records += x.Records
	}
	var busy time.Duration
	for _, rs := range byInstance {
		sort.Slice(rs, func(i, j int) bool { return rs[i].From.Before(rs[j].From) })
		var end time.Time
		for _, x := range rs {
			from := x.From
			if from.Before(end) {
				from = end
			}
			if x.To.After(from) {
				busy += x.To.Sub(from)
				end = x.To
			}
		}
	}
	if busy <= 0 {
		return 0, len(runs)
	}
	return float64(records) / busy.Seconds(), len(runs)
}

func (m simModel) String() string {
	rate := func(perS float64, n int) string {
		if n == 0 {
			return "none measured"
		}
		return fmt.Sprintf("%.0f records/s (%d restores)", perS, n)
	}
	return fmt.Sprintf("hand-over %.2f s (mean of %d) and %.2f s to a member running no task yet (%d), grant %.2f s (median of %d) and %.2f s to a member owning none yet (%d), restore link of a limited instance %s, of another %s",
		m.handover.Seconds(), m.nHandover, m.handoverFirst.Seconds(), m.nFirst, m.grant.Seconds(), m.nGrant,
		m.grantFirst.Seconds(), m.nFirstG, rate(m.restorePerS, m.nRestore), rate(m.freePerS, m.nFree))
}

// handOver is one measured hand-over of an active task in the window.
type handOver struct {
	wait  time.Duration
	first bool // the new owner ran no task before
}

// handOvers are the active tasks' hand-overs in the window: a task
// stopped on one instance and started on another (a restarted instance
// is another), the time between less the new owner's restore of it.
func (r *simRecording) handOvers() []handOver {
	start := r.windowStart()
	firstRun := map[string]time.Time{}
	for _, x := range r.Running {
		if f, ok := firstRun[x.Instance]; !ok || x.From.Before(f) {
			firstRun[x.Instance] = x.From
		}
	}
	var out []handOver
	for _, task := range aggTasks() {
		var iv []taskRun
		for _, x := range r.Running {
			if x.Task == task {
				iv = append(iv, x)
			}
		}
		sort.Slice(iv, func(i, j int) bool { return iv[i].From.Before(iv[j].From) })
		for i := 1; i < len(iv); i++ {
			a, b := iv[i-1], iv[i]
			if a.Instance == b.Instance || !b.From.After(a.To) || !a.To.After(start) || b.From.After(r.End) {
				continue
			}
			wait := b.From.Sub(a.To) - r.restoredBetween(task, b.Instance, a.To, b.From)
			out = append(out, handOver{wait: max(wait, 0), first: !firstRun[b.Instance].Before(a.To)})
		}
	}
	return out
}

// grantDelays are, per target after the baseline and task it moved to
// another member, the time until the polls saw the task in its new
// owner's current assignment; first holds those to a member that owned
// no task when the target was computed.
func (r *simRecording) grantDelays() (out, first []time.Duration) {
	var prev map[string]string
	for _, o := range r.Owners {
		if o.Epoch < r.Baseline {
			continue
		}
		at := r.targetTime(o.Epoch)
		if prev != nil && at.Before(r.End) {
			for task, m := range o.Owners {
				if prev[task] == "" || prev[task] == m {
					continue
				}
				owned := false // by m, in the last poll before the target
				for _, c := range r.Current {
					if c.Time.Before(at) {
						owned = slices.Contains(slices.Collect(maps.Values(c.Owners)), m)
						continue
					}
					if c.Owners[task] == m {
						if owned {
							out = append(out, c.Time.Sub(at))
						} else {
							first = append(first, c.Time.Sub(at))
						}
						break
					}
				}
			}
		}
		prev = o.Owners
	}
	return out, first
}

// simRow is one line of the comparison.
type simRow struct {
	run, assignor           string
	rep                     int // the repetition; in a median row, how many
	realMoved, simMoved     int
	realPer, simPer         []int
	realUnavail, simUnavail float64
	simErr                  string
	// inputs counts the real targets whose assignor input the replay
	// was handed; modelMoved are the tasks the replay moves without
	// them (the offset-reporting model's inputs).
	inputs, modelMoved int
	// delays counts the replay's moved tasks whose grant and hand-over
	// took the recorded delay, and those that took the model's:
	// recorded grants, modelled grants, recorded hand-overs, modelled
	// hand-overs, and the moved tasks whose previous owner stopped them
	// when the recording says.
	delays [5]int
	// match says how the simulated tasks moved compare (markMatches):
	// "equal", "in range a–b" (the real repetitions' range) or "no"; in
	// a median row, matched counts the repetitions that matched.
	match   string
	matched int
	// model is the same replay on the model engine (the figures above
	// are the core engine's, and the ones the check judges).
	model simEngine
	// realByTask and simByTask split realUnavail and simUnavail by task.
	realByTask, simByTask map[string]float64
}

// simEngine is a replay's figures on the model engine: tasks moved (per
// rebalance), how they compare (markMatches) and unavailable task-seconds.
type simEngine struct {
	moved   int
	per     []int
	unavail float64
	match   string
	matched int // in a median row: the repetitions that matched
	err     string
}

// markMatches sets each row's match: the simulated tasks moved of a
// recording match when they lie within the range of what the real
// repetitions of the same run and assignor moved (equal when those all
// moved the same). A real group is not deterministic — the members'
// heartbeats, reports and restores race — so where its repetitions
// differ, a deterministic replay can at best fall within their spread.
func markMatches(rows []simRow) {
	lo, hi := map[string]int{}, map[string]int{}
	for _, r := range rows {
		k := r.run + "/" + r.assignor
		if _, ok := lo[k]; !ok {
			lo[k], hi[k] = r.realMoved, r.realMoved
		}
		lo[k], hi[k] = min(lo[k], r.realMoved), max(hi[k], r.realMoved)
	}
	match := func(r *simRow, moved int, err string) string {
		k := r.run + "/" + r.assignor
		switch {
		case err != "":
			return "no"
		case moved == r.realMoved:
			return "equal"
		case moved >= lo[k] && moved <= hi[k]:
			return fmt.Sprintf("in range %d–%d", lo[k], hi[k])
		}
		return "no"
	}
	for i := range rows {
		r := &rows[i]
		r.match = match(r, r.simMoved, r.simErr)
		r.model.match = match(r, r.model.moved, r.model.err)
	}
}

// compareSimRun writes the derived scenario and runs `coordhost
// simulate` on it with the same assignor plugin, on the core engine (the
// figures the check judges) and on the model engine (the second column);
// and on the core engine without the recorded inputs (the
// offset-reporting model's inputs), for its tasks moved.
func compareSimRun(t *testing.T, r *simRecording, plugins, dir string, m simModel) simRow {
	t.Helper()
	row := simRow{run: r.Run, assignor: r.Assignor, rep: r.Rep, realUnavail: r.realUnavailable(), realByTask: r.realUnavailableByTask()}
	row.realMoved, row.realPer = r.realMoved()
	row.inputs = len(r.recordedInputs(r.windowStart()))
	base := filepath.Join(dir, r.name())
	plugin := filepath.Join(plugins, "assignor-"+r.Assignor+".wasm")
	if a, err := runSim(t, r, m, true, "model", base, plugin); err != nil {
		t.Logf("%s %s, model engine: %v", r.Run, r.Assignor, err)
		row.model.err = err.Error()
	} else {
		row.model.moved, row.model.per, row.model.unavail = a.Totals.TasksMoved, a.movedPer(), a.UnavailableTaskS
	}
	a, err := runSim(t, r, m, true, "core", base, plugin)
	if err != nil {
		t.Errorf("%s %s: %v", r.Run, r.Assignor, err)
		row.simErr = err.Error()
		return row
	}
	row.simMoved, row.simUnavail, row.simPer = a.Totals.TasksMoved, a.UnavailableTaskS, a.movedPer()
	row.simByTask = map[string]float64{}
	for _, x := range a.UnavailableByTask {
		row.simByTask[x.Task] = x.S
	}
	row.delays = [5]int{a.Totals.RecordedGrants, a.Totals.ModelledGrants, a.Totals.RecordedHandOvers, a.Totals.ModelledHandOvers, a.Totals.RecordedStops}
	row.modelMoved = row.simMoved
	if row.inputs > 0 {
		a, err := runSim(t, r, m, false, "core", base+".model", plugin)
		if err != nil {
			t.Errorf("%s %s, the model's inputs: %v", r.Run, r.Assignor, err)
			row.simErr = err.Error()
			return row
		}
		row.modelMoved = a.Totals.TasksMoved
	}
	return row
}

// movedPer are the tasks moved of each rebalance after the baseline.
func (a simAssignorReport) movedPer() []int {
	var out []int
	for _, rb := range a.Rebalances {
		if !rb.Baseline {
			out = append(out, rb.TasksMoved)
		}
	}
	return out
}

// simAssignorReport is the part of an assignor's report in `coordhost
// simulate --json` the comparison reads.
type simAssignorReport struct {
	Totals struct {
		TasksMoved        int `json:"tasks_moved"`
		RecordedGrants    int `json:"recorded_grants"`
		ModelledGrants    int `json:"modelled_grants"`
		RecordedHandOvers int `json:"recorded_hand_overs"`
		ModelledHandOvers int `json:"modelled_hand_overs"`
		RecordedStops     int `json:"recorded_stops"`
	} `json:"totals"`
	UnavailableTaskS  float64 `json:"unavailable_task_seconds"`
	UnavailableByTask []struct {
		Task string  `json:"task"`
		S    float64 `json:"seconds"`
	} `json:"unavailable_by_task"`
	Error      string `json:"error"`
	Rebalances []struct {
		Baseline   bool `json:"baseline"`
		TasksMoved int  `json:"tasks_moved"`
	} `json:"rebalances"`
}

// runSim writes r's derived scenario (with or without its recorded
// inputs) to base.scenario.json and runs `coordhost simulate --engine
// engine` on it with the assignor plugin, its report in
// base.ENGINE.sim.json.
func runSim(t *testing.T, r *simRecording, m simModel, recorded bool, engine, base, plugin string) (simAssignorReport, error) {
	t.Helper()
	sc, err := r.simScenario(m, recorded)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".scenario.json", sc, 0o644); err != nil {
		t.Fatal(err)
	}
	report := base + "." + engine + ".sim.json"
	out, err := exec.Command(coordhostBinary(t), "simulate", "--engine", engine, "--scenario", base+".scenario.json",
		"--plugin", plugin, "--json", report).CombinedOutput()
	if err != nil {
		return simAssignorReport{}, fmt.Errorf("coordhost simulate --engine %s: %v\n%s", engine, err, out)
	}
	var rep struct {
		Assignors []simAssignorReport `json:"assignors"`
	}
	if data, err := os.ReadFile(report); err != nil || json.Unmarshal(data, &rep) != nil || len(rep.Assignors) != 1 {
		t.Fatalf("%s: %v", report, err)
	}
	if e := rep.Assignors[0].Error; e != "" {
		return rep.Assignors[0], fmt.Errorf("coordhost simulate --engine %s: %s", engine, e)
	}
	return rep.Assignors[0], nil
}

// simTolerance is how far the simulated unavailable task-seconds may be
// from the real ones.
const simTolerance = 0.30

// checkSimRows fails on every figure outside the bar: tasks moved must
// match, unavailable task-seconds be within ±30 %, and HA's advantage the
// simulator shows on a run must show in the real run too.
func checkSimRows(t *testing.T, rows, medians []simRow) {
	t.Helper()
	for _, r := range rows {
		if r.simErr == "" && r.match == "no" {
			t.Errorf("%s %s (run %d): tasks moved: real %d (per rebalance %v), simulated %d (%v): outside the real repetitions' range",
				r.run, r.assignor, r.rep, r.realMoved, r.realPer, r.simMoved, r.simPer)
		}
	}
	by := map[string]simRow{}
	for _, r := range medians {
		by[r.run+"/"+r.assignor] = r
		if r.simErr != "" {
			continue
		}
		if !withinRatio(r.simUnavail, r.realUnavail) {
			t.Errorf("%s %s: unavailable task-seconds: real %.1f, simulated %.1f (ratio %s, bar ±%.0f %%)", r.run, r.assignor,
				r.realUnavail, r.simUnavail, simRatio(r.simUnavail, r.realUnavail), simTolerance*100)
		}
	}
	// HA against sticky: where the simulator sees a difference of more
	// than the tolerance, the real runs must show it the same way round.
	// A real group is not deterministic, so the real runs show a side
	// when every repetition of one assignor lies beyond every repetition
	// of the other (realSide), whatever the size of the gap; overlapping
	// repetitions show none.
	for _, run := range []string{"roll", "scale-out"} {
		st, ha := by[run+"/sticky"], by[run+"/ha"]
		if st.simErr != "" || ha.simErr != "" {
			continue
		}
		simSide, realSide := side(ha.simUnavail, st.simUnavail), realSide(repsOf(rows, run, "ha"), repsOf(rows, run, "sticky"))
		t.Logf("%s: HA against sticky, unavailable task-seconds: simulated %.1f vs %.1f (%s), real medians %.1f vs %.1f, repetitions %v vs %v (%s)",
			run, ha.simUnavail, st.simUnavail, simSide, ha.realUnavail, st.realUnavail, repsOf(rows, run, "ha"), repsOf(rows, run, "sticky"), realSide)
		if simSide != "same" && simSide != realSide {
			t.Errorf("%s: the simulator has HA %s sticky in unavailable task-seconds, the real runs have it %s", run, simSide, realSide)
		}
	}
}

// repsOf lists the real unavailable task-seconds of each repetition of
// run with assignor.
func repsOf(rows []simRow, run, assignor string) []float64 {
	var out []float64
	for _, r := range rows {
		if r.run == run && r.assignor == assignor {
			out = append(out, r.realUnavail)
		}
	}
	return out
}

// realSide says whether the repetitions a all lie "below" or all
// "above" the repetitions b, or neither ("same").
func realSide(a, b []float64) string {
	switch {
	case len(a) == 0 || len(b) == 0:
		return "same"
	case slices.Max(a) < slices.Min(b):
		return "below"
	case slices.Min(a) > slices.Max(b):
		return "above"
	}
	return "same"
}

// side says whether a is "below", "above" or about the "same" as b
// (within the tolerance of the larger).
func side(a, b float64) string {
	switch d := a - b; {
	case math.Abs(d) <= simTolerance*max(a, b):
		return "same"
	case d < 0:
		return "below"
	}
	return "above"
}

func withinRatio(sim, real float64) bool {
	if real == 0 {
		return sim == 0
	}
	return sim >= real*(1-simTolerance) && sim <= real*(1+simTolerance)
}

func simRatio(sim, real float64) string {
	if real == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", sim/real)
}

// formatSimTable renders rows as the Markdown table of docs/AB-TESTING.md.
func formatSimTable(rows []simRow) string {
	var b strings.Builder
	b.WriteString("| run | assignor | # | recorded inputs | grants, hand-overs recorded (model's), stops recorded | tasks moved real / core | match | per rebalance real / core | core, model's inputs | unavailable task-s real / core | ratio core/real | model engine: tasks moved, match | per rebalance | unavailable task-s | ratio model/real |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d (%d), %d (%d), %d | %d / %d | %s | %v / %v | %d | %.1f / %.1f | %s | %d, %s | %v | %.1f | %s |\n", r.run, r.assignor, r.rep, r.inputs,
			r.delays[0], r.delays[1], r.delays[2], r.delays[3], r.delays[4],
			r.realMoved, r.simMoved, r.match, r.realPer, r.simPer, r.modelMoved, r.realUnavail, r.simUnavail, simRatio(r.simUnavail, r.realUnavail),
			r.model.moved, r.model.match, r.model.per, r.model.unavail, simRatio(r.model.unavail, r.realUnavail))
	}
	return b.String()
}

// simTaskDiffS is how far a task's unavailable seconds on core may be
// from the real run's before formatTaskDiffs names it.
const simTaskDiffS = 1.0

// formatTaskDiffs names, per recording, the tasks whose unavailable
// seconds on core differ from the real run's by more than simTaskDiffS,
// with both figures: where a recording's total differs, which tasks
// make the difference.
func formatTaskDiffs(rows []simRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Unavailable seconds per task, real / core, where they differ by more than %.0f s:\n\n", simTaskDiffS)
	for _, r := range rows {
		var diffs []string
		for _, task := range aggTasks() {
			if real, sim := r.realByTask[task], r.simByTask[task]; math.Abs(sim-real) > simTaskDiffS {
				diffs = append(diffs, fmt.Sprintf("%s %.1f / %.1f", task, real, sim))
			}
		}
		if len(diffs) == 0 {
			diffs = []string{"none"}
		}
		fmt.Fprintf(&b, "- %s %s %d: %s\n", r.run, r.assignor, r.rep, strings.Join(diffs, ", "))
	}
	return b.String()
}

// formatMedianTable renders the median rows: the tasks moved summed over
// the repetitions and how many of them matched, the median unavailable
// task-seconds (per-rebalance figures belong to single runs: the
// repetitions' rebalances need not line up).
func formatMedianTable(rows []simRow) string {
	var b strings.Builder
	b.WriteString("| run | assignor | repetitions | tasks moved real / core (sums) | core matched | unavailable task-s real / core (medians) | ratio core/real | model engine: tasks moved, matched | unavailable task-s | ratio model/real |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d | %d / %d | %d/%d | %.1f / %.1f | %s | %d, %d/%d | %.1f | %s |\n", r.run, r.assignor, r.rep,
			r.realMoved, r.simMoved, r.matched, r.rep, r.realUnavail, r.simUnavail, simRatio(r.simUnavail, r.realUnavail),
			r.model.moved, r.model.matched, r.rep, r.model.unavail, simRatio(r.model.unavail, r.realUnavail))
	}
	return b.String()
}

// The scale-out's state is larger than acceptable.recovery.lag, and the
// new instances restore it over a limited link, so a cold hand-over costs
// far more than a warm one: before the instances start, each partition of
// the aggregate's changelog gets simPadRecords records of simPadBytes
// bytes (keys the app never writes: state the store holds beside its
// aggregates), the group's acceptable.recovery.lag is simAcceptableLag,
// and a Kafka client quota holds the restore consumer of each new
// instance to simRestoreBytesPerS.
const (
	simPadRecords       = 2000
	simPadBytes         = 200
	simAcceptableLag    = 200
	simRestoreBytesPerS = 8 << 10
	// simWarmups lets HA warm the three new instances at once.
	simWarmups = 6
	// simRestoreFetchBytes bounds one restore fetch of a new instance, so
	// the quota paces the restore instead of one response holding it all.
	simRestoreFetchBytes = 2048
)

// limitedInstances are the scale-out's new instances, whose restore is
// limited (their process names).
var limitedInstances = []string{"app3-streams-0", "app4-streams-0", "app5-streams-0"}

// restoreConsumer is the client id of instance name's restore consumer
// (Kafka Streams 4.4 with its state updater thread).
func restoreConsumer(name string) string { return name + "-StateUpdater-1-restore-consumer" }

// prepareLargeState creates the changelog topic of group's aggregate (6
// partitions, compacted, as Kafka Streams would) and fills each partition
// with simPadRecords records in small batches.
func prepareLargeState(t *testing.T, broker, group string) {
	t.Helper()
	topic := group + "-agg-changelog"
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(simRestoreFetchBytes))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	tp := kmsg.NewCreateTopicsRequestTopic()
	tp.Topic, tp.NumPartitions, tp.ReplicationFactor = topic, int32(aggApp.partitions), 1
	compact := kmsg.NewCreateTopicsRequestTopicConfig()
	compact.Name, compact.Value = "cleanup.policy", kmsg.StringPtr("compact")
	tp.Configs = append(tp.Configs, compact)
	req.Topics = append(req.Topics, tp)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Topics[0].ErrorCode; c != 0 {
		t.Fatalf("create %s: error code %d", topic, c)
	}
	value := []byte(strings.Repeat("x", simPadBytes))
	var rs []*kgo.Record
	for p := range aggApp.partitions {
		for i := range simPadRecords {
			rs = append(rs, &kgo.Record{Key: fmt.Appendf(nil, "pad-%d-%d", p, i), Value: value, Partition: int32(p)})
		}
	}
	for {
		err := cl.ProduceSync(ctx, rs...).FirstErr()
		if err == nil {
			return
		}
		if ctx.Err() != nil { // the new topic's metadata may lag its creation
			t.Fatalf("fill %s: %v", topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// limitRestore sets a consumer byte-rate quota of simRestoreBytesPerS on the
// restore consumers of the instances named.
func limitRestore(t *testing.T, broker string, names ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	for _, n := range names {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		c := kmsg.NewAlterClientQuotasRequestEntryEntity()
		c.Type, c.Name = "client-id", kmsg.StringPtr(restoreConsumer(n))
		e.Entity = append(e.Entity, c)
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = "consumer_byte_rate", simRestoreBytesPerS
		e.Ops = append(e.Ops, op)
		req.Entries = append(req.Entries, e)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.Entries {
		if e.ErrorCode != 0 {
			t.Fatalf("quota on the restore consumers: error code %d: %v", e.ErrorCode, e.ErrorMessage)
		}
	}
}

// restoreRun is one cold restore of an active task: from Kafka Streams'
// "Stateful active task ... was added to the state updater" to its
// "completed restoration", and the records restored.
type restoreRun struct {
	Task     string    `json:"task"`
	Instance string    `json:"instance"`
	Records  int64     `json:"records"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
}

// restoreRuns reads the active restores of at least minRecords records from
// the instances' logs (the state updater's and the changelog reader's lines
// at INFO; the changelog's partition is the task's).
func restoreRuns(t *testing.T, procs []*proc, minRecords int64) []restoreRun {
	t.Helper()
	var out []restoreRun
	for _, p := range procs {
		added := map[string]time.Time{}
		records := map[string]int64{}
		for _, l := range p.grep("] Stateful active task ", "] Finished restoring changelog ") {
			at, err := logTime(l, time.Now())
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			switch {
			case strings.Contains(l, "was added to the state updater"):
				added[between(l, "Stateful active task ", " ")] = at
			case strings.Contains(l, "Finished restoring changelog"):
				// "...-agg-changelog-P to store agg with a total number of N records"
				ch := between(l, "Finished restoring changelog ", " ")
				part := ch[strings.LastIndexByte(ch, '-')+1:]
				n, _ := strconv.ParseInt(between(l, "total number of ", " "), 10, 64)
				records["1_"+part] = n
			case strings.Contains(l, "completed restoration"):
				task := between(l, "Stateful active task ", " ")
				if from, ok := added[task]; ok && records[task] >= minRecords {
					out = append(out, restoreRun{Task: task, Instance: p.name, Records: records[task], From: from, To: at})
				}
				delete(added, task)
				delete(records, task)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].From.Before(out[j].From) })
	return out
}

// TestSimRecordingMoves: on a hand-built recording (no Kafka), the window
// opens after the baseline target's own hand-over, and each target's
// moves carry the new owner, the grant seen by the polls and the time
// until the new owner could start the task (its restore taken off) and
// the previous owner and when it stopped the task (before the target, or
// after it); a grant not seen before the task moved on comes just after
// that move, and one never seen is left out, as is a stop of a previous
// owner the logs show no run of the task by.
func TestSimRecordingMoves(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	owners := func(changes map[string]string) map[string]string {
		o := map[string]string{}
		for _, task := range aggTasks() {
			o[task] = "a"
		}
		o["0_1"] = "b"
		maps.Copy(o, changes)
		return o
	}
	r := &simRecording{Start: t0, End: at(60), Baseline: 5,
		Targets: []histTarget{{Epoch: 5, Time: t0}, {Epoch: 6, Time: at(20)}, {Epoch: 7, Time: at(21)}},
		// Epoch 6 moves 0_1 b -> c and 0_2 a -> c; epoch 7 gives 0_2
		// back to a before c ever owned it, and 1_1 to c, which the
		// polls never show owning it.
		Owners: []epochOwners{{Epoch: 5, Owners: owners(nil)}, {Epoch: 6, Owners: owners(map[string]string{"0_1": "c", "0_2": "c"})},
			{Epoch: 7, Owners: owners(map[string]string{"0_1": "c", "1_1": "c"})}},
		Current: []ownersAt{{Time: at(20.2), Owners: owners(nil)}, {Time: at(20.4), Owners: owners(map[string]string{"0_1": "c"})},
			{Time: at(21.2), Owners: owners(map[string]string{"0_1": "c"})}},
		// 0_1 restores on c from 20.5 to 21 s and runs from 21.5 s.
		Restores: []restoreRun{{Task: "0_1", Instance: "c", Records: 10, From: at(20.5), To: at(21)}},
	}
	for _, task := range aggTasks() {
		switch task {
		case "1_0": // the baseline target's own hand-over: 0.3 s to 2 s
			r.Running = append(r.Running, taskRun{Task: task, Instance: "x", From: at(-10), To: at(0.3)},
				taskRun{Task: task, Instance: "a", From: at(2), To: r.End})
		case "0_1":
			r.Running = append(r.Running, taskRun{Task: task, Instance: "b", From: at(-10), To: at(19.5)},
				taskRun{Task: task, Instance: "c", From: at(21.5), To: r.End})
		default:
			r.Running = append(r.Running, taskRun{Task: task, Instance: "a", From: at(-10), To: r.End})
		}
	}
	if got := r.windowStart(); !got.Equal(at(2)) {
		t.Errorf("window opens %v after the baseline, want 2s", got.Sub(t0))
	}
	for _, c := range []struct {
		epoch int32
		at    float64
		want  string
	}{
		// b stopped 0_1 0.5 s before the target; a ran 0_2 on (it got
		// it back at 21 s).
		{6, 20, "map[0_1:map[from:b grant_ms:400 handover_ms:1000 member:c stop_ms:-500] 0_2:map[from:a grant_ms:1150 member:c stop_ms:40000]]"},
		// c, given 0_2 at 20 s, never ran it: a's run started before;
		// a ran 1_1 on after the target that moved it to c.
		{7, 21, "map[0_2:map[grant_ms:200 member:a] 1_1:map[from:a member:c stop_ms:39000]]"},
		{5, 0, "map[]"}, // the first polled target: nothing before it
	} {
		if got := fmt.Sprint(r.moves(c.epoch, at(c.at))); got != c.want {
			t.Errorf("epoch %d: moves %s, want %s", c.epoch, got, c.want)
		}
	}
	// The figures reach the derived scenario, from the window's opening.
	r.Targets[1].Inputs, r.Targets[2].Inputs = &histInputs{}, &histInputs{}
	ins := r.recordedInputs(r.windowStart())
	if len(ins) != 2 || ins[0]["at_s"] != 18.0 || fmt.Sprint(ins[0]["moves"]) != "map[0_1:map[from:b grant_ms:400 handover_ms:1000 member:c stop_ms:-500] 0_2:map[from:a grant_ms:1150 member:c stop_ms:40000]]" {
		t.Errorf("recorded inputs %v", ins)
	}
}

// TestSimScenarioFence: in the derived scenario a member fenced on its
// session timeout (or with no reason kept, as in older recordings) is a
// crash one session timeout before the fence, so the simulator fences it
// at the recorded time, and it joins again with its own id; a member
// fenced otherwise, or one that joined less than a session timeout before
// its fence, leaves at the fence. The reports the polls saw in the window
// become the members' report times, or their report values where the
// recording kept them, and the changelogs start at their
// measured end back-dated to the window's opening.
func TestSimScenarioFence(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	target := func(e int32, s float64, kind, member, detail string) histTarget {
		h := histTarget{Epoch: e, Time: at(s)}
		h.Reasons = append(h.Reasons, struct {
			Kind   string `json:"kind"`
			Member string `json:"member,omitempty"`
			Detail string `json:"detail,omitempty"`
		}{kind, member, detail})
		return h
	}
	r := &simRecording{Start: t0, End: at(80), Baseline: 5, BaselineMembers: []string{"a", "b", "c"},
		Configs: map[string]string{"streams.session.timeout.ms": "10000"},
		Targets: []histTarget{{Epoch: 5, Time: t0}, target(6, 20.0004, "member-fenced", "b", ""),
			target(7, 30, "member-joined", "b", ""), target(8, 45, "member-fenced", "b", "session-timeout"),
			target(9, 50, "member-fenced", "c", "rebalance-timeout"), target(10, 52, "member-joined", "d", ""),
			target(11, 55, "member-fenced", "d", "session-timeout")},
	}
	for _, task := range aggTasks() {
		r.Running = append(r.Running, taskRun{Task: task, Instance: "a", From: at(-10), To: r.End})
	}
	r.Reports = []memberReport{{Time: at(-1), Member: "a"}, {Time: at(3.5), Member: "a"},
		{Time: at(4), Member: "c", Offsets: map[string]int64{"1_0": 40}, Ends: map[string]int64{"1_0": 50, "1_1": 7}},
		{Time: at(9), Member: "a"}, {Time: at(81), Member: "c", Offsets: map[string]int64{}}}
	data, err := r.simScenario(simModel{}, false)
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Events  []map[string]any `json:"events"`
		Reports struct {
			At     map[string][]float64         `json:"at"`
			Values map[string][]sim.ReportValue `json:"values"`
		} `json:"reports"`
	}
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range sc.Events {
		for _, k := range []string{"join", "leave", "crash"} {
			if m, ok := e[k]; ok {
				got = append(got, fmt.Sprintf("%v %s %v", e["at_s"], k, m))
			}
		}
	}
	want := "[0 join a 0 join b 0 join c 10 crash b 30 join b 35 crash b 50 leave c 52 join d 55 leave d]"
	if fmt.Sprint(got) != want {
		t.Errorf("events %v, want %s", got, want)
	}
	// a's reports were recorded as times only (an older recording), c's
	// with what it reported: c's are replayed as values.
	if g := fmt.Sprint(sc.Reports.At); g != "map[a:[3.5 9]]" {
		t.Errorf("report times %s, want map[a:[3.5 9]]", g)
	}
	if g := fmt.Sprint(sc.Reports.Values); g != "map[c:[{4 map[1_0:40] map[1_0:50 1_1:7]}]]" {
		t.Errorf("report values %s, want c's at 4 s", g)
	}
	// The changelogs' mean end read 10 s after the window opened, less
	// the load's growth since (33 records/s a task): the end at 0 s.
	r.ChangelogEnd = 3000
	for _, c := range []struct {
		at   time.Time
		want int64
	}{{time.Time{}, 3000}, {at(10), 3000 - 10*int64(recordsPerSec/aggApp.partitions)}, {at(-1), 3000}} {
		r.ChangelogEndAt = c.at
		if got := r.changelogAt(r.windowStart()); got != c.want {
			t.Errorf("changelog end read at %v: %d at the window's opening, want %d", c.at, got, c.want)
		}
	}
	if _, err := sim.Decode("fence.json", data, nil); err != nil {
		t.Errorf("the simulator refuses the derived scenario: %v", err)
	}
}

// TestSimScenarioJoinTimes: a member joins the derived scenario when the
// polls first saw it, if after the target before its own; without such a
// sighting, a join whose target folds several changes (its epoch more than
// one past the target before) and came within the assignment interval and
// a heartbeat interval of the target before (held back by the interval: it
// came at some time since) joins just after that target, so core folds
// the joins of that stretch into one target as the real group did; any
// other join joins at its target's time.
func TestSimScenarioJoinTimes(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 8, 43, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	target := func(e int32, s float64, members ...string) histTarget {
		h := histTarget{Epoch: e, Time: at(s)}
		for _, m := range members {
			h.Reasons = append(h.Reasons, struct {
				Kind   string `json:"kind"`
				Member string `json:"member,omitempty"`
				Detail string `json:"detail,omitempty"`
			}{"member-joined", m, ""})
		}
		return h
	}
	r := &simRecording{Start: t0, End: at(80), Baseline: 5, BaselineMembers: []string{"a"},
		Configs: map[string]string{"streams.assignment.interval.ms": "1000", "streams.heartbeat.interval.ms": "250"},
		// x joins at 28.5 s; y and z in the 1.01 s after its target, folded
		// into one (two epochs on); v 20 s later; u's target comes 1.1 s
		// after v's but folds nothing (one epoch on): it joined then; w,
		// seen by the polls at 58 s, 2 s before its target; a, fenced and
		// back with its id, was first seen before the window.
		Targets: []histTarget{{Epoch: 5, Time: t0}, target(6, 28.5, "x"), target(8, 29.51, "y", "z"),
			target(9, 49.5, "v"), target(10, 50.6, "u"), target(11, 60, "w")},
		Joined: map[string]time.Time{"a": at(-30), "w": at(58)},
	}
	for _, task := range aggTasks() {
		r.Running = append(r.Running, taskRun{Task: task, Instance: "a", From: at(-10), To: r.End})
	}
	data, err := r.simScenario(simModel{}, false)
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		Events []map[string]any `json:"events"`
	}
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range sc.Events {
		if m, ok := e["join"]; ok {
			got = append(got, fmt.Sprintf("%v %v", e["at_s"], m))
		}
	}
	if want := "[0 a 28.5 x 28.65 y 28.65 z 49.5 v 50.6 u 58 w]"; fmt.Sprint(got) != want {
		t.Errorf("joins %v, want %s", got, want)
	}
}

// TestSimScenarioRestoreQuota: a scale-out recording with its changelog's
// bytes measured gives each limited instance's join (a process that joins
// after the baseline, with a limited link measured) the run's quota as
// restore_quota: 8 KiB/s, fetches of 2 KiB, the padding's 2,000 records
// as the head at their measured bytes, and the app's records at the bytes
// per offset the rest of the partition measured ((250,000 - 60,000) /
// (3,900 - 2,000) = 100); the baseline's member gets none, nor does a
// recording without the measurements; the simulator accepts the scenario.
func TestSimScenarioRestoreQuota(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	joined := histTarget{Epoch: 6, Time: at(20)}
	joined.Reasons = append(joined.Reasons, struct {
		Kind   string `json:"kind"`
		Member string `json:"member,omitempty"`
		Detail string `json:"detail,omitempty"`
	}{"member-joined", "x", ""})
	r := &simRecording{Start: t0, End: at(80), Baseline: 5, BaselineMembers: []string{"a"},
		Configs: map[string]string{"streams.heartbeat.interval.ms": "250"},
		Targets: []histTarget{{Epoch: 5, Time: t0}, joined}, ChangelogEnd: 3000,
		Changelog: &changelogBytes{PadBytes: 60_000, EndBytes: 250_000, End: 3_900}}
	for _, task := range aggTasks() {
		r.Running = append(r.Running, taskRun{Task: task, Instance: "a", From: at(-10), To: r.End})
	}
	quotas := func(r *simRecording) map[string]any {
		t.Helper()
		data, err := r.simScenario(simModel{restorePerS: 185}, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Decode("quota.json", data, nil); err != nil {
			t.Errorf("the simulator refuses the derived scenario: %v", err)
		}
		var sc struct {
			Events []struct {
				Join  string         `json:"join"`
				Quota map[string]any `json:"restore_quota"`
			} `json:"events"`
		}
		if err := json.Unmarshal(data, &sc); err != nil {
			t.Fatal(err)
		}
		out := map[string]any{}
		for _, e := range sc.Events {
			if e.Join != "" && e.Quota != nil {
				out[e.Join] = e.Quota
			}
		}
		return out
	}
	got := quotas(r)
	want := map[string]any{"bytes_per_s": float64(8192), "fetch_max_bytes": float64(2048), "head_records": float64(2000),
		"head_bytes": float64(60_000), "record_bytes": float64(100)}
	if fmt.Sprint(got["x"]) != fmt.Sprint(want) || got["a"] != nil {
		t.Errorf("restore quotas %v, want x %v and none for a", got, want)
	}
	r.Changelog = nil
	if got := quotas(r); got["x"] != nil {
		t.Errorf("without the changelog's bytes: restore quota %v, want none", got["x"])
	}
}

// TestSimChangelogGrowth (no Kafka): the derived scenario's changelogs grow
// at the offsets a running task's changelog grew by on the recording, not at
// the load's records per task: five stateful tasks that ran the 100 s
// between coordhost's first and last end-offset read grew 4,200 offsets
// each, and 1_0, unavailable 20 s of them, 3,360 (24,360 over 580
// task-seconds: 42 a second, where the input gave 33 records; the
// stateless tasks, running too, have no changelog); the window's
// changelogs start that much lower (3,000 read 10 s in: 2,580); without
// two reads, the load's 33.
func TestSimChangelogGrowth(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 17, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	r := &simRecording{Start: t0, End: at(120), Baseline: 5, BaselineMembers: []string{"a"},
		Configs: map[string]string{"streams.heartbeat.interval.ms": "250"},
		Targets: []histTarget{{Epoch: 5, Time: t0}}, ChangelogEnd: 3000, ChangelogEndAt: at(10)}
	first, last := hostRead{Time: t0, Ends: map[string]int64{}}, hostRead{Time: at(100), Ends: map[string]int64{}}
	for _, task := range aggTasks() {
		if task[0] == '1' { // the stateful tasks: only they have changelogs
			first.Ends[task] = 1000
			last.Ends[task] = 1000 + 4200
		}
		if task == "1_0" {
			last.Ends[task] = 1000 + 3360
			r.Running = append(r.Running, taskRun{Task: task, Instance: "a", From: at(-10), To: at(40)},
				taskRun{Task: task, Instance: "a", From: at(60), To: r.End})
		} else {
			r.Running = append(r.Running, taskRun{Task: task, Instance: "a", From: at(-10), To: r.End})
		}
	}
	r.HostReads = []hostRead{first, last}
	if got := r.changelogGrowth(); got != 42 {
		t.Errorf("changelog growth %d offsets/s, want 42", got)
	}
	if got := r.changelogAt(t0); got != 2580 {
		t.Errorf("changelog at the window's opening %d, want 2580", got)
	}
	data, err := r.simScenario(simModel{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Decode("growth.json", data, nil); err != nil {
		t.Errorf("the simulator refuses the derived scenario: %v", err)
	}
	var sc struct {
		State struct {
			AppendPerS int64 `json:"append_records_per_s"`
		} `json:"state"`
	}
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatal(err)
	}
	if sc.State.AppendPerS != 42 {
		t.Errorf("append_records_per_s %d, want 42", sc.State.AppendPerS)
	}
	r.HostReads = r.HostReads[:1]
	if got := r.changelogGrowth(); got != int64(recordsPerSec/aggApp.partitions) {
		t.Errorf("one read: changelog growth %d, want the load's %d", got, recordsPerSec/aggApp.partitions)
	}
}

// TestSimMedianTable: the medians table counts the repetitions whose
// tasks moved matched, on each engine, and shows no per-rebalance column.
func TestSimMedianTable(t *testing.T) {
	rows := []simRow{
		{run: "roll", assignor: "ha", rep: 1, realMoved: 39, simMoved: 39, match: "equal", model: simEngine{moved: 39, match: "equal"}},
		{run: "roll", assignor: "ha", rep: 2, realMoved: 36, simMoved: 30, match: "no", model: simEngine{moved: 37, match: "in range 36–39"}},
	}
	table := formatMedianTable(medianRows(rows))
	if !strings.Contains(table, "| roll | ha | 2 | 75 / 69 | 1/2 |") || !strings.Contains(table, "| 76, 2/2 |") || strings.Contains(table, "[]") {
		t.Errorf("medians table:\n%s", table)
	}
}

// TestSimDirection: the real runs show HA below sticky when every HA
// repetition lies below every sticky one, however small the gap (29 %
// here, inside the simulator's ±30 %), and show no side when the
// repetitions overlap; the simulator's side counts only beyond the
// tolerance.
func TestSimDirection(t *testing.T) {
	if got := realSide([]float64{110, 130}, []float64{165, 175}); got != "below" {
		t.Fatalf("HA 110/130 against sticky 165/175: %s, want below", got)
	}
	if got := realSide([]float64{165, 175}, []float64{110, 130}); got != "above" {
		t.Fatalf("reversed: %s, want above", got)
	}
	if got := realSide([]float64{110, 170}, []float64{165, 175}); got != "same" {
		t.Fatalf("overlapping repetitions: %s, want same", got)
	}
	if got := realSide(nil, []float64{165}); got != "same" {
		t.Fatalf("no HA repetition: %s, want same", got)
	}
	if got := side(131.2, 199.8); got != "below" {
		t.Fatalf("simulated 131.2 against 199.8 (34 %% apart): %s, want below", got)
	}
	if got := side(120.2, 170.2); got != "same" {
		t.Fatalf("120.2 against 170.2 (29 %% apart): %s, want same", got)
	}
	rows := []simRow{
		{run: "scale-out", assignor: "ha", rep: 1, realUnavail: 110, simUnavail: 125, match: "equal"},
		{run: "scale-out", assignor: "ha", rep: 2, realUnavail: 130, simUnavail: 137, match: "equal"},
		{run: "scale-out", assignor: "sticky", rep: 1, realUnavail: 165, simUnavail: 195, match: "equal"},
		{run: "scale-out", assignor: "sticky", rep: 2, realUnavail: 175, simUnavail: 205, match: "equal"},
	}
	medians := []simRow{
		{run: "scale-out", assignor: "ha", rep: 2, realUnavail: 120.2, simUnavail: 131.2},
		{run: "scale-out", assignor: "sticky", rep: 2, realUnavail: 170.2, simUnavail: 199.8},
	}
	checkSimRows(t, rows, medians) // HA below sticky on both sides: passes
}

// TestSimHostReads: coordhost's end-offset reads of the recorded group
// are taken from its log (another group's, and other lines, left out; an
// unknown end, -1, left out of a read), and reach the derived scenario
// with the recorded inputs only: from the window's opening to its end,
// the last read before the opening at 0 s.
func TestSimHostReads(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	at := func(s float64) string {
		return t0.Add(time.Duration(s * float64(time.Second))).Format(time.RFC3339Nano)
	}
	line := func(s float64, group, ends string) string {
		return `time=` + at(s) + ` level=DEBUG msg="changelog end offsets read" component=loop group=` + group + ` ends="` + ends + `"`
	}
	log := filepath.Join(t.TempDir(), "coordhost.log")
	lines := []string{
		line(-40, "g", "1_0=10 1_1=11"),
		line(-10, "g", "1_0=20 1_1=-1"),
		line(-5, "other", "1_0=99 1_1=99"),
		`time=` + at(1) + ` level=INFO msg="new target assignment" group=g epoch=6`,
		line(20, "g", "1_0=30 1_1=31"),
		line(90, "g", "1_0=40 1_1=41"),
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reads, err := hostReadsOf(log, "g")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(reads); len(reads) != 4 || fmt.Sprint(reads[1].Ends) != "map[1_0:20]" || !reads[2].Time.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("reads %s, want g's four, the one of -10 s without 1_1", got)
	}
	r := &simRecording{Group: "g", Start: t0, End: t0.Add(80 * time.Second), Baseline: 5, BaselineMembers: []string{"a"},
		Targets:   []histTarget{{Epoch: 5, Time: t0}, {Epoch: 6, Time: t0.Add(30 * time.Second), Inputs: &histInputs{}}},
		HostReads: reads}
	for _, task := range aggTasks() {
		r.Running = append(r.Running, taskRun{Task: task, Instance: "a", From: t0.Add(-10 * time.Second), To: r.End})
	}
	derived := func(recorded bool) []sim.HostRead {
		data, err := r.simScenario(simModel{}, recorded)
		if err != nil {
			t.Fatal(err)
		}
		var sc struct {
			Reports struct {
				HostReads []sim.HostRead `json:"host_reads"`
			} `json:"reports"`
		}
		if err := json.Unmarshal(data, &sc); err != nil {
			t.Fatal(err)
		}
		return sc.Reports.HostReads
	}
	if got, want := fmt.Sprint(derived(true)), "[{0 map[1_0:20]} {20 map[1_0:30 1_1:31]}]"; got != want {
		t.Errorf("host reads %s, want %s", got, want)
	}
	if got := derived(false); got != nil {
		t.Errorf("host reads %v without the recorded inputs, want none", got)
	}
}

// TestSimTaskDiffs: on a hand-built recording (no Kafka) the real
// unavailable seconds split by task — 1_4 stopped at 20 s on one
// instance and restored on another at 31 s, every other task running
// throughout — and sum to the total; the table's per-task lines name a
// task only where core's figure is more than a second off the real one.
func TestSimTaskDiffs(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	r := &simRecording{Run: "scale-out", Assignor: "ha", Rep: 1, Start: t0, End: at(60)}
	for _, task := range aggTasks() {
		if task == "1_4" {
			r.Running = append(r.Running, taskRun{Task: task, Instance: "a", From: at(-10), To: at(20)},
				taskRun{Task: task, Instance: "b", From: at(31), To: r.End})
			continue
		}
		r.Running = append(r.Running, taskRun{Task: task, Instance: "a", From: at(-10), To: r.End})
	}
	by := r.realUnavailableByTask()
	if len(by) != 12 || math.Abs(by["1_4"]-11) > 1e-9 || by["1_0"] != 0 || math.Abs(r.realUnavailable()-11) > 1e-9 {
		t.Fatalf("real unavailable by task %v, total %v; want 11 s for 1_4 alone", by, r.realUnavailable())
	}
	rows := []simRow{
		{run: "scale-out", assignor: "ha", rep: 1, realByTask: by, simByTask: map[string]float64{"1_4": 2.1, "0_0": 0.5}},
		{run: "scale-out", assignor: "sticky", rep: 1, realByTask: by, simByTask: map[string]float64{"1_4": 11.8}},
	}
	want := "Unavailable seconds per task, real / core, where they differ by more than 1 s:\n\n" +
		"- scale-out ha 1: 1_4 11.0 / 2.1\n- scale-out sticky 1: none\n"
	if got := formatTaskDiffs(rows); got != want {
		t.Errorf("per-task lines:\n%s\nwant:\n%s", got, want)
	}
}
