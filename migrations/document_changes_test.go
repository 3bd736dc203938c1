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

// Issue 15: migration 20261202000100 goes down and up on both engines; a space that existed
// before it keeps direct PUT (spaces.direct_put true), and a space created after it has the
// default of its creation (off unless asked).
func TestDocumentChangesMigration(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		var mig migrate.Migration
		for _, m := range migrations.Migrations.Sorted() {
			if m.Name == "20261202000100" {
				mig = m
			}
		}
		require.NotNil(t, mig.Up, "the migration is registered")
		before, _, err := spaces.Create(ctx, db, "before", time.Now())
		require.NoError(t, err)
		migrator := migrate.NewMigrator(db, migrations.Migrations)
		require.NoError(t, mig.Down(ctx, migrator, &mig))
		require.NoError(t, mig.Up(ctx, migrator, &mig))

		after, _, err := spaces.Create(ctx, db, "after", time.Now())
		require.NoError(t, err)
		asked, _, err := spaces.CreateWith(ctx, db, "asked", time.Now(), spaces.CreateOptions{DirectPut: true})
		require.NoError(t, err)
		for id, want := range map[string]bool{before: true, after: false, asked: true} {
			var sp models.Space
			require.NoError(t, db.NewSelect().Model(&sp).Where("id = ?", id).Scan(ctx))
			require.Equal(t, want, sp.DirectPut, sp.Name)
		}
		n, err := db.NewSelect().Model((*models.DocumentChange)(nil)).Count(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
	})
}
