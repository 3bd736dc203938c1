package migrations

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// KnowledgeVectorTable is the name of the SQLite vector index of knowledge chunks whose
// embeddings have dims float32 components: "knowledge_vec_<dims>" (issue 18, Storage).
func KnowledgeVectorTable(dims int) string {
	return fmt.Sprintf("knowledge_vec_%d", dims)
}

// KnowledgeVectorDDL creates (if missing) the SQLite vector index for embeddings of dims
// components: a sqlite-vec vec0 table (modernc.org/sqlite/vec, loaded by internal/db on every
// connection) with one row per chunk: chunk_id (the chunk's id, its primary key), space_id
// and kb_id as partition keys (a query names both, so a k-nearest search only ever reads the
// vectors of one base of one space: the tenant filter is inside the search, MS-1),
// indexed_at (the document's indexing time in Unix milliseconds, a metadata column the
// search filters on for max_age) and embedding (float32, cosine distance). Vectors are
// stored in blocks of 256 per partition (chunk_size), so an empty base costs one block
// (256 × dims × 4 bytes). Migrations and internal/knowledge (when a new vector length first
// appears) both create the tables through this one statement.
func KnowledgeVectorDDL(dims int) string {
	return fmt.Sprintf(`CREATE VIRTUAL TABLE IF NOT EXISTS %s USING vec0(
	chunk_id TEXT PRIMARY KEY,
	space_id TEXT PARTITION KEY,
	kb_id TEXT PARTITION KEY,
	indexed_at INTEGER,
	embedding FLOAT[%d] distance_metric=cosine,
	chunk_size=256
)`, KnowledgeVectorTable(dims), dims)
}

// Knowledge vectors in sqlite-vec (issue 18, Storage). On SQLite every chunk's embedding is
// also a row of the vec0 table of its length (KnowledgeVectorDDL), kept in step with the
// chunk rows by internal/knowledge; this migration creates the tables for the lengths
// already stored and copies in the vectors of the chunks indexed before it. A vector with
// all components zero has no direction and is never indexed. PostgreSQL: nothing up (the
// pgvector tables of the same names are internal/knowledge's, created at startup when the
// server has the extension); down drops them too.
func init() {
	Migrations.MustRegister(BackfillKnowledgeVectors, func(ctx context.Context, db *bun.DB) error {
		// Down: the vector tables go (on PostgreSQL the pgvector tables internal/knowledge
		// creates, which reference knowledge_chunks and would keep it from being dropped).
		q := "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'knowledge_vec_%' AND sql LIKE 'CREATE VIRTUAL TABLE%'"
		if db.Dialect().Name() != dialect.SQLite {
			q = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename ~ '^knowledge_vec_[0-9]+$'"
		}
		var tables []string
		if err := db.NewRaw(q).Scan(ctx, &tables); err != nil {
			return err
		}
		for _, t := range tables {
			if _, err := db.ExecContext(ctx, "DROP TABLE "+t); err != nil {
				return err
			}
		}
		return nil
	})
}

// BackfillKnowledgeVectors puts the embedding of every stored knowledge chunk into SQLite's
// vector index (creating the table of each length) in one transaction, once: migration 20261202110000 runs it
// over the chunks indexed before sqlite-vec was used. All-zero vectors are skipped. On
// PostgreSQL it does nothing.
func BackfillKnowledgeVectors(ctx context.Context, db *bun.DB) error {
	if db.Dialect().Name() != dialect.SQLite {
		return nil
	}
	var rows []struct {
		ID        string     `bun:"id"`
		SpaceID   string     `bun:"space_id"`
		KBID      string     `bun:"kb_id"`
		Embedding []byte     `bun:"embedding"`
		IndexedAt *time.Time `bun:"indexed_at"`
	}
	if err := db.NewSelect().TableExpr("knowledge_chunks AS c").Join("JOIN knowledge_documents AS d ON d.id = c.document_id").
		ColumnExpr("c.id, c.space_id, c.kb_id, c.embedding, d.indexed_at").
		Where("c.embedding IS NOT NULL").OrderExpr("c.id").Scan(ctx, &rows); err != nil {
		return fmt.Errorf("migrations: knowledge vectors: %w", err)
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		created := map[int]bool{}
		for _, r := range rows {
			dims := len(r.Embedding) / 4
			if dims == 0 || len(r.Embedding)%4 != 0 || zeroVector(r.Embedding) {
				continue
			}
			if !created[dims] {
				if _, err := tx.ExecContext(ctx, KnowledgeVectorDDL(dims)); err != nil {
					return fmt.Errorf("migrations: knowledge vectors: %w", err)
				}
				created[dims] = true
			}
			var at int64
			if r.IndexedAt != nil {
				at = r.IndexedAt.UnixMilli()
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+KnowledgeVectorTable(dims)+" (chunk_id, space_id, kb_id, indexed_at, embedding) VALUES (?, ?, ?, ?, ?)",
				r.ID, r.SpaceID, r.KBID, at, r.Embedding); err != nil {
				return fmt.Errorf("migrations: knowledge vectors: %w", err)
			}
		}
		return nil
	})
}

// zeroVector reports whether every little-endian float32 of b is +0 or -0.
func zeroVector(b []byte) bool {
	for i := 0; i+4 <= len(b); i += 4 {
		if binary.LittleEndian.Uint32(b[i:])&0x7fffffff != 0 {
			return false
		}
	}
	return true
}
