package knowledge

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/models"
)

// restoreBatch is how many rows one batch of the restore procedure reads or writes.
const restoreBatch = 500

// RestoreCounts is what Restore did: documents (and their chunks) sealed that were stored
// in clear, documents and chunks removed because their key is gone, and the full-text
// entries and vectors rebuilt from what still unseals.
type RestoreCounts struct {
	Sealed   int `json:"sealed"`
	Removed  int `json:"removed"`
	FullText int `json:"fulltext"`
	Vectors  int `json:"vectors"`
}

// Restore is the knowledge store's part of the restore procedure (issue 29 §1, ER-1), run on
// a database restored from a backup with the current key store (and safe on a live one, and
// to run again: a second run seals and removes nothing):
//  1. SealLegacy: documents and chunks stored in clear before sealing existed are sealed
//     under their document's key (created);
//  2. DropUnreadable: every document whose key the key store no longer holds (deleted or
//     erased after the backup was taken) loses its chunks, with their full-text entries and
//     vectors; a document naming a subject is deleted, any other becomes a tombstone, as
//     DeleteDocument leaves it;
//  3. RebuildIndex: the derived data is dropped and rebuilt only from what unseals.
//
// Errors are the database's and the key store's.
func (s *Service) Restore(ctx context.Context) (RestoreCounts, error) {
	var out RestoreCounts
	var err error
	if out.Sealed, err = s.SealLegacy(ctx); err != nil {
		return out, err
	}
	if out.Removed, err = s.DropUnreadable(ctx); err != nil {
		return out, err
	}
	out.FullText, out.Vectors, err = s.RebuildIndex(ctx)
	return out, err
}

// SealLegacy seals what was stored in clear before documents had keys: each such document's
// title and body under a new key DocumentKeyID(id) (a tombstone loses its title instead, and
// gets no key: its key id names a key that does not exist), then every clear chunk under its
// document's key (a chunk whose document's key is gone is only marked with the key id, and
// DropUnreadable deletes it). It returns how many documents and chunks it changed. Not done
// lazily by reads: legacy rows stay readable in clear until it runs (docs/knowledge.md).
func (s *Service) SealLegacy(ctx context.Context) (int, error) {
	n := 0
	kr := s.keyring()
	for {
		var docs []models.KnowledgeDocument
		if err := s.DB.NewSelect().Model(&docs).Where("sealed_key = ''").Order("id").Limit(restoreBatch).Scan(ctx); err != nil {
			return n, fmt.Errorf("knowledge: legacy documents: %w", err)
		}
		if len(docs) == 0 {
			break
		}
		for i := range docs {
			if err := s.sealLegacyDocument(ctx, kr, &docs[i]); err != nil {
				return n, err
			}
		}
		n += len(docs)
	}
	chunks, err := s.sealLegacyChunks(ctx, kr)
	return n + chunks, err
}

// sealLegacyDocument seals one clear document row (or clears a tombstone's title).
func (s *Service) sealLegacyDocument(ctx context.Context, kr *keyring, d *models.KnowledgeDocument) error {
	if d.Status == StatusDeleted {
		if err := tombstone(ctx, s.DB, []string{d.ID}, d.UpdatedAt); err != nil {
			return err
		}
		_, err := s.DB.NewUpdate().Model((*models.KnowledgeDocument)(nil)).Set("sealed_key = ?", DocumentKeyID(d.ID)).Where("id = ?", d.ID).Exec(ctx)
		return err
	}
	key, err := kr.key(ctx, DocumentKeyID(d.ID), true)
	if err != nil {
		return err
	}
	if err := s.sealDocument(d, key); err != nil {
		return err
	}
	_, err = s.DB.NewUpdate().Model(d).Column("sealed_key", "sealed_title", "sealed_body", "title_hash", "title", "body").
		Where("id = ? AND sealed_key = ''", d.ID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("knowledge: seal legacy document: %w", err)
	}
	return nil
}

// sealLegacyChunks seals every clear chunk under its document's key, restoreBatch per
// transaction, and returns how many it changed.
func (s *Service) sealLegacyChunks(ctx context.Context, kr *keyring) (int, error) {
	n := 0
	for {
		var rows []struct {
			models.KnowledgeChunk `bun:",extend"`
			DocKey                string `bun:"doc_key"`
		}
		err := s.DB.NewSelect().TableExpr("knowledge_chunks AS c").Join("JOIN knowledge_documents AS d ON d.id = c.document_id").
			ColumnExpr("c.id, c.text, c.embedding, d.sealed_key AS doc_key").Where("c.sealed_key = '' AND d.sealed_key <> ''").
			OrderExpr("c.id").Limit(restoreBatch).Scan(ctx, &rows)
		if err != nil {
			return n, fmt.Errorf("knowledge: legacy chunks: %w", err)
		}
		if len(rows) == 0 {
			return n, nil
		}
		err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, r := range rows {
				c := r.KnowledgeChunk
				key, err := kr.key(ctx, r.DocKey, false)
				if err != nil {
					return err
				}
				if key == nil {
					// Its document's key is gone: marked, and DropUnreadable deletes it.
					c.SealedKey, c.Heading, c.Text = r.DocKey, "", ""
				} else if err := sealChunk(&c, r.DocKey, key); err != nil {
					return err
				}
				if _, err := tx.NewUpdate().Model(&c).Column("sealed_key", "sealed_text", "sealed_embedding", "heading", "text").WherePK().Exec(ctx); err != nil {
					return fmt.Errorf("knowledge: seal legacy chunk: %w", err)
				}
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		n += len(rows)
	}
}

// DropUnreadable removes what no longer opens: the chunks sealed under a key the key store
// no longer holds (rows, full-text entries, vector-index rows), and the documents sealed under
// one: deleted when they name a subject (nothing of the subject's stays, not even the hash),
// else left as tombstones (status deleted, no title or body). Existence only: a key is never
// opened. It returns how many documents and chunks it changed (0 on a second run).
func (s *Service) DropUnreadable(ctx context.Context) (int, error) {
	gone, err := s.goneKeys(ctx)
	if err != nil || len(gone) == 0 {
		return 0, err
	}
	n := 0
	for start := 0; start < len(gone); start += restoreBatch {
		part := gone[start:min(start+restoreBatch, len(gone))]
		err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			m, err := dropSealedUnder(ctx, tx, part, s.now())
			n += m
			return err
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// goneKeys lists the key ids documents and chunks are sealed under that the key store no
// longer holds.
func (s *Service) goneKeys(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.DB.NewRaw("SELECT sealed_key FROM knowledge_documents WHERE sealed_key <> '' UNION SELECT sealed_key FROM knowledge_chunks WHERE sealed_key <> '' ORDER BY 1").Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("knowledge: list document keys: %w", err)
	}
	var gone []string
	for _, k := range ids {
		ok, err := s.Keys.Exists(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("knowledge: document key: %w", err)
		}
		if !ok {
			gone = append(gone, k)
		}
	}
	return gone, nil
}

// dropSealedUnder deletes, inside tx, the chunks sealed under keys (with their derived
// entries) and the documents sealed under them that name a subject, and tombstones the
// others that still hold anything; it returns how many rows it changed.
func dropSealedUnder(ctx context.Context, tx bun.Tx, keys []string, now time.Time) (int, error) {
	var chunks []string
	if err := tx.NewSelect().Model((*models.KnowledgeChunk)(nil)).Column("id").Where("sealed_key IN (?)", bun.In(keys)).Scan(ctx, &chunks); err != nil {
		return 0, fmt.Errorf("knowledge: unreadable chunks: %w", err)
	}
	if err := dropChunks(ctx, tx, chunks); err != nil {
		return 0, err
	}
	res, err := tx.NewDelete().Model((*models.KnowledgeDocument)(nil)).Where("sealed_key IN (?) AND subject_hash <> ''", bun.In(keys)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("knowledge: drop unreadable documents: %w", err)
	}
	deleted, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	var live []string
	if err := tx.NewSelect().Model((*models.KnowledgeDocument)(nil)).Column("id").Where("sealed_key IN (?)", bun.In(keys)).
		Where("(status <> ? OR sealed_title IS NOT NULL OR sealed_body IS NOT NULL OR title <> '' OR body <> '' OR title_hash <> '' OR chunks <> 0)", StatusDeleted).
		Scan(ctx, &live); err != nil {
		return 0, fmt.Errorf("knowledge: unreadable documents: %w", err)
	}
	if len(live) > 0 {
		if err := tombstone(ctx, tx, live, now); err != nil {
			return 0, err
		}
	}
	return len(chunks) + int(deleted) + len(live), nil
}

// dropChunks deletes chunks ids, inside tx, with their vector-index rows and full-text entries.
func dropChunks(ctx context.Context, tx bun.Tx, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	tables, err := vectorTables(ctx, tx)
	if err != nil {
		return err
	}
	if err := unindexChunkVectors(ctx, tx, tables, ids); err != nil {
		return err
	}
	if db.IsSQLite(tx) {
		if _, err := tx.ExecContext(ctx, "DELETE FROM knowledge_chunks_fts WHERE chunk_id IN (?)", bun.In(ids)); err != nil {
			return fmt.Errorf("knowledge: drop full text: %w", err)
		}
	}
	if _, err := tx.NewDelete().Model((*models.KnowledgeChunk)(nil)).Where("id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
		return fmt.Errorf("knowledge: drop chunks: %w", err)
	}
	return nil
}

// RebuildIndex drops every full-text entry and every vector-index row of the knowledge
// chunks and rebuilds them only from what unseals (issue 29 §1, ER-1: the indexes are derived
// data, so an entry of a chunk the restored copy no longer holds, or whose key is gone,
// drops out, and no nearest-neighbour probe can find it). Each chunk's text, its document's
// title and its embedding are unsealed; the full-text entry (FTS5 on SQLite, the search
// columns on PostgreSQL), the exact scan's embedding column and the sqlite-vec or pgvector
// row are written from them. A chunk that does not open is deleted. It returns the
// full-text entries and the vectors written.
func (s *Service) RebuildIndex(ctx context.Context) (fullText, vectors int, err error) {
	vp, err := s.vectorPath(ctx)
	if err != nil {
		return 0, 0, err
	}
	tables, err := vectorTables(ctx, s.DB)
	if err != nil {
		return 0, 0, err
	}
	for _, t := range tables {
		if _, err := s.DB.ExecContext(ctx, "DELETE FROM "+t); err != nil {
			return 0, 0, fmt.Errorf("knowledge: drop vectors: %w", err)
		}
	}
	if db.IsSQLite(s.DB) {
		if _, err := s.DB.ExecContext(ctx, "DELETE FROM knowledge_chunks_fts"); err != nil {
			return 0, 0, fmt.Errorf("knowledge: drop full text: %w", err)
		}
	} else if _, err := s.DB.ExecContext(ctx, "UPDATE knowledge_chunks SET search = NULL, heading_search = NULL"); err != nil {
		return 0, 0, fmt.Errorf("knowledge: drop full text: %w", err)
	}
	kr := s.keyring()
	for after := ""; ; {
		var rows []models.KnowledgeChunk
		if err := s.DB.NewSelect().Model(&rows).Where("id > ?", after).Order("id").Limit(restoreBatch).Scan(ctx); err != nil {
			return 0, 0, fmt.Errorf("knowledge: load chunks: %w", err)
		}
		if len(rows) == 0 {
			break
		}
		after = rows[len(rows)-1].ID
		ft, vec, err := s.rebuildBatch(ctx, kr, vp, rows)
		if err != nil {
			return 0, 0, err
		}
		fullText, vectors = fullText+ft, vectors+vec
	}
	if vp.Name == PathPgvector && !db.IsSQLite(s.DB) {
		if err := backfillPgvector(ctx, s.DB, vp); err != nil {
			return 0, 0, err
		}
	}
	return fullText, vectors, nil
}

// rebuildBatch rebuilds the derived entries of rows in one transaction (rebuildChunk) and
// returns the full-text entries and vectors written.
func (s *Service) rebuildBatch(ctx context.Context, kr *keyring, vp VectorPath, rows []models.KnowledgeChunk) (int, int, error) {
	titles, at, err := s.documentsOf(ctx, kr, rows)
	if err != nil {
		return 0, 0, err
	}
	ft, vec := 0, 0
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, r := range rows {
			wrote, hasVector, err := rebuildChunk(ctx, tx, kr, vp, r, titles, at[r.DocumentID])
			if err != nil {
				return err
			}
			if wrote {
				ft++
			}
			if hasVector {
				vec++
			}
		}
		return nil
	})
	return ft, vec, err
}

// rebuildChunk writes chunk r's derived entries from its unsealed text and embedding and its
// document's title (titles; a document missing from it does not open), or deletes the chunk
// when it does not open. It reports whether it wrote a full-text entry and a vector.
func rebuildChunk(ctx context.Context, tx bun.Tx, kr *keyring, vp VectorPath, r models.KnowledgeChunk, titles map[string]string, indexedAt time.Time) (bool, bool, error) {
	title, docOK := titles[r.DocumentID]
	text, ok, err := kr.openChunkText(ctx, r.SealedKey, r.ID, r.SealedText, r.Text)
	if err != nil {
		return false, false, err
	}
	vec, vecOK, err := kr.openChunkVector(ctx, r)
	if err != nil {
		return false, false, err
	}
	if !ok || !vecOK || !docOK {
		return false, false, dropChunks(ctx, tx, []string{r.ID})
	}
	if err := writeFullText(ctx, tx, r.ID, title, text); err != nil {
		return false, false, err
	}
	if _, err := tx.NewUpdate().Model((*models.KnowledgeChunk)(nil)).Set("embedding = ?", vec).Where("id = ?", r.ID).Exec(ctx); err != nil {
		return false, false, fmt.Errorf("knowledge: rebuild vector: %w", err)
	}
	if len(vec) == 0 {
		return true, false, nil
	}
	r.Embedding = vec
	if db.IsSQLite(tx) { // sqlite-vec; pgvector's tables are backfilled after (RebuildIndex)
		if err := indexVectors(ctx, tx, vp, []models.KnowledgeChunk{r}, indexedAt); err != nil {
			return false, false, err
		}
	}
	return true, true, nil
}

// documentsOf returns the opened titles of rows' documents (only those whose key opens) and
// their indexing times (the epoch when unset).
func (s *Service) documentsOf(ctx context.Context, kr *keyring, rows []models.KnowledgeChunk) (map[string]string, map[string]time.Time, error) {
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.DocumentID)
	}
	var docs []models.KnowledgeDocument
	if err := s.DB.NewSelect().Model(&docs).Column("id", "title", "sealed_key", "sealed_title", "indexed_at").Where("id IN (?)", bun.In(ids)).Scan(ctx); err != nil {
		return nil, nil, fmt.Errorf("knowledge: load documents: %w", err)
	}
	titles, at := map[string]string{}, map[string]time.Time{}
	for _, d := range docs {
		ok, err := kr.openDocument(ctx, &d)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			titles[d.ID] = d.Title
		}
		at[d.ID] = time.Unix(0, 0).UTC()
		if d.IndexedAt != nil {
			at[d.ID] = *d.IndexedAt
		}
	}
	return titles, at, nil
}
