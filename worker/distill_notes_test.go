package worker_test

import (
	"context"
	"fmt"
	sdkworker "go.temporal.io/sdk/worker"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"agentmemory/activities"
	"agentmemory/api"
	"agentmemory/api/apitest"
	"agentmemory/internal/llm"
	"agentmemory/internal/llm/llmtest"
	"agentmemory/internal/turns/turnstest"
	"agentmemory/worker"
)

// TestDistillThroughNotesAPI is the end-to-end path through the API alone: ingest an
// ABCD conversation, distil it, approve it through POST .../proposals/{id}/approve, and find
// the note in the block with origin distilled. It needs internal/notes (apitest wiring
// Deps.Proposals with the notes service, which must also implement activities.ProposalStore
// and activities.Gate); until that branch is merged it is skipped.
func TestDistillThroughNotesAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the Temporal dev server")
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			tq := fmt.Sprintf("notes-%s-%d", engine, time.Now().UnixNano())
			e := apitest.New(t, engine, func(d *api.Deps) { d.Workflows, d.TaskQueue = temporalClient, tq })
			store, okStore := e.Deps.Proposals.(activities.ProposalStore)
			gate, okGate := e.Deps.Proposals.(activities.Gate)
			if !okStore || !okGate {
				t.Skip("internal/notes is not merged: apitest wires no proposal store")
			}
			model := llmtest.New(t, goodNote)
			mc, err := llm.New(llm.Config{Host: model.URL, Model: "distiller"})
			require.NoError(t, err)
			w := worker.New(temporalClient, tq, sdkworker.Options{}, &activities.Activities{Turns: e.Deps.Turns, Model: mc, Proposals: store, Gate: gate}, &activities.ComplianceActivities{Compliance: e.Deps.Compliance})
			require.NoError(t, w.Start())
			t.Cleanup(w.Stop)

			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
			conv := turnstest.Load(t)[0]
			bot := e.AgentKey("support-bot", "acme", "context", "agent_memory")
			e.MustDo(http.StatusCreated, "POST", "/v1/turns", bot, map[string]any{"turns": conv.Turns})
			r := e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/distill", e.AdminKey,
				map[string]any{"conversation_id": conv.ID, "source_id": "support-bot"})
			id := r.JSON(t)["proposal_id"].(string)

			prop := waitStatus(t, e, id, "pending")
			require.Contains(t, fmt.Sprint(prop["note"]), "Returns requested after 90 days")

			r = e.MustDo(http.StatusOK, "POST", "/v1/agent-memory/proposals/"+id+"/approve", e.AdminKey, map[string]any{})
			noteID := r.JSON(t)["note_id"]
			require.NotEmpty(t, noteID)
			again := e.MustDo(http.StatusOK, "POST", "/v1/agent-memory/proposals/"+id+"/approve", e.AdminKey, map[string]any{})
			require.Equal(t, noteID, again.JSON(t)["note_id"], "a repeated approve returns the same note")

			block := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/block?max_tokens=2000", bot, nil)
			require.Contains(t, string(block.Body), "Returns requested after 90 days")
			export := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/export", e.AdminKey, nil)
			require.Contains(t, string(export.Body), `"origin":"distilled"`)
			require.Equal(t, 1, model.Calls())
		})
	}
}

// waitStatus polls GET /v1/agent-memory/proposals/{id} (bounded) until it shows want.
func waitStatus(t *testing.T, e *apitest.Env, id, want string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		p := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/proposals/"+id, e.AdminKey, nil).JSON(t)
		status, _ := p["status"].(string)
		if status == want {
			return p
		}
		require.True(t, status == "drafting" || status == "pending", "proposal ended %s (%v), want %s", status, p["reason"], want)
		select {
		case <-ctx.Done():
			t.Fatalf("proposal %s still %s, want %s", id, status, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
