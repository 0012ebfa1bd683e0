package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/config"
)

// serve runs the server until SIGTERM or SIGINT, then drains.
func serve(args []string) int { return runServe(args, os.Environ(), os.Stderr, nil) }

// runServe is serve with its environment, output and a started-hook
// injected (for tests).
func runServe(args, environ []string, stderr io.Writer, started func(*host.Server)) int {
	cfg, err := config.Load(args, environ, stderr)
	if errors.Is(err, config.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "coordhost:", err)
		return 2
	}
	log := host.NewLogger(cfg, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	srv, err := host.Start(ctx, host.Options{Config: cfg, Log: log, Coordinator: host.NewCoordinator})
	if err != nil {
		log.Error("coordhost failed to start", "err", err)
		return 1
	}
	if started != nil {
		started(srv)
	}
	<-ctx.Done()
	stop()
	dctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(dctx); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	return 0
}
