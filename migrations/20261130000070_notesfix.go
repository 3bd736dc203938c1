package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Idempotency-Key values are stored as keyed hashes from now on (an agent may put anything in
// the header, an e-mail address included). The migration cannot compute the hashes (it does
// not hold the server secret), so it forgets the remembered answers stored with the value in
// clear: a retry of a write made before the upgrade is then treated as a new write.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DELETE FROM note_requests`)
	}, func(ctx context.Context, db *bun.DB) error {
		return nil
	})
}
