package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Key last use (issue 27, GET /v1/keys): api_keys.last_used_at is when the key last
// authenticated an API request, to the minute (auth.Usage writes it at most once a minute per
// key and replica, never on the request's own path). NULL: never used since this column exists.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE api_keys ADD COLUMN last_used_at {{ts}}`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE api_keys DROP COLUMN last_used_at`)
	})
}
