package host

import (
	"io"
	"log/slog"

	"github.com/coordhost/coordhost/host/config"
)

// NewLogger returns the structured logger cfg asks for, writing to w.
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	o := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}
