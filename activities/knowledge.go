package activities

import (
	"context"

	"go.temporal.io/sdk/temporal"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/logs"
)

// ErrTypeEmbedderDown is the application error type of an ingest whose embedder did not
// answer: retried by IngestWorkflow until its embed wait runs out.
const ErrTypeEmbedderDown = "EmbedderUnavailable"

// KnowledgeActivities are IngestWorkflow's side effects over the knowledge store (KN-2).
// Inputs and results are ids and counts: no document text enters Temporal's history.
type KnowledgeActivities struct {
	Knowledge *knowledge.Service
	// EmbedderOutage logs the embedder's outages once, then as a periodic summary, and its
	// recovery (nil: not logged); the EmbedderUnavailable error is benign to Temporal, so the
	// SDK logs no ERROR line per retry (issue 27).
	EmbedderOutage *logs.Outage
}

// IngestDocument gates, chunks, embeds and indexes document id (knowledge.Service.Ingest):
// the result (status ready, refused or superseded; chunks, model, dims), a retryable
// EmbedderUnavailable error while the embedder is down, or a final error for a refusal the
// store cannot pass (a missing document).
func (a *KnowledgeActivities) IngestDocument(ctx context.Context, id string) (knowledge.IngestResult, error) {
	res, err := a.Knowledge.Ingest(ctx, id)
	if fe := fault.As(err); fe != nil && fe.Code == knowledge.CodeEmbedderDown {
		a.EmbedderOutage.Failure("code", knowledge.CodeEmbedderDown)
		return res, temporal.NewApplicationErrorWithOptions(fe.Message, ErrTypeEmbedderDown,
			temporal.ApplicationErrorOptions{Category: temporal.ApplicationErrorCategoryBenign})
	}
	if err == nil && res.Chunks > 0 {
		a.EmbedderOutage.Success() // chunks were embedded
	}
	return res, storeError(err)
}

// FailDocument ends pending document id failed with reason (the workflow gave up).
func (a *KnowledgeActivities) FailDocument(ctx context.Context, id, reason string) error {
	return storeError(a.Knowledge.Fail(ctx, id, reason))
}
