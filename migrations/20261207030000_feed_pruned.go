package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Feed retention (issue 33): feed_heads.pruned is the last cursor of the space's feed whose
// change records were pruned (0: none). Every position at or below it is gone; a reader
// whose cursor is below it is answered cursor_expired with it as the oldest cursor.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE feed_heads ADD COLUMN pruned BIGINT NOT NULL DEFAULT 0`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE feed_heads DROP COLUMN pruned`)
	})
}
