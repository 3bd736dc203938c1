package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Console sessions (issue 15, CON-1): one row per signed-in person. id is the hex SHA-256 of
// the session token (the token itself lives only in the browser's cookie); person_key is the
// id of the person key that signed in, checked on every request so a revoked key ends the
// session; seen_at drives the idle expiry and expires_at is the absolute one.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `CREATE TABLE console_sessions (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	person_key TEXT NOT NULL,
	created_at {{ts}} NOT NULL,
	seen_at {{ts}} NOT NULL,
	expires_at {{ts}} NOT NULL
);
CREATE INDEX console_sessions_key ON console_sessions (person_key)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE console_sessions`)
	})
}
