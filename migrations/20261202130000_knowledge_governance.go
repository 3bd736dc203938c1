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
		if err := execDDL(ctx, db, `
CREATE TABLE knowledge_readers (
	space_id TEXT NOT NULL,
	kb_id TEXT NOT NULL,
	kind TEXT NOT NULL,
	name TEXT NOT NULL,
	PRIMARY KEY (kb_id, kind, name)
);
CREATE INDEX knowledge_readers_space ON knowledge_readers (space_id, kind, name);
ALTER TABLE knowledge_documents ADD COLUMN subject_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE knowledge_chunks ADD COLUMN subject_hash TEXT NOT NULL DEFAULT '';
CREATE INDEX knowledge_documents_subject ON knowledge_documents (space_id, subject_hash);
CREATE INDEX knowledge_chunks_subject ON knowledge_chunks (space_id, subject_hash)
`); err != nil {
			return err
		}
		return BackfillKnowledgeReaders(ctx, db)
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

// BackfillKnowledgeReaders gives every base without any read grant an explicit "space" grant
// (what bases created before grants existed allowed); bases with a grant are left alone, so
// running it twice changes nothing.
func BackfillKnowledgeReaders(ctx context.Context, db bun.IDB) error {
	_, err := db.ExecContext(ctx, `INSERT INTO knowledge_readers (space_id, kb_id, kind, name)
SELECT b.space_id, b.id, 'space', '' FROM knowledge_bases AS b
WHERE NOT EXISTS (SELECT 1 FROM knowledge_readers AS r WHERE r.kb_id = b.id)`)
	return err
}
