package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Erasure key intent (issue 12 §1, GOV-2, MS-4): the subject key ids an erasure is about to
// destroy, recorded before any is destroyed, so a retried step never loses the count of keys
// an earlier attempt already destroyed. Empty until the key step first runs.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE erasures ADD COLUMN key_ids TEXT NOT NULL DEFAULT ''`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE erasures DROP COLUMN key_ids`)
	})
}
