package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/coordhost/coordhost/host/config"
)

func init() { commands["config"] = showConfig }

// showConfig (coordhost config) prints the effective configuration as JSON, as serve would
// load it from the same flags, file and environment; with --group=ID it
// prints that group's effective per-group configuration with sources.
func showConfig(args []string) int { return runConfig(args, os.Environ(), os.Stdout, os.Stderr) }

func runConfig(args, environ []string, stdout, stderr io.Writer) int {
	var group *string
	rest := args[:0:0]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "--group="):
			g := strings.TrimPrefix(a, "--group=")
			group = &g
		case a == "--group" && i+1 < len(args):
			group = &args[i+1]
			i++
		default:
			rest = append(rest, a)
		}
	}
	cfg, err := config.Load(rest, environ, stderr)
	if errors.Is(err, config.ErrHelp) {
		fmt.Fprintln(stderr, "coordhost config [--group ID] [serve flags]: print the effective configuration")
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "coordhost:", err)
		return 2
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if group != nil {
		enc.Encode(map[string]any{"group": *group, "config": cfg.Groups.Explain(*group)})
		return 0
	}
	enc.Encode(map[string]any{"file": cfg.File, "config": cfg.Settings()})
	return 0
}
