package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Operator keys (issue 34 §3): a deployment operator's keys, which belong to no space and
// may only create spaces (POST /v1/spaces); only the SHA-256 of the secret is kept, and a
// label the operator chose.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `CREATE TABLE operator_keys (
	id TEXT PRIMARY KEY,
	hash TEXT NOT NULL UNIQUE,
	label TEXT NOT NULL,
	created_at {{ts}} NOT NULL,
	revoked_at {{ts}}
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE operator_keys`)
	})
}
