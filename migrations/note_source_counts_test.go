package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/migrations"
	"github.com/agentmemory/agentmemory/models"
)

// Issue 16: migration 20261202320000 counts each source's active notes stored before it (retired
// versions not, expired ones too: they stay active until retired), per space and source.
func TestNoteSourceCountsBackfill(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		var mig migrate.Migration
		for _, m := range migrations.Migrations.Sorted() {
			if m.Name == "20261202320000" {
				mig = m
			}
		}
		require.NotNil(t, mig.Up, "the migration is registered")
		migrator := migrate.NewMigrator(db, migrations.Migrations)
		require.NoError(t, mig.Down(ctx, migrator, &mig))

		now := time.Now().UTC().Truncate(time.Microsecond)
		past := now.Add(-time.Hour)
		spaceID, _, err := spaces.Create(ctx, db, "counts", now)
		require.NoError(t, err)
		rows := []struct {
			id, source, status string
			until              *time.Time
		}{
			{"note_a1", "shop-bot", "active", nil},
			{"note_a2", "shop-bot", "active", &past},
			{"note_a3", "shop-bot", "retired", nil},
			{"note_b1", "help-bot", "active", nil},
			{"note_c1", "old-bot", "retired", nil},
		}
		for _, r := range rows {
			_, err := db.NewInsert().Model(&models.Note{ID: r.id, SpaceID: spaceID, LineageID: r.id, Version: 1, SourceID: r.source,
				Vendor: "acme", Kind: "procedure", Title: r.id, Body: "Body.", Tags: "[]", Visibility: "source", Origin: "agent",
				Status: r.status, ValidUntil: r.until, ActorKind: "agent", CreatedAt: now, UpdatedAt: now}).Exec(ctx)
			require.NoError(t, err)
		}
		require.NoError(t, mig.Up(ctx, migrator, &mig))

		var got []struct {
			SourceID string `bun:"source_id"`
			Active   int    `bun:"active"`
		}
		require.NoError(t, db.NewRaw("SELECT source_id, active FROM note_source_counts WHERE space_id = ? ORDER BY source_id", spaceID).Scan(ctx, &got))
		require.Equal(t, []struct {
			SourceID string `bun:"source_id"`
			Active   int    `bun:"active"`
		}{{"help-bot", 1}, {"shop-bot", 2}}, got)
	})
}
