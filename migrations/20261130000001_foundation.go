package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
CREATE TABLE spaces (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	created_at {{ts}} NOT NULL
);
CREATE TABLE api_keys (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	hash TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	agent TEXT NOT NULL DEFAULT '',
	vendor TEXT NOT NULL DEFAULT '',
	name TEXT NOT NULL DEFAULT '',
	scopes {{json}} NOT NULL,
	roles {{json}} NOT NULL,
	created_by TEXT NOT NULL DEFAULT '',
	created_at {{ts}} NOT NULL,
	revoked_at {{ts}}
);
CREATE INDEX api_keys_space ON api_keys (space_id);
CREATE TABLE documents (
	space_id TEXT NOT NULL REFERENCES spaces(id),
	name TEXT NOT NULL,
	body {{json}} NOT NULL,
	version BIGINT NOT NULL,
	updated_by TEXT NOT NULL,
	updated_at {{ts}} NOT NULL,
	PRIMARY KEY (space_id, name)
);
CREATE TABLE profiles (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	sealed {{blob}} NOT NULL,
	created_at {{ts}} NOT NULL,
	updated_at {{ts}} NOT NULL
);
CREATE INDEX profiles_space ON profiles (space_id);
CREATE TABLE profile_handles (
	space_id TEXT NOT NULL,
	handle_hash TEXT NOT NULL,
	profile_id TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
	PRIMARY KEY (space_id, handle_hash)
);
CREATE INDEX profile_handles_profile ON profile_handles (profile_id);
CREATE TABLE agent_states (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	scope_hash TEXT NOT NULL,
	scope_kind TEXT NOT NULL,
	agent TEXT NOT NULL,
	subject_hash TEXT NOT NULL DEFAULT '',
	body {{blob}} NOT NULL,
	field_times {{json}} NOT NULL,
	version BIGINT NOT NULL,
	bytes INTEGER NOT NULL,
	key_id TEXT NOT NULL,
	agent_version TEXT NOT NULL DEFAULT '',
	created_at {{ts}} NOT NULL,
	updated_at {{ts}} NOT NULL,
	expires_at {{ts}} NOT NULL,
	UNIQUE (space_id, scope_hash, agent)
);
CREATE INDEX agent_states_subject ON agent_states (space_id, subject_hash);
CREATE INDEX agent_states_expires ON agent_states (expires_at);
CREATE TABLE receipts (
	space_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	id TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	action TEXT NOT NULL,
	actor_key_id TEXT NOT NULL,
	object_ids {{json}} NOT NULL,
	detail {{json}} NOT NULL,
	at {{ts}} NOT NULL,
	prev_hash TEXT NOT NULL,
	hash TEXT NOT NULL,
	PRIMARY KEY (space_id, seq)
);
CREATE TABLE receipt_heads (
	space_id TEXT PRIMARY KEY,
	seq BIGINT NOT NULL,
	hash TEXT NOT NULL
);
CREATE TABLE outbox (
	seq {{serial}},
	id TEXT NOT NULL UNIQUE,
	space_id TEXT NOT NULL,
	type TEXT NOT NULL,
	payload {{json}} NOT NULL,
	created_at {{ts}} NOT NULL,
	sent_at {{ts}},
	attempts INTEGER NOT NULL DEFAULT 0,
	last_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX outbox_pending ON outbox (sent_at, seq)
`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
DROP TABLE outbox;
DROP TABLE receipt_heads;
DROP TABLE receipts;
DROP TABLE agent_states;
DROP TABLE profile_handles;
DROP TABLE profiles;
DROP TABLE documents;
DROP TABLE api_keys;
DROP TABLE spaces
`)
	})
}
