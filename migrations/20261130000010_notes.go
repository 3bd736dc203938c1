package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Agent memory (AM-1..AM-14): notes (one row per version), their tags, proposals, the
// idempotency record of note writes, and the full-text index: an FTS5 table on SQLite, a
// generated tsvector column with a GIN index on PostgreSQL.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := execDDL(ctx, db, `
CREATE TABLE notes (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	lineage_id TEXT NOT NULL,
	version INTEGER NOT NULL,
	supersedes_note_id TEXT NOT NULL DEFAULT '',
	source_id TEXT NOT NULL,
	vendor TEXT NOT NULL,
	kind TEXT NOT NULL,
	title TEXT NOT NULL,
	body TEXT NOT NULL,
	tags {{json}} NOT NULL,
	tags_text TEXT NOT NULL,
	visibility TEXT NOT NULL,
	evidence_kind TEXT NOT NULL DEFAULT '',
	evidence_id TEXT NOT NULL DEFAULT '',
	origin TEXT NOT NULL,
	status TEXT NOT NULL,
	valid_until {{ts}},
	proposal_id TEXT NOT NULL DEFAULT '',
	actor_key_id TEXT NOT NULL,
	actor_kind TEXT NOT NULL,
	agent_version TEXT NOT NULL DEFAULT '',
	created_at {{ts}} NOT NULL,
	updated_at {{ts}} NOT NULL,
	retired_at {{ts}}
);
CREATE INDEX notes_space_status ON notes (space_id, status);
CREATE INDEX notes_source_created ON notes (space_id, source_id, created_at);
CREATE UNIQUE INDEX notes_lineage_version ON notes (lineage_id, version);
CREATE TABLE note_tags (
	note_id TEXT NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
	tag TEXT NOT NULL,
	space_id TEXT NOT NULL,
	PRIMARY KEY (note_id, tag)
);
CREATE INDEX note_tags_tag ON note_tags (space_id, tag);
CREATE TABLE note_proposals (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	source_id TEXT NOT NULL,
	vendor TEXT NOT NULL,
	origin TEXT NOT NULL,
	status TEXT NOT NULL,
	reason TEXT NOT NULL DEFAULT '',
	kind TEXT NOT NULL DEFAULT '',
	title TEXT NOT NULL DEFAULT '',
	body TEXT NOT NULL DEFAULT '',
	tags {{json}} NOT NULL,
	visibility TEXT NOT NULL DEFAULT '',
	evidence_kind TEXT NOT NULL DEFAULT '',
	evidence_id TEXT NOT NULL DEFAULT '',
	valid_until {{ts}},
	supersedes_note_id TEXT NOT NULL DEFAULT '',
	note_id TEXT NOT NULL DEFAULT '',
	actor_key_id TEXT NOT NULL,
	actor_kind TEXT NOT NULL,
	agent_version TEXT NOT NULL DEFAULT '',
	decided_by TEXT NOT NULL DEFAULT '',
	decided_at {{ts}},
	created_at {{ts}} NOT NULL,
	updated_at {{ts}} NOT NULL
);
CREATE INDEX note_proposals_status ON note_proposals (space_id, status, created_at);
CREATE INDEX note_proposals_source_created ON note_proposals (space_id, source_id, created_at);
CREATE TABLE note_requests (
	space_id TEXT NOT NULL,
	key_id TEXT NOT NULL,
	idem_key TEXT NOT NULL,
	body_hash TEXT NOT NULL,
	status INTEGER NOT NULL,
	response {{json}} NOT NULL,
	created_at {{ts}} NOT NULL,
	PRIMARY KEY (space_id, key_id, idem_key)
)
`); err != nil {
			return err
		}
		if db.Dialect().Name() == dialect.PG {
			return execDDL(ctx, db, `
ALTER TABLE notes ADD COLUMN search tsvector GENERATED ALWAYS AS
	(to_tsvector('simple', title || ' ' || body || ' ' || tags_text)) STORED;
CREATE INDEX notes_search ON notes USING GIN (search)
`)
		}
		return execDDL(ctx, db, `
CREATE VIRTUAL TABLE notes_fts USING fts5(note_id UNINDEXED, title, body, tags, tokenize = 'unicode61 remove_diacritics 2')
`)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.PG {
			if err := execDDL(ctx, db, `DROP TABLE notes_fts`); err != nil {
				return err
			}
		}
		return execDDL(ctx, db, `
DROP TABLE note_requests;
DROP TABLE note_proposals;
DROP TABLE note_tags;
DROP TABLE notes
`)
	})
}
