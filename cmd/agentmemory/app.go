package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/logs"
)

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	return logs.New(cfg.LogFormat, cfg.LogLevel, w)
}

// openApp builds the service graph of cfg through the one composition root (app.Build):
// serve and worker (generateSecret false) need AGENTMEMORY_SECRET; dev keeps a generated
// secret and signing key in the data dir.
func openApp(ctx context.Context, cfg config.Config, log *slog.Logger, generateSecret bool) (*app.App, error) {
	return app.Build(ctx, cfg, app.Overrides{Logger: log, GenerateSecret: generateSecret})
}
