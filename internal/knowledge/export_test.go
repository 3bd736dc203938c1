package knowledge

import (
	"context"

	"github.com/agentmemory/agentmemory/internal/auth"
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
