package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/loop"
)

func init() { commands["repair"] = repair }

// repair (coordhost repair [serve flags]) is the operator's decision to
// replace a damaged or missing store: the records whose checksum verifies
// go to a new store, the damaged file is moved aside, and what was kept
// and dropped is printed per partition and group (docs/RELIABILITY.md).
func repair(args []string) int { return runRepair(args, os.Environ(), os.Stdout, os.Stderr) }

func runRepair(args, environ []string, stdout, stderr io.Writer) int {
	cfg, err := config.Load(args, environ, stderr)
	if errors.Is(err, config.ErrHelp) {
		fmt.Fprintln(stderr, "coordhost repair [serve flags]: keep the verified records of the store in data.dir, move the damaged file aside, report what was dropped")
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "coordhost:", err)
		return 2
	}
	if err := loop.RepairStore(filepath.Join(cfg.DataDir, host.StoreFile), cfg.StorePartitions, stdout); err != nil {
		fmt.Fprintln(stderr, "coordhost repair:", err)
		return 1
	}
	return 0
}
