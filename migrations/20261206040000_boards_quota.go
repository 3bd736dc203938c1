package migrations

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// defBoardsSpace is the default of boards_per_space as of this migration
// (internal/quotas.Defaults must match).
const defBoardsSpace = 10000

// boardsQuotaTable counts the boards of each space (issue 31): a row of boards is one board
// instance (its type and keyed id), counted when inserted and uncounted when deleted (a
// subject erasure), by the same triggers as migration 20261204140000's tables.
func boardsQuotaTable() quotaTable {
	one := func(r, delta string) []quotaCount {
		return []quotaCount{{r, "boards_per_space", "''", delta, []string{"boards_per_space"}, defBoardsSpace}}
	}
	return quotaTable{"boards", []quotaEvent{{"INSERT", "", one("NEW", "1")}, {"DELETE", "", one("OLD", "-1")}}}
}

// The boards quota (issue 31 §5): boards_per_space in features.quotas, counted in quota_usage
// exactly like the other quotas; the boards already stored are counted here.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := execDDL(ctx, db, `INSERT INTO quota_usage (space_id, quota, scope_key, used)
SELECT space_id, 'boards_per_space', '', count(*) FROM boards GROUP BY space_id`); err != nil {
			return err
		}
		tables := []quotaTable{boardsQuotaTable()}
		stmts := sqliteQuotaTriggersOf(tables)
		if db.Dialect().Name() == dialect.PG {
			stmts = pgQuotaTriggersOf(tables)
		}
		for _, s := range stmts {
			if _, err := db.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("migrations: boards quota: %w\n%s", err, s)
			}
		}
		return nil
	}, func(ctx context.Context, db *bun.DB) error {
		drop := `DROP TRIGGER IF EXISTS boards_quota_insert;
DROP TRIGGER IF EXISTS boards_quota_delete`
		if db.Dialect().Name() == dialect.PG {
			drop = `DROP TRIGGER IF EXISTS quota ON boards;
DROP FUNCTION IF EXISTS boards_quota()`
		}
		return execDDL(ctx, db, drop+`;
DELETE FROM quota_usage WHERE quota = 'boards_per_space'`)
	})
}
