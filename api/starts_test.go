package api_test

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/models"
)

// closedTemporal is a real Temporal client whose server address is a closed port: every
// start fails as when the engine is down (gRPC unavailable, an ambiguous answer).
func closedTemporal(t *testing.T) client.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	c, err := client.NewLazyClient(client.Options{HostPort: addr})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// The one policy for a workflow start that fails (api/starts.go), per caller, with the
// engine down: the row is ended (or, where the policy keeps it, kept) and the answer is 503
// workflows_unavailable with Retry-After; an erasure, whose start answer is ambiguous, stays
// pending for the reconciler (202).
func TestWorkflowStartFailsAtAClosedPort(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			startFailsAtAClosedPort(t, apptest.New(t, engine, func(d *api.Deps) { d.Workflows = closedTemporal(t) }))
		})
	}
}

func startFailsAtAClosedPort(t *testing.T, e *apptest.Env) {
	{
		unavailable := func(t *testing.T, r apptest.Response) {
			t.Helper()
			require.Equal(t, http.StatusServiceUnavailable, r.Status, "got %d: %s", r.Status, r.Body)
			require.Equal(t, "workflows_unavailable", r.ErrorCode(t))
			require.NotEmpty(t, r.Header.Get("Retry-After"))
			require.NotContains(t, string(r.Body), "127.0.0.1", "the engine's error is never answered")
		}
		officer := e.PersonKey("officer", "compliance")
		e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}, "knowledge": map[string]any{"enabled": true}})
		e.AgentKey("support-bot", "acme", "agent_memory")
		ctx := context.Background()

		t.Run("export: ended start_failed", func(t *testing.T) {
			unavailable(t, e.Do("POST", "/v1/exports", officer, map[string]any{"subject": "email:ana@example.com"}))
			var rows []models.ExportPackage
			require.NoError(t, e.DB.NewSelect().Model(&rows).Scan(ctx))
			require.Len(t, rows, 1)
			require.Equal(t, "failed", rows[0].Status)
			require.Equal(t, "start_failed", rows[0].Failure)
		})
		t.Run("erasure: ambiguous, kept pending", func(t *testing.T) {
			r := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", officer, map[string]any{"conversation_id": "c-1"}).JSON(t)
			require.Equal(t, "pending", e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+r["erasure_id"].(string), officer, nil).JSON(t)["status"])
		})
		t.Run("retention sweep and note erasure: no row", func(t *testing.T) {
			unavailable(t, e.Do("POST", "/v1/retention/sweep", e.AdminKey, nil))
			unavailable(t, e.Do("DELETE", "/v1/agent-memory/notes?source_id=support-bot", e.AdminKey, nil))
		})
		t.Run("distillation: ended without a key, kept with one", func(t *testing.T) {
			body := map[string]any{"task_id": "t-7", "source_id": "support-bot"}
			unavailable(t, e.Do("POST", "/v1/agent-memory/distill", e.AdminKey, body))
			unavailable(t, e.Do("POST", "/v1/agent-memory/distill", e.AdminKey, body, "Idempotency-Key", "k-1"))
			rows := storedProposals(t, e)
			require.Len(t, rows, 2)
			require.Equal(t, []string{proposals.StatusFailed, proposals.StatusDrafting}, []string{rows[0].Status, rows[1].Status})
			require.Equal(t, proposals.ReasonWorkflowUnavailable, rows[0].Reason)
		})
		t.Run("knowledge document: ended workflow_unavailable", func(t *testing.T) {
			kb := e.MustDo(http.StatusCreated, "POST", "/v1/knowledge", e.AdminKey, map[string]any{"name": "handbook"}).JSON(t)["id"].(string)
			doc := map[string]any{"text": "# Refunds\n\nRefunds go to the original card.", "format": "markdown", "source_uri": "kb://refunds", "title": "Refunds", "version": "v1"}
			unavailable(t, e.Do("POST", "/v1/knowledge/"+kb+"/documents", e.AdminKey, doc))
			docs := e.MustDo(http.StatusOK, "GET", "/v1/knowledge/"+kb+"/documents", e.AdminKey, nil).JSON(t)["documents"].([]any)
			require.Len(t, docs, 1)
			require.Equal(t, "failed", docs[0].(map[string]any)["status"])
		})
	}
}
