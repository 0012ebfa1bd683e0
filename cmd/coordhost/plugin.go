package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/host/plugin"
)

func init() {
	commands["plugin"] = func(args []string) int { return pluginCommand(args, os.Stdout, os.Stderr) }
}

// pluginCommand runs `coordhost plugin SUBCOMMAND ...` and returns the exit
// code. Subcommands: check.
func pluginCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: coordhost plugin check [flags] FILE.wasm")
		return 2
	}
	switch args[0] {
	case "check":
		return pluginCheck(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "coordhost plugin: unknown subcommand %q (have: check)\n", args[0])
		return 2
	}
}

// pluginCheck loads a plugin with the run-time sandbox settings and runs
// the conformance kit on each operation it exports (task assignor, probing
// policy), printing a verdict per case and overall.
func pluginCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coordhost plugin check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	deadline := fs.Duration("deadline", 10*time.Second, "per-call deadline")
	pages := fs.Uint("memory-pages", 1024, "linear memory limit in 64 KiB pages")
	short := fs.Bool("short", false, "skip the large cases (100 members x 1,000 tasks and 1,000 members x 10,004 tasks)")
	verbose := fs.Bool("v", false, "log every plugin failure")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: coordhost plugin check [flags] FILE.wasm\n\nRuns the abi/abitest conformance kit on a plugin:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	level := slog.LevelError + 1 // quiet: failures are reported below
	if *verbose {
		level = slog.LevelWarn
	}
	ctx := context.Background()
	path := fs.Arg(0)
	start := time.Now()
	p, err := plugin.LoadFile(ctx, path, plugin.Config{
		Deadline: *deadline, MemoryLimitPages: uint32(*pages),
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		fmt.Fprintf(stdout, "FAIL %s: %v\n", path, err)
		return 1
	}
	defer p.Close(ctx)
	kinds, err := p.Kinds(ctx)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL %s: %v\n", path, err)
		return 1
	}
	fmt.Fprintf(stdout, "plugin %s: ABI v%d, operations: %s, loaded in %v\n",
		p.Name(), abi.Version, kindNames(kinds), time.Since(start).Round(time.Millisecond))
	var results []abitest.Result
	if kinds&abi.KindAssign != 0 {
		cases := abitest.Cases(*short)
		if !*short {
			cases = append(cases, abitest.Largest())
		}
		results = append(results, abitest.Run(func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
			return p.Assign(ctx, req)
		}, cases)...)
	}
	if kinds&abi.KindProbe != 0 {
		for _, r := range abitest.RunProbe(func(req *abi.ProbeRequest) (*abi.ProbeResponse, error) {
			return p.Probe(ctx, req)
		}, abitest.Cases(true)) {
			r.Case = "probe/" + r.Case
			results = append(results, r)
		}
	}
	if kinds&abi.KindAssignPartitions != 0 {
		results = append(results, abitest.RunPartitions(func(req *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error) {
			return p.AssignPartitions(ctx, req)
		}, abitest.PartitionCases())...)
	}
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			fmt.Fprintf(stdout, "  FAIL %-28s %v\n", r.Case, r.Err)
			continue
		}
		if strings.HasPrefix(r.Case, "probe/") {
			fmt.Fprintf(stdout, "  ok   %s\n", r.Case)
			continue
		}
		fmt.Fprintf(stdout, "  ok   %-28s %v\n", r.Case, r.Figures)
	}
	m := p.Metrics()
	fmt.Fprintf(stdout, "calls=%d errors=%v instances created=%d discarded=%d mean latency=%v\n",
		m.Calls, m.Errors, m.InstancesCreated, m.InstancesDiscarded, meanLatency(m))
	if failed > 0 {
		fmt.Fprintf(stdout, "FAIL %s: %d of %d cases failed\n", path, failed, len(results))
		return 1
	}
	fmt.Fprintf(stdout, "PASS %s: valid, deterministic and order-independent on %d cases\n", path, len(results))
	return 0
}

func kindNames(k int32) string {
	var names []string
	for _, kn := range []struct {
		bit  int32
		name string
	}{{abi.KindAssign, "assign"}, {abi.KindProbe, "probe"}, {abi.KindAssignPartitions, "assign_partitions"}} {
		if k&kn.bit != 0 {
			names = append(names, kn.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func meanLatency(m plugin.Metrics) time.Duration {
	if m.LatencyCount == 0 {
		return 0
	}
	return (m.LatencySum / time.Duration(m.LatencyCount)).Round(time.Microsecond)
}

func init() {
	commands["plugin"] = func(args []string) int { return pluginCommand(args, os.Stdout, os.Stderr) }
}
