package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// MaxListDocuments caps ListDocuments.
const MaxListDocuments = 200

// GetDocument returns document id of base kbID in p's space (CanRead or CanWrite; the
// feature on); a document of another base or space, or of a base an agent key with
// knowledge:read alone is not granted (whereReadable), is fault.NotFound "document_not_found".
func (s *Service) GetDocument(ctx context.Context, p auth.Principal, kbID, id string) (Document, error) {
	if err := s.readerOrWriter(ctx, p); err != nil {
		return Document{}, err
	}
	var row models.KnowledgeDocument
	q := s.DB.NewSelect().Model(&row).Where("space_id = ? AND kb_id = ? AND id = ?", p.SpaceID, kbID, id)
	if !mayReadMetadata(p) {
		q = s.whereReadable(q, p, "kb_id")
	}
	err := q.Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Document{}, fault.New(fault.NotFound, CodeDocumentNotFound, "no document with that id in this knowledge base")
	}
	if err != nil {
		return Document{}, fmt.Errorf("knowledge: load document: %w", err)
	}
	if _, err := s.keyring().openDocument(ctx, &row); err != nil {
		return Document{}, err
	}
	return toDocument(row), nil
}

// ListDocuments lists the documents of base kbID, newest first, at most 200 (CanRead or
// CanWrite; the feature on; the base in p's space and, for an agent key with knowledge:read
// alone, granted to it, else "knowledge_base_not_found"). Status, when set, keeps only that
// status.
func (s *Service) ListDocuments(ctx context.Context, p auth.Principal, kbID, status string) ([]Document, error) {
	if err := s.readerOrWriter(ctx, p); err != nil {
		return nil, err
	}
	viewer := p
	if mayReadMetadata(p) {
		viewer = auth.Principal{SpaceID: p.SpaceID} // every base of the space
	}
	if _, err := s.readableBase(ctx, viewer, kbID); err != nil {
		return nil, err
	}
	var rows []models.KnowledgeDocument
	q := s.DB.NewSelect().Model(&rows).Where("space_id = ? AND kb_id = ?", p.SpaceID, kbID)
	if status != "" {
		q = q.Where("status = ?", status)
	}
	if err := q.OrderExpr("id DESC").Limit(MaxListDocuments).Scan(ctx); err != nil {
		return nil, fmt.Errorf("knowledge: list documents: %w", err)
	}
	out := make([]Document, 0, len(rows))
	kr := s.keyring()
	for _, r := range rows {
		// A document whose key is gone (deleted or erased) is listed without its title.
		if _, err := kr.openDocument(ctx, &r); err != nil {
			return nil, err
		}
		out = append(out, toDocument(r))
	}
	return out, nil
}

// DeleteDocument deletes document id of base kbID (KN-3): in one transaction its chunks
// (rows, vectors) and full-text entries are removed, the document kept as a tombstone with
// status deleted and no title or body (tombstone), and its data key destroyed (so no backup's
// copy of it opens again, issue 29 §1), with a knowledge receipt "document.delete" naming the
// document and its chunks. The answer shows the title the document had. Retrieval reads only stored chunks (there is no result cache), so
// nothing of it comes back. CanWrite; the feature on; another base's or space's document is
// fault.NotFound. Deleting a deleted document answers it again (idempotent).
func (s *Service) DeleteDocument(ctx context.Context, p auth.Principal, kbID, id string) (Document, error) {
	if err := CanWrite(p); err != nil {
		return Document{}, err
	}
	if err := s.enabled(ctx, p.SpaceID); err != nil {
		return Document{}, err
	}
	now := s.now()
	var row models.KnowledgeDocument
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		err := tx.NewSelect().Model(&row).Where("space_id = ? AND kb_id = ? AND id = ?", p.SpaceID, kbID, id).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return fault.New(fault.NotFound, CodeDocumentNotFound, "no document with that id in this knowledge base")
		}
		if err != nil {
			return err
		}
		if row.Status == StatusDeleted {
			return nil
		}
		var chunkIDs []string
		if err := tx.NewSelect().Model((*models.KnowledgeChunk)(nil)).Column("id").Where("document_id = ?", id).OrderExpr("ord ASC").Scan(ctx, &chunkIDs); err != nil {
			return err
		}
		if _, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{Kind: receipts.KindKnowledge, Action: "document.delete", ActorKey: p.KeyID,
			ObjectIDs: append([]string{id}, chunkIDs...), Detail: map[string]any{"kb_id": kbID, "chunks": len(chunkIDs)}}, now); err != nil {
			return err
		}
		if err := deleteChunks(ctx, tx, id); err != nil {
			return err
		}
		if _, err := s.keyring().openDocument(ctx, &row); err != nil {
			return err
		}
		row.Status, row.Body, row.Chunks, row.UpdatedAt = StatusDeleted, "", 0, now
		if err := tombstone(ctx, tx, []string{id}, now); err != nil {
			return err
		}
		// Last: the document's key. Every copy of its title, body and chunks, backups
		// included, stops opening (issue 29 §1, ER-1).
		_, err = s.destroyKeys(ctx, []string{id})
		return err
	})
	if err != nil {
		return Document{}, err
	}
	return toDocument(row), nil
}

func (s *Service) readerOrWriter(ctx context.Context, p auth.Principal) error {
	if CanRead(p) != nil {
		if err := CanWrite(p); err != nil {
			return err
		}
	}
	return s.enabled(ctx, p.SpaceID)
}

// tombstone leaves documents ids, inside tx, with status deleted and nothing of their content:
// no title, body or title hash, clear or sealed, and no chunks counted.
func tombstone(ctx context.Context, tx bun.IDB, ids []string, now time.Time) error {
	_, err := tx.NewUpdate().Model((*models.KnowledgeDocument)(nil)).
		Set("status = ?, title = '', body = '', sealed_title = NULL, sealed_body = NULL, title_hash = '', chunks = 0, updated_at = ?", StatusDeleted, now).
		Where("id IN (?)", bun.In(ids)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("knowledge: tombstone: %w", err)
	}
	return nil
}
