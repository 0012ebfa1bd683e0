package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/sim"
)

func init() {
	commands["simulate"] = func(args []string) int { return simulateCommand(args, os.Stdout, os.Stderr) }
}

const simulateUsage = `usage: coordhost simulate --scenario FILE [--scenario FILE ...] [--seed N] --assignor A|--plugin A.wasm [--assignor B|--plugin B.wasm ...] [--engine core|model] [--json FILE] [--html FILE]

Replays the streams group scenario in FILE (YAML or JSON; format:
docs/AB-TESTING.md, "Simulating a group's life") against each assignor and
compares them: rebalances, tasks moved, warm and cold hand-overs,
task-seconds without a caught-up active, balance over time. An assignor is
a built-in name (sticky, ha; or builtin:NAME) or a .wasm plugin file;
--plugin takes .wasm files only. Assignors run in the order given.
By default (--engine core) the scenario is replayed on coordhost's own
coordinator, its members Kafka Streams clients heartbeating in virtual
time; --engine model replays it on the simulator's own model of the
group instead: an approximation, much faster on large groups, whose
differences from the real coordinator docs/AB-TESTING.md lists.
With more than one --scenario, each file is one group of a fleet
replayed against the same assignors: the report holds every group's and,
per assignor, the fleet's sums and the number of groups where it left the
fewest task-seconds without a caught-up active (scenario names must
differ; --seed applies to each group).
--json and --html write the reports ("-" is standard output); without
either, a table goes to standard output. The same scenario, seed and
assignors give byte-identical reports.
`

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// wasmFlag adds .wasm files to the list it shares with another flag.
type wasmFlag struct{ list *listFlag }

func (w wasmFlag) String() string {
	if w.list == nil {
		return ""
	}
	return w.list.String()
}

func (w wasmFlag) Set(v string) error {
	if !strings.HasSuffix(v, ".wasm") {
		return fmt.Errorf("%q is not a .wasm file (built-in assignors go with --assignor)", v)
	}
	return w.list.Set(v)
}

// simulateCommand runs `coordhost simulate` and returns the exit code: 0
// when every assignor's replay completed, 1 when the scenario, an assignor
// or an output fails, 2 on usage errors.
func simulateCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coordhost simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var scenarios listFlag
	fs.Var(&scenarios, "scenario", "a scenario file (YAML or JSON); repeat it to replay a fleet of groups")
	seedArg := fs.String("seed", "", "seed for the scenario's randomness (default: the file's seed)")
	var assignors listFlag
	fs.Var(&assignors, "assignor", "an assignor to replay: sticky, ha, builtin:NAME or FILE.wasm (repeatable)")
	fs.Var(wasmFlag{&assignors}, "plugin", "a .wasm assignor plugin to replay (repeatable; with --assignor, in the order given)")
	jsonOut := fs.String("json", "", "write the JSON report to this file (- for standard output)")
	htmlOut := fs.String("html", "", "write the HTML report to this file (- for standard output)")
	deadline := fs.Duration("deadline", 10*time.Second, "per-call deadline of a .wasm plugin")
	pages := fs.Uint("memory-pages", 1024, "linear memory limit of a .wasm plugin, in 64 KiB pages")
	engine := fs.String("engine", "core", "core: the real coordinator with heartbeating members; model: the simulator's own model of the group (faster, an approximation)")
	fs.Usage = func() {
		fmt.Fprint(stderr, simulateUsage+"\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if len(scenarios) == 0 || len(assignors) == 0 || fs.NArg() != 0 || (*engine != "model" && *engine != "core") {
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "coordhost simulate:", err)
		return 1
	}
	var seed *uint64
	if *seedArg != "" {
		v, err := strconv.ParseUint(*seedArg, 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "coordhost simulate: --seed %q: want an unsigned integer\n", *seedArg)
			return 2
		}
		seed = &v
	}
	var scs []*sim.Scenario
	for _, file := range scenarios {
		data, err := os.ReadFile(file)
		if err != nil {
			return fail(err)
		}
		sc, err := sim.Decode(file, data, seed)
		if err != nil {
			return fail(err)
		}
		scs = append(scs, sc)
	}
	cfg := plugin.Config{Deadline: *deadline, MemoryLimitPages: uint32(*pages),
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	var runs []sim.Assignor
	seen := map[string]bool{}
	for _, arg := range assignors {
		a, err := simAssignor(context.Background(), arg, cfg)
		if err != nil {
			return fail(err)
		}
		defer a.close()
		if seen[a.Name] {
			return fail(fmt.Errorf("--assignor %s: an assignor named %q is already in the run", arg, a.Name))
		}
		seen[a.Name] = true
		runs = append(runs, a.Assignor)
	}
	var reports []*sim.Report
	for _, sc := range scs {
		report, err := replay(*engine, sc, runs)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", sc.Name, err))
		}
		reports = append(reports, report)
	}
	out := simOutput(reports[0])
	if len(reports) > 1 {
		fleet, err := sim.NewFleet(reports)
		if err != nil {
			return fail(err)
		}
		out = fleet
	}
	for _, o := range []struct {
		path string
		data func() []byte
	}{{*jsonOut, out.JSON}, {*htmlOut, out.HTML}} {
		if err := writeOutput(o.path, o.data, stdout); err != nil {
			return fail(err)
		}
	}
	if *jsonOut == "" && *htmlOut == "" {
		for _, r := range reports {
			printSimulation(stdout, r)
		}
		if f, ok := out.(*sim.Fleet); ok {
			printFleet(stdout, f)
		}
	}
	if failed := out.Failed(); len(failed) > 0 {
		return fail(fmt.Errorf("replay stopped for %s (see the report)", strings.Join(failed, ", ")))
	}
	return 0
}

// simOutput is what the command writes: one group's report or a fleet's.
type simOutput interface {
	JSON() []byte
	HTML() []byte
	Failed() []string
}

// replay runs sc on the engine named: the model (sim.Run) or the real
// coordinator (sim.RunCore, which refuses what it does not simulate yet).
func replay(engine string, sc *sim.Scenario, runs []sim.Assignor) (*sim.Report, error) {
	if engine == "core" {
		return sim.RunCore(sc, runs)
	}
	return sim.Run(sc, runs), nil
}

func writeOutput(path string, data func() []byte, stdout io.Writer) error {
	switch path {
	case "":
		return nil
	case "-":
		_, err := stdout.Write(data())
		return err
	}
	return os.WriteFile(path, data(), 0o644)
}

// openSim is an opened assignor in the simulator's terms.
type openSim struct {
	sim.Assignor
	close func()
}

// simAssignor opens arg as `coordhost assign` opens --plugin (a bare
// built-in name is accepted too) and names its version: "native", or the
// module's "wasm sha256:" prefix as the rebalance history names it.
func simAssignor(ctx context.Context, arg string, cfg plugin.Config) (*openSim, error) {
	if _, ok := assign.Builtins[arg]; ok && !strings.HasSuffix(arg, ".wasm") {
		if _, err := os.Stat(arg); errors.Is(err, os.ErrNotExist) {
			arg = "builtin:" + arg
		}
	}
	a, err := openAssignor(ctx, arg, cfg)
	if err != nil {
		return nil, err
	}
	version := "native"
	if !strings.HasPrefix(arg, "builtin:") {
		data, err := os.ReadFile(arg)
		if err != nil {
			a.close()
			return nil, err
		}
		sum := sha256.Sum256(data)
		version = "wasm sha256:" + hex.EncodeToString(sum[:])[:16]
	}
	return &openSim{Assignor: sim.Assignor{Name: a.name, Version: version, Assign: a.assign, Probe: a.probe}, close: a.close}, nil
}

// printSimulation writes the totals as a table.
func printSimulation(w io.Writer, r *sim.Report) {
	fmt.Fprintf(w, "scenario %q, seed %d, %v s, %d tasks\n\n", r.Scenario, r.Seed, r.DurationS, r.Tasks)
	defer fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ASSIGNOR\tREBALANCES\tPROBES\tMOVED\tWARM\tCOLD\tUNAVAILABLE TASK-S\tMAX UNAVAILABLE\tMAX SPREAD\tRESTORED\tSETTLE S")
	for _, a := range r.Assignors {
		t := a.Totals
		name := a.Name
		if a.Error != "" {
			name += " (stopped: " + a.Error + ")"
		}
		settle := "-" // not settled at the end
		if t.SettleS >= 0 {
			settle = fmt.Sprint(t.SettleS)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t%d\t%d\t%s\n", name, t.Rebalances, t.ProbingRounds, t.TasksMoved, t.Warm, t.Cold,
			a.UnavailableTaskS, t.MaxUnavailable, t.MaxActiveSpread, t.RecordsRestored, settle)
	}
	tw.Flush()
}

// printFleet writes the fleet's totals as a table, after its groups'.
func printFleet(w io.Writer, f *sim.Fleet) {
	fmt.Fprintf(w, "fleet of %d groups\n\n", len(f.Groups))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ASSIGNOR\tGROUPS\tSTOPPED\tFEWEST UNAVAILABLE IN\tUNAVAILABLE TASK-S\tREBALANCES\tMOVED\tWARM\tCOLD\tRESTORED\tNOT SETTLED\tLONGEST SETTLE S")
	for _, t := range f.Totals {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%v\t%d\t%d\t%d\t%d\t%d\t%d\t%v\n", t.Name, t.Groups, t.Stopped, t.Best, t.UnavailableTaskS,
			t.Rebalances, t.TasksMoved, t.Warm, t.Cold, t.RecordsRestored, t.NotSettled, t.MaxSettleS)
	}
	tw.Flush()
}
