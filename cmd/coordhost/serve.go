package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/coordhost/coordhost"
	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/config"
)

// serve runs the server until SIGTERM or SIGINT, then drains.
func serve(args []string) int { return runServe(args, os.Environ(), os.Stderr, nil) }

// runServe is serve with its environment, output and a started-hook
// injected (for tests). It builds the server through the embedding API,
// as a Go program embedding coordhost does.
func runServe(args, environ []string, stderr io.Writer, started func(*coordhost.Coordhost)) int {
	cfg, err := config.Load(args, environ, stderr)
	if errors.Is(err, config.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "coordhost:", err)
		return 2
	}
	log := host.NewLogger(cfg, stderr)
	ch, err := coordhost.New(cfg, coordhost.WithLogger(log))
	if err != nil {
		fmt.Fprintln(stderr, "coordhost:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	context.AfterFunc(ctx, stop) // a second signal during the drain stops the process at once
	if err := ch.Start(ctx); err != nil {
		log.Error("coordhost failed to start", "err", err)
		return 1
	}
	reserveGCHeadroom(environ)           // gcheadroom.go
	governProcs(ctx, cfg.Procs, environ) // procs.go
	if started != nil {
		started(ch)
	}
	if err := ch.Serve(ctx); err != nil { // until SIGTERM/SIGINT, then drains within shutdown.timeout
		log.Error("shutdown", "err", err)
		return 1
	}
	return 0
}
