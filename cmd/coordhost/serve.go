package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/config"
)

// serve runs the server until SIGTERM or SIGINT, then drains.
func serve(args []string) int {
	cfg, err := config.Load(args, os.Environ(), os.Stderr)
	if errors.Is(err, config.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "coordhost:", err)
		return 2
	}
	log := host.NewLogger(cfg, os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	srv, err := host.Start(ctx, host.Options{Config: cfg, Log: log})
	if err != nil {
		log.Error("coordhost failed to start", "err", err)
		return 1
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
