package app_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

// TestBuildWarnsOfAsyncCommit: on PostgreSQL whose sessions run with synchronous_commit off,
// Build logs one warning that acknowledged writes and receipts can be lost; with the server's
// default (on) it logs none, and SQLite never does.
func TestBuildWarnsOfAsyncCommit(t *testing.T) {
	build := func(t *testing.T, engine, params string) string {
		ctx := context.Background()
		d, err := db.Open(ctx, dbtest.URL(t, engine)+params, dbtest.Shipped())
		require.NoError(t, err)
		t.Cleanup(func() { db.Close(d) })
		_, err = db.Migrate(ctx, d)
		require.NoError(t, err)
		cfg, err := config.Load(func(string) string { return "" })
		require.NoError(t, err)
		cfg.Secret, cfg.DataDir = "app-test-secret-0123456789abcdef0123", t.TempDir()
		var logs bytes.Buffer
		a, err := app.Build(ctx, cfg, app.Overrides{DB: d, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, err)
		t.Cleanup(a.Close)
		return logs.String()
	}
	const warning = "synchronous_commit is off"
	t.Run("sqlite", func(t *testing.T) {
		require.NotContains(t, build(t, "sqlite", ""), warning)
	})
	t.Run("postgres", func(t *testing.T) {
		require.NotContains(t, build(t, "postgres", ""), warning)
		logs := build(t, "postgres", "&synchronous_commit=off")
		require.Contains(t, logs, "level=WARN")
		require.Contains(t, logs, warning)
	})
}
