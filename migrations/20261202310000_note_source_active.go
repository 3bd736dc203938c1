package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Active notes per source (issue 16, note write p99): the cap check of every note write counts
// the source's active, unexpired notes. With only (space_id, source_id, created_at) to go by it
// read every note the source ever had, retired ones too, row by row: a note write's cost grew
// with the source's history (65% of the server's CPU at 4,000 notes on SQLite). This partial
// index holds only active notes, with status and valid_until, so the count reads the index
// alone (a covering index on SQLite, an index-only scan on PostgreSQL).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `CREATE INDEX notes_source_active ON notes (space_id, source_id, status, valid_until) WHERE status = 'active'`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP INDEX notes_source_active`)
	})
}
