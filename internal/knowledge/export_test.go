package knowledge

import (
	"context"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/models"
)

// ScopedChunkIDs returns the ids of the chunks chunkScope lets p see in bases kbs under f,
// straight from the store's query (no base check before it): the tests prove the tenant and
// grant filter is inside the query itself.
func (s *Service) ScopedChunkIDs(ctx context.Context, p auth.Principal, kbs []string, f *Filters) ([]string, error) {
	var ids []string
	q := s.DB.NewSelect().TableExpr("knowledge_chunks AS c").Join("JOIN knowledge_documents AS d ON d.id = c.document_id").ColumnExpr("c.id")
	err := s.chunkScope(q, p, kbs, f).OrderExpr("c.id").Scan(ctx, &ids)
	return ids, err
}

// ChunkTexts returns the unsealed texts of document docID's chunks, in order (tests read what
// is stored through the document's key, as retrieval does).
func (s *Service) ChunkTexts(ctx context.Context, docID string) ([]string, error) {
	var rows []models.KnowledgeChunk
	if err := s.DB.NewSelect().Model(&rows).Where("document_id = ?", docID).Order("ord").Scan(ctx); err != nil {
		return nil, err
	}
	kr := s.keyring()
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		text, _, err := kr.openChunkText(ctx, r.SealedKey, r.ID, r.SealedText, r.Text)
		if err != nil {
			return nil, err
		}
		out = append(out, text)
	}
	return out, nil
}

// ReplaceBody seals body as document docID's stored body (a test changing what a pending
// document holds, as a stored row edited behind the store's back).
func (s *Service) ReplaceBody(ctx context.Context, docID, body string) error {
	key, err := s.keyring().key(ctx, DocumentKeyID(docID), false)
	if err != nil {
		return err
	}
	sealed, err := sealBytes(key, []byte(body), adBody(docID))
	if err != nil {
		return err
	}
	_, err = s.DB.NewUpdate().Model((*models.KnowledgeDocument)(nil)).Set("sealed_body = ?", sealed).Where("id = ?", docID).Exec(ctx)
	return err
}
