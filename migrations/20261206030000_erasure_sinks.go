package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Erasure follows the data out (issue 33): an erasure records the export feed's cursor once
// its steps committed (feed_cursor: every tombstone of the erasure sits at or before it; NULL
// until then) and, once every configured sink acknowledged that cursor, the sinks and their
// acknowledged cursors (sinks, JSON; empty until then) for its certificate.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE erasures ADD COLUMN feed_cursor BIGINT;
ALTER TABLE erasures ADD COLUMN sinks TEXT NOT NULL DEFAULT ''`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE erasures DROP COLUMN sinks;
ALTER TABLE erasures DROP COLUMN feed_cursor`)
	})
}
