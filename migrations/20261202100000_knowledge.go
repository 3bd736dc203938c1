package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Knowledge (issue 18, KN-1..KN-4): knowledge bases per space, their documents and chunks.
// A chunk keeps its text, byte offsets and its embedding as little-endian float32 bytes
// (exact-scan cosine in Go on both databases when this was written; SQLite's sqlite-vec
// index came with migration 20261202110000).
// Full text: the FTS5 table knowledge_chunks_fts on SQLite, the generated tsvector column
// knowledge_chunks.search on PostgreSQL ('simple': no stemming, any language).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := execDDL(ctx, db, `
CREATE TABLE knowledge_bases (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL,
	name TEXT NOT NULL,
	settings {{json}} NOT NULL,
	created_by TEXT NOT NULL,
	created_at {{ts}} NOT NULL,
	UNIQUE (space_id, name)
);
CREATE TABLE knowledge_documents (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL,
	kb_id TEXT NOT NULL,
	source_uri TEXT NOT NULL,
	title TEXT NOT NULL,
	version_label TEXT NOT NULL,
	format TEXT NOT NULL,
	content_hash TEXT NOT NULL,
	body TEXT NOT NULL,
	status TEXT NOT NULL,
	reason TEXT NOT NULL,
	kinds {{json}} NOT NULL,
	masked BOOLEAN NOT NULL,
	chunks INTEGER NOT NULL,
	embed_model TEXT NOT NULL,
	dims INTEGER NOT NULL,
	superseded_by TEXT NOT NULL,
	created_by TEXT NOT NULL,
	created_at {{ts}} NOT NULL,
	updated_at {{ts}} NOT NULL,
	indexed_at {{ts}}
);
CREATE INDEX knowledge_documents_source ON knowledge_documents (kb_id, source_uri, status);
CREATE TABLE knowledge_chunks (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL,
	kb_id TEXT NOT NULL,
	document_id TEXT NOT NULL,
	ord INTEGER NOT NULL,
	heading TEXT NOT NULL,
	start_byte INTEGER NOT NULL,
	end_byte INTEGER NOT NULL,
	tokens INTEGER NOT NULL,
	text TEXT NOT NULL,
	embedding {{blob}},
	created_at {{ts}} NOT NULL
);
CREATE INDEX knowledge_chunks_kb ON knowledge_chunks (space_id, kb_id);
CREATE INDEX knowledge_chunks_document ON knowledge_chunks (document_id)
`); err != nil {
			return err
		}
		if db.Dialect().Name() == dialect.PG {
			return execDDL(ctx, db, `
ALTER TABLE knowledge_chunks ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('simple', heading || ' ' || text)) STORED;
CREATE INDEX knowledge_chunks_search ON knowledge_chunks USING GIN (search)
`)
		}
		return execDDL(ctx, db, `
CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5(chunk_id UNINDEXED, heading, text, tokenize = 'unicode61 remove_diacritics 2')
`)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.PG {
			if err := execDDL(ctx, db, `DROP TABLE knowledge_chunks_fts`); err != nil {
				return err
			}
		}
		return execDDL(ctx, db, `
DROP TABLE knowledge_chunks;
DROP TABLE knowledge_documents;
DROP TABLE knowledge_bases
`)
	})
}
