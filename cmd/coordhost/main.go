// Command coordhost runs the coordhost Kafka group coordinator.
//
//	coordhost [serve] [--config file.yaml] [--key=value ...]
//
// serve (the default) starts the server; see docs/CONFIG.md. Other
// subcommands register themselves in commands from their own files:
// plugin check (plugin.go), assign (assign.go, docs/PLUGINS.md), simulate
// (simulate.go, docs/AB-TESTING.md) and store migrate (store.go,
// docs/SCALE-OUT.md).
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// commands maps a subcommand name to its entry point, which gets the
// arguments after the name and returns the exit code. Files of this package
// add theirs in init (e.g. plugin.go adds "plugin").
var commands = map[string]func(args []string) int{
	"serve": serve,
}

func main() {
	args := os.Args[1:]
	name := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	run, ok := commands[name]
	if !ok {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "coordhost: unknown command %q (commands: %s)\n", name, strings.Join(names, ", "))
		os.Exit(2)
	}
	os.Exit(run(args))
}
