package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Erasure stores (issue 29 §4): erasures.stores is the JSON list of the store names, in
// order, that the erasure's workflow erases one by one (the registry's order when the
// erasure was resolved). ” for an erasure resolved before this column existed (its workflow
// runs the fixed steps of its version).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE erasures ADD COLUMN stores {{json}} NOT NULL DEFAULT ''`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE erasures DROP COLUMN stores`)
	})
}
