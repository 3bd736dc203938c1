package activities_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/logs"
	"github.com/agentmemory/agentmemory/internal/logs/logstest"
)

// switchModel fails like a model server that does not answer until up is set.
type switchModel struct {
	mu sync.Mutex
	up bool
}

func (m *switchModel) Distill(context.Context, []llm.Turn) (llm.Proposal, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.up {
		return llm.Proposal{}, false, errors.New("dial tcp 127.0.0.1:11434: connection refused")
	}
	return llm.Proposal{Kind: "procedure", Title: "Returns", Body: "Check the order date first."}, true, nil
}

// While no model answers, Draft's retries log one ERROR line, then a summary with the count
// once the outage's period passed, then one line when the model answers (issue 27: an ERROR
// line every few seconds before). Its error stays type ModelUnavailable for the workflow, and
// is benign, which makes the Temporal SDK log it at debug level (dropped by app's logger)
// instead of one ERROR line per attempt. The clock is the test's; nothing waits on time.
func TestDraftLogsAModelOutageOnce(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	store, id := drafting(t)
	var buf logstest.Buffer
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	model := &switchModel{}
	env.RegisterActivity(&activities.Activities{Turns: oneTurn{}, Model: model, Proposals: store, HeartbeatEvery: time.Hour,
		ModelOutage: &logs.Outage{Log: slog.New(slog.NewJSONHandler(&buf, nil)), Name: "model server", Every: 5 * time.Minute, Now: clock}})
	draft := func() error {
		_, err := env.ExecuteActivity((&activities.Activities{}).Draft, activities.ProposalRef{ProposalID: id})
		return err
	}
	for range 30 {
		err := draft()
		var ae *temporal.ApplicationError
		require.True(t, errors.As(err, &ae), "got %v", err)
		require.Equal(t, activities.ErrTypeModelUnavailable, ae.Type())
		require.Equal(t, temporal.ApplicationErrorCategoryBenign, ae.Category(), "the SDK would log an ERROR per retry")
	}
	require.Equal(t, 1, strings.Count(buf.String(), "\n"), "30 failures within the period: one line\n%s", buf.String())
	require.Contains(t, buf.String(), `"level":"ERROR","msg":"model server unreachable","code":"model_unreachable"`)
	require.NotContains(t, buf.String(), "connection refused", "the model's address or error text is not logged")

	mu.Lock()
	now = now.Add(5 * time.Minute)
	mu.Unlock()
	require.Error(t, draft())
	require.Equal(t, 2, strings.Count(buf.String(), "\n"), buf.String())
	require.Contains(t, buf.String(), `"msg":"model server still unreachable","failures":30,"in":"5m0s","down_for":"5m0s"`)

	model.mu.Lock()
	model.up = true
	model.mu.Unlock()
	require.NoError(t, draft())
	require.Equal(t, 3, strings.Count(buf.String(), "\n"), buf.String())
	require.Contains(t, buf.String(), `"msg":"model server reachable again","failures":31`)
}
