package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Sealed knowledge (issue 29 §1, ER-1, KN-3): a document's title and body, and its chunks'
// text and embeddings, are sealed under the document's own key ("doc_" + the document id in
// the key store), which deleting the document or erasing the subject it names destroys.
//   - knowledge_documents.sealed_key names that key ("" for a row written before this
//     migration, stored in clear until `agentmemory restore` seals it); sealed_title and
//     sealed_body hold the sealed title and body (the clear title and body columns are then
//     empty); title_hash is the keyed hash of the title, for the title filter of retrieval.
//   - knowledge_chunks.sealed_key, sealed_text and sealed_embedding likewise (heading and text
//     are then empty). The clear embedding column stays as the exact scan's derived vector
//     index, as the FTS entries and the sqlite-vec/pgvector tables are derived: the restore
//     procedure drops them for chunks whose key is gone and rebuilds them from what unseals.
//   - PostgreSQL's search column was generated from heading and text; with those sealed it
//     becomes a plain tsvector written at ingest (and by restore), and heading_search holds
//     the title's weighted tsvector the ranking used to compute from heading at query time.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := execDDL(ctx, db, `ALTER TABLE knowledge_documents ADD COLUMN sealed_key TEXT NOT NULL DEFAULT '';
ALTER TABLE knowledge_documents ADD COLUMN sealed_title {{blob}};
ALTER TABLE knowledge_documents ADD COLUMN sealed_body {{blob}};
ALTER TABLE knowledge_documents ADD COLUMN title_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE knowledge_chunks ADD COLUMN sealed_key TEXT NOT NULL DEFAULT '';
ALTER TABLE knowledge_chunks ADD COLUMN sealed_text {{blob}};
ALTER TABLE knowledge_chunks ADD COLUMN sealed_embedding {{blob}}`); err != nil {
			return err
		}
		if db.Dialect().Name() != dialect.PG {
			return nil
		}
		return execDDL(ctx, db, `DROP INDEX knowledge_chunks_search;
ALTER TABLE knowledge_chunks DROP COLUMN search;
ALTER TABLE knowledge_chunks ADD COLUMN search tsvector;
ALTER TABLE knowledge_chunks ADD COLUMN heading_search tsvector;
UPDATE knowledge_chunks SET search = to_tsvector('simple', heading || ' ' || text), heading_search = setweight(to_tsvector('simple', heading), 'A');
CREATE INDEX knowledge_chunks_search ON knowledge_chunks USING GIN (search)`)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			if err := execDDL(ctx, db, `DROP INDEX knowledge_chunks_search;
ALTER TABLE knowledge_chunks DROP COLUMN heading_search;
ALTER TABLE knowledge_chunks DROP COLUMN search;
ALTER TABLE knowledge_chunks ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('simple', heading || ' ' || text)) STORED;
CREATE INDEX knowledge_chunks_search ON knowledge_chunks USING GIN (search)`); err != nil {
				return err
			}
		}
		return execDDL(ctx, db, `ALTER TABLE knowledge_documents DROP COLUMN sealed_key;
ALTER TABLE knowledge_documents DROP COLUMN sealed_title;
ALTER TABLE knowledge_documents DROP COLUMN sealed_body;
ALTER TABLE knowledge_documents DROP COLUMN title_hash;
ALTER TABLE knowledge_chunks DROP COLUMN sealed_key;
ALTER TABLE knowledge_chunks DROP COLUMN sealed_text;
ALTER TABLE knowledge_chunks DROP COLUMN sealed_embedding`)
	})
}
