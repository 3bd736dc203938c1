package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Turns (masked, sealed per subject when linked) and identity links (AM-9).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
CREATE TABLE turns (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	scope_kind TEXT NOT NULL,
	scope_hash TEXT NOT NULL,
	speaker TEXT NOT NULL,
	text {{blob}} NOT NULL,
	profile_id TEXT NOT NULL DEFAULT '',
	key_id TEXT NOT NULL,
	at {{ts}} NOT NULL,
	created_at {{ts}} NOT NULL
);
CREATE INDEX turns_scope ON turns (space_id, scope_hash, at);
CREATE INDEX turns_profile ON turns (profile_id);
CREATE INDEX turns_at ON turns (at);
CREATE TABLE identity_links (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	scope_kind TEXT NOT NULL,
	scope_hash TEXT NOT NULL,
	handle_hash TEXT NOT NULL,
	profile_id TEXT NOT NULL DEFAULT '',
	status TEXT NOT NULL,
	key_id TEXT NOT NULL,
	created_at {{ts}} NOT NULL,
	updated_at {{ts}} NOT NULL,
	UNIQUE (space_id, scope_hash, handle_hash)
);
CREATE INDEX identity_links_profile ON identity_links (profile_id);
CREATE INDEX identity_links_handle ON identity_links (space_id, handle_hash)
`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
DROP TABLE identity_links;
DROP TABLE turns
`)
	})
}
