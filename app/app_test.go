package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/metrics"
)

// TestBuildSharesOneGraph: the API's dependencies and the worker's starter come from one
// graph: one clock, one metrics registry, one notes service, and the distillation inputs of
// the configuration (AGENTMEMORY_APPROVAL_DEADLINE, AGENTMEMORY_DECISION_WAIT) for the API
// and the reconciler alike; AGENTMEMORY_KNOWLEDGE_QUERY_TIMEOUT reaches the knowledge service.
func TestBuildSharesOneGraph(t *testing.T) {
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"AGENTMEMORY_APPROVAL_DEADLINE": "48h", "AGENTMEMORY_DECISION_WAIT": "7s", "AGENTMEMORY_KNOWLEDGE_QUERY_TIMEOUT": "3s"}[k]
	})
	require.NoError(t, err)
	cfg.Secret, cfg.DataDir = "app-test-secret-0123456789abcdef0123", t.TempDir()
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := metrics.New()
	a, err := app.Build(context.Background(), cfg, app.Overrides{DB: dbtest.Open(t, "sqlite"), Now: func() time.Time { return fixed }, Metrics: m})
	require.NoError(t, err)
	t.Cleanup(a.Close)

	deps := a.APIDeps(nil)
	require.Same(t, m, deps.Metrics)
	require.Same(t, a.Notes, deps.Notes)
	require.Same(t, a.Proposals, deps.Proposals)
	require.Same(t, a.Proposals, a.Compliance.Notes, "agent-note erasure erases notes and proposals")
	require.Same(t, a.Notes, a.Proposals.Notes)
	require.Nil(t, a.Notes.Detector, "no AGENTMEMORY_DETECTOR_MODEL: local layer only")
	for name, now := range map[string]func() time.Time{"api": deps.Now, "state": a.State.Now, "notes": a.Notes.Now,
		"turns": a.Turns.Now, "proposals": a.Proposals.Now, "subjects": a.Subjects.Now, "compliance": a.Compliance.Now} {
		require.Equal(t, fixed, now(), "%s runs on another clock", name)
	}
	require.Equal(t, 48*time.Hour, deps.ApprovalDeadline)
	require.Equal(t, 7*time.Second, deps.DecisionWait)
	require.Equal(t, 3*time.Second, a.Knowledge.QueryEmbedTimeout)
	require.Equal(t, deps.ApprovalDeadline, a.Starter(nil, "").ApprovalDeadline, "the reconciler restarts distillations with the API's deadline")
	require.Equal(t, cfg.TaskQueue, a.Starter(nil, "").TaskQueue)
}
