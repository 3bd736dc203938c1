package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Checkpoint retention (issue 32): the pruning of the receipt log's checkpoints finds the
// ones older than AGENTMEMORY_RECEIPT_CHECKPOINT_RETENTION by their signing time.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `CREATE INDEX receipt_checkpoints_at ON receipt_checkpoints (at)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP INDEX receipt_checkpoints_at`)
	})
}
