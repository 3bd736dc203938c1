package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Console forms (issue 27): console_form_uses holds one row per one-time form token a
// session has spent (id is the hex SHA-256 of the token; the token itself is only in the
// page), so a resubmitted form (a reload after POST, a double click, back and resubmit) does
// nothing twice; rows die with their session's lifetime. console_sessions.flash holds the
// session's one pending message that must not go in a URL (a freshly minted key), sealed
// under a key derived from the session token, which the database never holds: shown on the
// next GET of its screen, then emptied.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `CREATE TABLE console_form_uses (
	id TEXT PRIMARY KEY,
	session_id TEXT NOT NULL,
	used_at {{ts}} NOT NULL
);
CREATE INDEX console_form_uses_session ON console_form_uses (session_id);
ALTER TABLE console_sessions ADD COLUMN flash TEXT NOT NULL DEFAULT ''`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE console_form_uses;
ALTER TABLE console_sessions DROP COLUMN flash`)
	})
}
