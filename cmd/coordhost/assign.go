package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/metrics"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/plugin"
)

func init() {
	commands["assign"] = func(args []string) int { return assignCommand(args, os.Stdout, os.Stderr) }
}

const assignUsage = `usage: coordhost assign --plugin FILE.wasm|builtin:NAME --input SPEC.json [--json]

Runs one assignment of the group in SPEC.json (format: docs/PLUGINS.md,
"Running one assignment") through the plugin host, validates it, and prints
the target with its metrics (abi/metrics). builtin:sticky and builtin:ha run
the native builds of the built-in assignors instead of a .wasm.
`

// assignCommand runs `coordhost assign` and returns the exit code: 0 on a
// valid assignment, 1 when the input or the assignor fails, 2 on usage
// errors.
func assignCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coordhost assign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pluginArg := fs.String("plugin", "", "the assignor: a .wasm file, or builtin:sticky / builtin:ha")
	input := fs.String("input", "", "the group, as a JSON spec")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	deadline := fs.Duration("deadline", 10*time.Second, "per-call deadline of a .wasm plugin")
	pages := fs.Uint("memory-pages", 1024, "linear memory limit of a .wasm plugin, in 64 KiB pages")
	fs.Usage = func() {
		fmt.Fprint(stderr, assignUsage+"\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *pluginArg == "" || *input == "" || fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "coordhost assign:", err)
		return 1
	}
	data, err := os.ReadFile(*input)
	if err != nil {
		return fail(err)
	}
	req, err := decodeSpec(*input, data)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	a, err := openAssignor(ctx, *pluginArg, plugin.Config{
		Deadline: *deadline, MemoryLimitPages: uint32(*pages),
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return fail(err)
	}
	defer a.close()
	start := time.Now()
	resp, err := a.assign(req)
	elapsed := time.Since(start)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", a.name, err))
	}
	out, err := assignResult(a.name, req, resp, elapsed)
	if err != nil {
		return fail(err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail(err)
		}
		return 0
	}
	printAssign(stdout, out)
	return 0
}

// assignor is what `assign` runs: a loaded plugin or a native built-in.
type assignor struct {
	name   string
	assign func(*abi.AssignRequest) (*abi.AssignResponse, error)
	// probe is its probing policy (coordhost_probe, or a built-in's
	// native one); nil: it has none.
	probe func(*abi.ProbeRequest) (*abi.ProbeResponse, error)
	close func()
}

// openAssignor loads arg: "builtin:NAME" or a .wasm file. A plugin gets
// its first instance started here (by asking its kinds), so the timed
// call measures an assignment, not the guest runtime's start.
func openAssignor(ctx context.Context, arg string, cfg plugin.Config) (*assignor, error) {
	if name, ok := strings.CutPrefix(arg, "builtin:"); ok {
		b, ok := assign.Builtins[name]
		if !ok {
			names := make([]string, 0, len(assign.Builtins))
			for n := range assign.Builtins {
				names = append(names, "builtin:"+n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("--plugin %s: no such built-in (have %s)", arg, strings.Join(names, ", "))
		}
		a := &assignor{name: arg, assign: nativeRun(b.Native), close: func() {}}
		if b.Probe != nil {
			a.probe = b.Probe
		}
		return a, nil
	}
	p, err := plugin.LoadFile(ctx, arg, cfg)
	if err != nil {
		return nil, err
	}
	kinds, err := p.Kinds(ctx)
	if err == nil && kinds&abi.KindAssign == 0 {
		err = fmt.Errorf("plugin %s exports no task assignor (operations: %s)", arg, kindNames(kinds))
	}
	if err != nil {
		p.Close(ctx)
		return nil, err
	}
	a := &assignor{
		name:   p.Name(),
		assign: func(req *abi.AssignRequest) (*abi.AssignResponse, error) { return p.Assign(ctx, req) },
		close:  func() { p.Close(ctx) },
	}
	if kinds&abi.KindProbe != 0 {
		a.probe = func(req *abi.ProbeRequest) (*abi.ProbeResponse, error) { return p.Probe(ctx, req) }
	}
	return a, nil
}

// nativeRun holds a native assignor to what the host checks of a plugin: a
// panic is an error, and the response must be valid.
func nativeRun(native assign.Native) func(*abi.AssignRequest) (*abi.AssignResponse, error) {
	return func(req *abi.AssignRequest) (resp *abi.AssignResponse, err error) {
		defer func() {
			if v := recover(); v != nil {
				resp, err = nil, fmt.Errorf("panic: %v", v)
			}
		}()
		if resp, err = native(req); err == nil {
			err = abi.ValidateAssignment(req, resp)
		}
		return resp, err
	}
}

// assignOutput is what `assign` prints (with --json, as is).
type assignOutput struct {
	Assignor    string             `json:"assignor"`
	GroupID     string             `json:"group_id"`
	GroupEpoch  int32              `json:"group_epoch"`
	Members     []assignedMember   `json:"members"`
	NextProbeMs int64              `json:"next_probe_ms"`
	Metrics     metrics.Report     `json:"metrics"`
	HandOvers   []assignedHandOver `json:"hand_overs"`
}

type assignedMember struct {
	MemberID string   `json:"member_id"`
	Process  string   `json:"process"`
	Rack     string   `json:"rack,omitempty"`
	Active   []string `json:"active"`
	Standby  []string `json:"standby"`
	Warmup   []string `json:"warmup"`
}

type assignedHandOver struct {
	Task string `json:"task"`
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	Lag  int64  `json:"lag"` // -1: unknown
	Cold bool   `json:"cold"`
}

func assignResult(name string, req *abi.AssignRequest, resp *abi.AssignResponse, elapsed time.Duration) (*assignOutput, error) {
	opts := metrics.Options{ComputeTime: elapsed}
	report, err := metrics.Measure(req, resp, opts)
	if err != nil {
		return nil, err
	}
	hs, err := metrics.HandOvers(req, resp, opts)
	if err != nil {
		return nil, err
	}
	space := abi.NewTaskSpace(req.Subtopologies)
	names := func(set []int32) []string {
		out := make([]string, 0, len(set))
		for _, t := range set {
			out = append(out, taskName(space, req.Subtopologies, t))
		}
		return out
	}
	out := &assignOutput{Assignor: name, GroupID: req.GroupID, GroupEpoch: req.GroupEpoch,
		NextProbeMs: resp.NextProbeMs, Metrics: report, HandOvers: []assignedHandOver{}}
	for i, m := range req.Members {
		a := resp.Members[i]
		out.Members = append(out.Members, assignedMember{MemberID: m.ID, Process: req.Processes[m.Process], Rack: m.Rack,
			Active: names(a.Active), Standby: names(a.Standby), Warmup: names(a.Warmup)})
	}
	for _, h := range hs {
		out.HandOvers = append(out.HandOvers, assignedHandOver{Task: taskName(space, req.Subtopologies, h.Task),
			From: h.From, To: h.To, Lag: h.Lag, Cold: h.Cold})
	}
	return out, nil
}

// maxHandOverLines caps the hand-overs the tables list.
const maxHandOverLines = 20

// printAssign writes the human tables.
func printAssign(w io.Writer, o *assignOutput) {
	r := o.Metrics
	fmt.Fprintf(w, "assignor %s: group %q epoch %d, %d members on %d processes, %d tasks (%d stateful)\n\n",
		o.Assignor, o.GroupID, o.GroupEpoch, r.Members, r.Processes, r.Tasks, r.Stateful)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tPROCESS\tRACK\tACTIVE\tSTANDBY\tWARM-UP")
	for _, m := range o.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.MemberID, m.Process, orDash(m.Rack),
			orDash(strings.Join(m.Active, " ")), orDash(strings.Join(m.Standby, " ")), orDash(strings.Join(m.Warmup, " ")))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "BALANCE\tMIN\tMAX\tSPREAD")
	b := r.Balance
	for _, row := range []struct {
		name string
		r    metrics.Range
	}{{"active/member", b.ActivePerMember}, {"all/member", b.AllPerMember},
		{"active/process", b.ActivePerProcess}, {"all/process", b.AllPerProcess}} {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", row.name, row.r.Min, row.r.Max, row.r.Spread)
	}
	tw.Flush()
	mv := r.Movement
	fmt.Fprintf(w, "\nmovement:   %d active tasks kept, %d moved (%d to another process), %d new; %d standbys moved\n",
		mv.Kept, mv.Moved, mv.MovedProcess, mv.New, mv.StandbysMoved)
	fmt.Fprintf(w, "hand-overs: %d stateful (%d warm, %d cold, %d of them with unknown lag)\n",
		mv.HandOvers, mv.Warm, mv.Cold, mv.ColdUnknownLag)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, h := range o.HandOvers {
		if i == maxHandOverLines {
			fmt.Fprintf(tw, "  ... and %d more (--json lists all)\n", len(o.HandOvers)-i)
			break
		}
		lag, kind := "unknown", "warm"
		if h.Lag >= 0 {
			lag = fmt.Sprint(h.Lag)
		}
		if h.Cold {
			kind = "cold"
		}
		fmt.Fprintf(tw, "  %s\t%s -> %s\tlag %s\t%s\n", h.Task, orDash(h.From), h.To, lag, kind)
	}
	tw.Flush()
	s := r.Standbys
	fmt.Fprintf(w, "standbys:   %d placed, %d possible, %d wanted; %d tasks short\n", s.Placed, s.Possible, s.Wanted, s.Short)
	fmt.Fprintf(w, "warm-ups:   %d open, %d caught up\n", r.Warmups.Open, r.Warmups.CaughtUp)
	if rk := r.Racks; rk.Known > 0 {
		fmt.Fprintf(w, "racks:      %d known; of %d tasks with copies on known racks, %d spread, %d concentrated\n",
			rk.Known, rk.Checked, rk.Spread, rk.Concentrated)
	} else {
		fmt.Fprintln(w, "racks:      none known")
	}
	probe := "none"
	if o.NextProbeMs >= 0 {
		probe = fmt.Sprintf("in %d ms", o.NextProbeMs)
	}
	fmt.Fprintf(w, "next probe: %s\n", probe)
	fmt.Fprintf(w, "compute:    %v\n", r.ComputeTime.Round(time.Microsecond))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
