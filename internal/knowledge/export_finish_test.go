package knowledge

import (
	"context"

	"github.com/agentmemory/agentmemory/models"
)

// FinishStale runs finish on document id as an ingest that loaded it while it was still
// pending would, whatever its status now: the late second ending of a document that another
// ingest (on another replica) already ended.
func (s *Service) FinishStale(ctx context.Context, id, status, reason string) (IngestResult, error) {
	var doc models.KnowledgeDocument
	if err := s.DB.NewSelect().Model(&doc).Where("id = ?", id).Scan(ctx); err != nil {
		return IngestResult{}, err
	}
	doc.Status = StatusPending
	return s.finish(ctx, doc, status, reason, nil)
}
