package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Key purposes (issue 34, QT-2): api_keys.purposes is the JSON list of an agent key's
// purposes, set when the key is minted and never changed; '[]' for person keys and for keys
// minted before this column existed.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE api_keys ADD COLUMN purposes {{json}} NOT NULL DEFAULT '[]'`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE api_keys DROP COLUMN purposes`)
	})
}
