package knowledge

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/models"
)

// restoreBatch is how many chunks one batch of the vector rebuild indexes.
const restoreBatch = 500

// RebuildIndex drops every full-text entry and every vector-index row of the knowledge
// chunks and rebuilds them from the chunk rows: the restore procedure's step for knowledge
// (issue 29 §1, ER-1: the indexes are derived data, so an entry of a chunk the restored copy
// no longer holds drops out, and no nearest-neighbour probe can find it). SQLite rebuilds
// knowledge_chunks_fts and the sqlite-vec tables; PostgreSQL's search column is generated
// from the row, and its pgvector tables (when present) are emptied and backfilled. It returns
// the full-text entries and the vectors written.
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
	if !db.IsSQLite(s.DB) {
		if vp.Name == PathPgvector {
			if err := backfillPgvector(ctx, s.DB, vp); err != nil {
				return 0, 0, err
			}
		}
		return 0, 0, nil
	}
	if fullText, err = rebuildFullText(ctx, s.DB); err != nil {
		return 0, 0, err
	}
	vectors, err = reindexVectors(ctx, s.DB, vp)
	return fullText, vectors, err
}

// rebuildFullText empties SQLite's knowledge_chunks_fts and fills it from the chunk rows.
func rebuildFullText(ctx context.Context, d *bun.DB) (int, error) {
	if _, err := d.ExecContext(ctx, "DELETE FROM knowledge_chunks_fts"); err != nil {
		return 0, fmt.Errorf("knowledge: drop full text: %w", err)
	}
	res, err := d.ExecContext(ctx, "INSERT INTO knowledge_chunks_fts (chunk_id, heading, text) SELECT id, heading, text FROM knowledge_chunks")
	if err != nil {
		return 0, fmt.Errorf("knowledge: rebuild full text: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("knowledge: rebuild full text: %w", err)
	}
	return int(n), nil
}

// reindexVectors indexes every chunk's stored embedding again (SQLite), restoreBatch chunks
// per transaction, each under its document's indexing time.
func reindexVectors(ctx context.Context, d *bun.DB, vp VectorPath) (int, error) {
	n := 0
	for after := ""; ; {
		var rows []models.KnowledgeChunk
		if err := d.NewSelect().Model(&rows).Where("embedding IS NOT NULL AND id > ?", after).
			Order("id").Limit(restoreBatch).Scan(ctx); err != nil {
			return 0, fmt.Errorf("knowledge: load chunks: %w", err)
		}
		if len(rows) == 0 {
			return n, nil
		}
		after = rows[len(rows)-1].ID
		at, err := indexedAt(ctx, d, rows)
		if err != nil {
			return 0, err
		}
		err = d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for i := range rows {
				if err := indexVectors(ctx, tx, vp, rows[i:i+1], at[rows[i].DocumentID]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		n += len(rows)
	}
}

// indexedAt returns the indexing time of each document of rows (the epoch when unset).
func indexedAt(ctx context.Context, d *bun.DB, rows []models.KnowledgeChunk) (map[string]time.Time, error) {
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.DocumentID)
	}
	var docs []models.KnowledgeDocument
	if err := d.NewSelect().Model(&docs).Column("id", "indexed_at").Where("id IN (?)", bun.In(ids)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("knowledge: load documents: %w", err)
	}
	out := map[string]time.Time{}
	for _, doc := range docs {
		out[doc.ID] = time.Unix(0, 0).UTC()
		if doc.IndexedAt != nil {
			out[doc.ID] = *doc.IndexedAt
		}
	}
	return out, nil
}
