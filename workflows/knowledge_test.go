package workflows_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/workflows"
)

func ingestEnv() (*testsuite.TestWorkflowEnvironment, *activities.KnowledgeActivities) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	a := &activities.KnowledgeActivities{}
	env.RegisterActivity(a)
	return env, a
}

// An ingest returns the activity's result.
func TestIngestWorkflowReady(t *testing.T) {
	env, a := ingestEnv()
	env.OnActivity(a.IngestDocument, mock.Anything, "kd_1").Return(knowledge.IngestResult{DocumentID: "kd_1", Status: knowledge.StatusReady, Chunks: 3, Dims: 256}, nil)
	env.ExecuteWorkflow(workflows.IngestWorkflow, workflows.IngestInput{DocumentID: "kd_1"})
	require.NoError(t, env.GetWorkflowError())
	var res knowledge.IngestResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, knowledge.StatusReady, res.Status)
	require.Equal(t, 3, res.Chunks)
}

// An embedder down past the embed wait fails the document with embedder_unavailable.
func TestIngestWorkflowGivesUpOnTheEmbedder(t *testing.T) {
	env, a := ingestEnv()
	calls := 0
	env.OnActivity(a.IngestDocument, mock.Anything, "kd_1").Return(func(_ context.Context, _ string) (knowledge.IngestResult, error) {
		calls++
		return knowledge.IngestResult{}, temporal.NewApplicationError("down", activities.ErrTypeEmbedderDown)
	})
	env.OnActivity(a.FailDocument, mock.Anything, "kd_1", workflows.ReasonEmbedderUnavailable).Return(nil).Once()
	env.ExecuteWorkflow(workflows.IngestWorkflow, workflows.IngestInput{DocumentID: "kd_1", EmbedWait: 10 * time.Minute, RetryInterval: time.Second})
	require.NoError(t, env.GetWorkflowError())
	var res knowledge.IngestResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, knowledge.StatusFailed, res.Status)
	require.Greater(t, calls, 3, "retried while the embedder was down")
	env.AssertExpectations(t)
}

// Any other final error fails the document with ingest_failed.
func TestIngestWorkflowFinalError(t *testing.T) {
	env, a := ingestEnv()
	env.OnActivity(a.IngestDocument, mock.Anything, "kd_1").Return(knowledge.IngestResult{}, temporal.NewNonRetryableApplicationError("gone", "document_not_found", nil))
	env.OnActivity(a.FailDocument, mock.Anything, "kd_1", workflows.ReasonIngestFailed).Return(nil).Once()
	env.ExecuteWorkflow(workflows.IngestWorkflow, workflows.IngestInput{DocumentID: "kd_1"})
	require.NoError(t, env.GetWorkflowError())
	env.AssertExpectations(t)
}
