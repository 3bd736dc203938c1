package knowledge

import (
	"context"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/models"
)

// Item kinds of the knowledge store in erasure reaches, probes and certificates.
const (
	KindDocument = "knowledge_document"     // a document row (title, content hash, subject hash)
	KindChunk    = "knowledge_chunk"        // a chunk row (text, offsets)
	KindVector   = "knowledge_vector"       // a chunk's stored vector
	KindFullText = "knowledge_fulltext"     // a chunk's full-text entry
	KindKey      = "knowledge_document_key" // a document's data key (DocumentKeyID), destroyed
)

// Eraser is the knowledge store's eraser (issue 18, KN-3, GOV-2): a subject erasure deletes
// every document of the space whose subject hash is one of the subject's handle hashes
// (allow_with_subject; every version, superseded and deleted ones included) with its chunks:
// their rows, vectors and full-text entries, and finally the document rows themselves (a
// title may name the subject). A conversation erasure reaches no document. Residue probes
// the rows, the vectors and the full-text index apart, so an index left behind by a
// deletion fails the erasure instead of passing unseen. Every document it deletes (the
// subject's, and those the content probe ties to her by a handle) loses its data key too,
// so a backup's copies of their titles, bodies, chunk texts and embeddings no longer open,
// and the restore procedure drops them (issue 29 §1). S is the store (its key store).
type Eraser struct{ S *Service }

// Name is "knowledge".
func (Eraser) Name() string { return "knowledge" }

// Covers lists the subject hash of documents and chunks, the documents' content hash (a
// hash of the bytes the subject's document held), the sealed columns and the title hash, and,
// on SQLite, the chunks' full-text index.
func (Eraser) Covers() []erasure.Column {
	return []erasure.Column{
		{Table: "knowledge_documents", Column: "subject_hash"}, {Table: "knowledge_documents", Column: "content_hash"},
		{Table: "knowledge_chunks", Column: "subject_hash"},
		// The sealed columns (issue 29 §1): the rows go, and the document keys they open with
		// are destroyed.
		{Table: "knowledge_documents", Column: "sealed_key"}, {Table: "knowledge_documents", Column: "sealed_title"},
		{Table: "knowledge_documents", Column: "sealed_body"}, {Table: "knowledge_documents", Column: "title_hash"},
		{Table: "knowledge_chunks", Column: "sealed_key"}, {Table: "knowledge_chunks", Column: "sealed_text"},
		{Table: "knowledge_chunks", Column: "sealed_embedding"},
		// SQLite's full-text index of the chunks (FTS5; PostgreSQL's is a column of the row).
		{Table: "knowledge_chunks_fts", Column: "chunk_id"},
	}
}

// Backups is erasure.Shredded for a subject: every document (any ingest policy,
// allow_with_subject included) and its chunks' text and embeddings are sealed under the
// document's key, which the erasure destroys, and their derived rows (full-text entries, the
// vector index) are dropped and rebuilt from what still unseals by `agentmemory restore`
// (docs/compliance.md: rows stored before sealing existed are sealed by that procedure). A
// conversation erasure reaches no document (HoldsNone).
func (Eraser) Backups(t erasure.Target) string {
	if t.Kind != erasure.Subject {
		return erasure.HoldsNone
	}
	return erasure.Shredded
}

// Export gives the zero Export: documents naming a subject are not part of the subject's
// data package (unchanged by issue 29 §4, which only restructured the erasure path).
func (Eraser) Export(context.Context, bun.IDB, erasure.Target) (erasure.Export, error) {
	return erasure.Export{}, nil
}

// EraseSubject deletes, inside tx, the subject's documents and chunks (vector-table rows,
// sqlite-vec's or pgvector's, and full-text entries, rows with their vectors, then documents)
// and destroys the documents' data keys, and returns their ids (KindKey for the keys).
func (e Eraser) EraseSubject(ctx context.Context, tx bun.Tx, t erasure.Target) (erasure.Reach, error) {
	out := erasure.Reach{}
	if t.Kind != erasure.Subject || len(t.HandleHashes) == 0 {
		return out, nil
	}
	docs, chunks, err := subjectRows(ctx, tx, t)
	if err != nil {
		return nil, err
	}
	return e.erase(ctx, tx, t.SpaceID, docs, chunks)
}

// erase deletes the rows named (eraseRows), then destroys the documents' keys (last, inside
// tx: a failed commit leaves rows that no longer open, which a retried erasure deletes).
func (e Eraser) erase(ctx context.Context, tx bun.Tx, spaceID string, docs, chunks []string) (erasure.Reach, error) {
	out, err := eraseRows(ctx, tx, spaceID, docs, chunks)
	if err != nil {
		return nil, err
	}
	keys, err := e.S.destroyKeys(ctx, docs)
	if err != nil {
		return nil, err
	}
	out.Add(KindKey, keys...)
	return out, nil
}

// eraseRows deletes, inside tx, the chunks (vector-table rows, full-text entries, rows with
// their vectors) and then the documents named, and returns their ids.
func eraseRows(ctx context.Context, tx bun.Tx, spaceID string, docs, chunks []string) (erasure.Reach, error) {
	out := erasure.Reach{}
	if len(chunks) > 0 {
		tables, err := vectorTables(ctx, tx)
		if err != nil {
			return nil, err
		}
		if err := unindexChunkVectors(ctx, tx, tables, chunks); err != nil {
			return nil, err
		}
		if db.IsSQLite(tx) {
			if _, err := tx.ExecContext(ctx, "DELETE FROM knowledge_chunks_fts WHERE chunk_id IN (?)", bun.In(chunks)); err != nil {
				return nil, fmt.Errorf("knowledge: erase full text: %w", err)
			}
		}
		if _, err := tx.NewDelete().Model((*models.KnowledgeChunk)(nil)).Where("space_id = ? AND id IN (?)", spaceID, bun.In(chunks)).Exec(ctx); err != nil {
			return nil, fmt.Errorf("knowledge: erase chunks: %w", err)
		}
	}
	if len(docs) > 0 {
		if _, err := tx.NewDelete().Model((*models.KnowledgeDocument)(nil)).Where("space_id = ? AND id IN (?)", spaceID, bun.In(docs)).Exec(ctx); err != nil {
			return nil, fmt.Errorf("knowledge: erase documents: %w", err)
		}
	}
	out.Add(KindDocument, docs...)
	out.Add(KindChunk, chunks...)
	return out, nil
}

// Residue finds, read only, what of t the knowledge store still holds: documents and chunk
// rows by subject hash, stored vectors of those chunks (vectorResidue), and full-text entries
// of those chunks or of no chunk at all (fullTextResidue).
func (Eraser) Residue(ctx context.Context, idb bun.IDB, t erasure.Target) (erasure.Reach, error) {
	out := erasure.Reach{}
	if t.Kind != erasure.Subject || len(t.HandleHashes) == 0 {
		return out, nil
	}
	docs, chunks, err := subjectRows(ctx, idb, t)
	if err != nil {
		return nil, err
	}
	out.Add(KindDocument, docs...)
	out.Add(KindChunk, chunks...)
	vecs, err := vectorResidue(ctx, idb, t, chunks)
	if err != nil {
		return nil, err
	}
	out.Add(KindVector, vecs...)
	fts, err := fullTextResidue(ctx, idb, t, chunks)
	if err != nil {
		return nil, err
	}
	out.Add(KindFullText, fts...)
	return out, nil
}

// subjectRows returns the ids of t's documents (by subject hash) and of their chunks (by the
// chunks' own subject hash or their document), sorted.
func subjectRows(ctx context.Context, idb bun.IDB, t erasure.Target) (docs, chunks []string, err error) {
	if err := idb.NewSelect().Model((*models.KnowledgeDocument)(nil)).Column("id").
		Where("space_id = ? AND subject_hash IN (?)", t.SpaceID, bun.In(t.HandleHashes)).OrderExpr("id ASC").Scan(ctx, &docs); err != nil {
		return nil, nil, fmt.Errorf("knowledge: find subject documents: %w", err)
	}
	q := idb.NewSelect().Model((*models.KnowledgeChunk)(nil)).Column("id").Where("space_id = ?", t.SpaceID).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			q = q.Where("subject_hash IN (?)", bun.In(t.HandleHashes))
			if len(docs) > 0 {
				q = q.WhereOr("document_id IN (?)", bun.In(docs))
			}
			return q
		})
	if err := q.OrderExpr("id ASC").Scan(ctx, &chunks); err != nil {
		return nil, nil, fmt.Errorf("knowledge: find subject chunks: %w", err)
	}
	return docs, chunks, nil
}

// vectorResidue returns the chunks of chunkIDs that still have a stored vector: in the
// embedding column of knowledge_chunks, or in a vector table (sqlite-vec's on SQLite,
// pgvector's on PostgreSQL: an index kept apart from the rows, probed by chunk id). Sorted, each id once.
func vectorResidue(ctx context.Context, idb bun.IDB, t erasure.Target, chunkIDs []string) ([]string, error) {
	ids, err := storedVectors(ctx, idb, t.SpaceID, chunkIDs)
	if err != nil {
		return nil, fmt.Errorf("knowledge: probe vectors: %w", err)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// fullTextResidue returns the full-text entries left of t. On SQLite (FTS5, a table apart
// from the rows): entries of chunkIDs, and entries of no chunk row at all (the index holds
// no space or subject, so an orphaned entry may be the subject's: it fails the erasure
// rather than let a certificate pass over it). On PostgreSQL the tsvector is the chunk row's
// search column (written at ingest): the chunks of chunkIDs that still have one.
func fullTextResidue(ctx context.Context, idb bun.IDB, t erasure.Target, chunkIDs []string) ([]string, error) {
	var ids []string
	if db.IsSQLite(idb) {
		q := idb.NewSelect().TableExpr("knowledge_chunks_fts AS f").ColumnExpr("f.chunk_id").
			Where("NOT EXISTS (SELECT 1 FROM knowledge_chunks AS c WHERE c.id = f.chunk_id)")
		if len(chunkIDs) > 0 {
			q = q.WhereOr("f.chunk_id IN (?)", bun.In(chunkIDs))
		}
		if err := q.OrderExpr("f.chunk_id ASC").Scan(ctx, &ids); err != nil {
			return nil, fmt.Errorf("knowledge: probe full text: %w", err)
		}
		return ids, nil
	}
	if len(chunkIDs) == 0 {
		return nil, nil
	}
	if err := idb.NewSelect().Model((*models.KnowledgeChunk)(nil)).Column("id").
		Where("space_id = ? AND id IN (?) AND search IS NOT NULL", t.SpaceID, bun.In(chunkIDs)).OrderExpr("id ASC").Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("knowledge: probe full text: %w", err)
	}
	return ids, nil
}
