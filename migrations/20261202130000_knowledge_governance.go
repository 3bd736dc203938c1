package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Knowledge governance (issue 18, KN-1, KN-3, MS-2): the read grants of each base
// (knowledge_readers: one row per grant, kind "space" with an empty name, or "agent" / "vendor"
// with the agent's or vendor's name) and the subject a document is about under the ingest
// policy allow_with_subject (subject_hash: the keyed hash of the subject's canonical handle,
// empty for every other document), kept on the document and on each of its chunks so that an
// erasure and its probe find them by the hash alone. Bases created before this migration were
// readable by every knowledge:read key of their space: each gets an explicit "space" grant, so
// nothing changes for them.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
CREATE TABLE knowledge_readers (
	space_id TEXT NOT NULL,
	kb_id TEXT NOT NULL,
	kind TEXT NOT NULL,
	name TEXT NOT NULL,
	PRIMARY KEY (kb_id, kind, name)
);
CREATE INDEX knowledge_readers_space ON knowledge_readers (space_id, kind, name);
INSERT INTO knowledge_readers (space_id, kb_id, kind, name) SELECT space_id, id, 'space', '' FROM knowledge_bases;
ALTER TABLE knowledge_documents ADD COLUMN subject_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE knowledge_chunks ADD COLUMN subject_hash TEXT NOT NULL DEFAULT '';
CREATE INDEX knowledge_documents_subject ON knowledge_documents (space_id, subject_hash);
CREATE INDEX knowledge_chunks_subject ON knowledge_chunks (space_id, subject_hash)
`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
DROP INDEX knowledge_chunks_subject;
DROP INDEX knowledge_documents_subject;
ALTER TABLE knowledge_chunks DROP COLUMN subject_hash;
ALTER TABLE knowledge_documents DROP COLUMN subject_hash;
DROP TABLE knowledge_readers
`)
	})
}
