package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/knowledge"
)

// IngestWorkflowID is the workflow id of knowledge document documentID,
// "knowledge-ingest-" + documentID.
func IngestWorkflowID(documentID string) string { return "knowledge-ingest-" + documentID }

// Defaults of IngestInput's durations.
const (
	DefaultEmbedWait = 24 * time.Hour
)

// Reasons IngestWorkflow records on a document it gives up on.
const (
	ReasonEmbedderUnavailable = "embedder_unavailable"
	ReasonIngestFailed        = "ingest_failed"
)

// IngestInput starts IngestWorkflow: the document's id only (its text stays in the
// database) and the durations, zero meaning the defaults.
type IngestInput struct {
	DocumentID string
	// EmbedWait is how long the ingest retries while the embedder is down before the
	// document fails with embedder_unavailable (default 24 hours).
	EmbedWait time.Duration
	// RetryInterval is the first retry interval (default 2 s); it doubles up to one minute.
	RetryInterval time.Duration
}

var ka *activities.KnowledgeActivities

// IngestWorkflow ingests one knowledge document (KN-2): IngestDocument gates, chunks, embeds
// and indexes it in one activity (retried while the embedder is down, up to EmbedWait); when
// it gives up, FailDocument ends the document failed (embedder_unavailable, or ingest_failed
// for any other final error). Its history holds the document id and counts only. It returns
// the ingest's result.
func IngestWorkflow(ctx workflow.Context, in IngestInput) (knowledge.IngestResult, error) {
	first := in.RetryInterval
	if first <= 0 {
		first = DefaultRetryInterval
	}
	wait := in.EmbedWait
	if wait <= 0 {
		wait = DefaultEmbedWait
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    10 * time.Minute,
		ScheduleToCloseTimeout: wait,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: first, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var res knowledge.IngestResult
	err := workflow.ExecuteActivity(actx, ka.IngestDocument, in.DocumentID).Get(ctx, &res)
	if err == nil {
		return res, nil
	}
	reason := ReasonIngestFailed
	var ae *temporal.ApplicationError
	var te *temporal.TimeoutError
	if (errors.As(err, &ae) && ae.Type() == activities.ErrTypeEmbedderDown) || errors.As(err, &te) {
		reason = ReasonEmbedderUnavailable
	}
	fctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: first, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	if ferr := workflow.ExecuteActivity(fctx, ka.FailDocument, in.DocumentID, reason).Get(ctx, nil); ferr != nil {
		return res, ferr
	}
	return knowledge.IngestResult{DocumentID: in.DocumentID, Status: knowledge.StatusFailed}, nil
}
