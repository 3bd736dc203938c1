package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Space configuration revision (issue 16, "key and documents read on every request"):
// spaces.config_rev is bumped in the same transaction as every document write, key mint and
// key revocation, so an API replica may keep a key and its space's documents in memory and
// still be exact: the working-memory statements check the revision they assumed.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE spaces ADD COLUMN config_rev BIGINT NOT NULL DEFAULT 0`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE spaces DROP COLUMN config_rev`)
	})
}
