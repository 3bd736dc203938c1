package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Erasure rounds (issue 12, re-run on residue): round is the erasure's current round of
// steps (1, then up to compliance.MaxErasureRounds when the probe found something written for
// the subject meanwhile); keys_round is the last round whose destroyed keys were added to the
// certificate's items, so a retried key step counts a round's keys once.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := execDDL(ctx, db, `ALTER TABLE erasures ADD COLUMN round INTEGER NOT NULL DEFAULT 1`); err != nil {
			return err
		}
		return execDDL(ctx, db, `ALTER TABLE erasures ADD COLUMN keys_round INTEGER NOT NULL DEFAULT 0`)
	}, func(ctx context.Context, db *bun.DB) error {
		if err := execDDL(ctx, db, `ALTER TABLE erasures DROP COLUMN keys_round`); err != nil {
			return err
		}
		return execDDL(ctx, db, `ALTER TABLE erasures DROP COLUMN round`)
	})
}
