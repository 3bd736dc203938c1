package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Turn sealing keys (issue 29 §1, ER-1): turns.sealed_key names the key-store entry a turn of
// a conversation that is not linked to a profile is sealed under (its conversation key,
// "cv_" + the keyed scope hash); empty for a turn sealed under its profile's key (profile_id
// set) or, for a turn written before this column existed, stored in clear until it is
// re-sealed (turns.Service.SealLegacy, run by `agentmemory restore`).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE turns ADD COLUMN sealed_key TEXT NOT NULL DEFAULT ''`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE turns DROP COLUMN sealed_key`)
	})
}
