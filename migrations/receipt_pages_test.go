package migrations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/migrations"
)

// Issue 16: migration 20261202330000 rebuilds SQLite's receipts without AUTOINCREMENT and
// receipt_batches WITHOUT ROWID, keeping every row (n included), key and index: the chain
// verifies, a receipt's proof holds, and new receipts go on numbering after the old ones,
// in both directions of the migration. On PostgreSQL it changes nothing.
func TestReceiptPagesMigrationKeepsChain(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		var mig migrate.Migration
		for _, m := range migrations.Migrations.Sorted() {
			if m.Name == "20261202330000" {
				mig = m
			}
		}
		require.NotNil(t, mig.Up, "the migration is registered")
		migrator := migrate.NewMigrator(d, migrations.Migrations)
		at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
		appendOne := func(i int) receipts.Receipt {
			var r receipts.Receipt
			require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) (err error) {
				r, err = receipts.Append(ctx, tx, "sp_pages", receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read",
					ObjectIDs: []string{"note_1"}, Detail: map[string]any{"i": i}}, at.Add(time.Duration(i)*time.Second))
				return err
			}))
			return r
		}
		type numbered struct {
			N  int64  `bun:"n"`
			ID string `bun:"id"`
		}
		rows := func() []numbered {
			var out []numbered
			require.NoError(t, d.NewSelect().Table("receipts").Column("n", "id").Order("n").Scan(ctx, &out))
			return out
		}
		schema := func(table string) string {
			if !db.IsSQLite(d) {
				return ""
			}
			var sql string
			require.NoError(t, d.NewRaw("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(ctx, &sql))
			return sql
		}
		check := func(count int64, autoincrement bool) {
			t.Helper()
			v, err := receipts.Verify(ctx, d, "sp_pages")
			require.NoError(t, err)
			require.Equal(t, receipts.Verification{OK: true, Count: count, Batches: count}, v)
			got := rows()
			require.Len(t, got, int(count))
			for i := 1; i < len(got); i++ {
				require.Less(t, got[i-1].N, got[i].N, "n in insertion order")
			}
			p, err := receipts.Prove(ctx, d, "sp_pages", got[0].ID)
			require.NoError(t, err)
			require.NoError(t, p.Verify())
			if db.IsSQLite(d) {
				require.Equal(t, autoincrement, strings.Contains(strings.ToUpper(schema("receipts")), "AUTOINCREMENT"), schema("receipts"))
				require.Equal(t, !autoincrement, strings.Contains(strings.ToUpper(schema("receipt_batches")), "WITHOUT ROWID"), schema("receipt_batches"))
			}
		}

		for i := range 3 {
			appendOne(i)
		}
		check(3, false)
		before := rows()

		require.NoError(t, mig.Down(ctx, migrator, &mig))
		require.Equal(t, before, rows(), "every row and its n kept")
		appendOne(3)
		check(4, true)

		require.NoError(t, mig.Up(ctx, migrator, &mig))
		appendOne(4)
		check(5, false)
		require.Equal(t, before, rows()[:3])
	})
}
