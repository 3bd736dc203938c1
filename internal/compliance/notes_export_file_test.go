package compliance_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/workflows"
)

// TestAgentMemoryExportFile (issue 33 §4): POST /v1/agent-memory/exports builds, through
// AgentMemoryExportWorkflow on a real Temporal dev server, one agent's export file: every
// version of its notes and its proposals (not another agent's), sealed at rest, receipted at
// request, completion and download; the file expires (404 after expiry, removed by the
// sweep) and goes with the agent's notes when they are erased. Only role admin asks.
// Re-record the replay fixture with AGENTMEMORY_RECORD_AGENT_EXPORT=agent_memory_export.json
// go test ./internal/compliance -run '^TestAgentMemoryExportFile$/sqlite'.
func TestAgentMemoryExportFile(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, engine)
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
			botA := e.AgentKey("bot-a", "acme", "agent_memory", "agent_memory:write")
			botB := e.AgentKey("bot-b", "acme", "agent_memory", "agent_memory:write")
			a1 := e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", botA,
				map[string]any{"kind": "procedure", "title": "Refund zebra", "body": "Validate the zebra order first."}).JSON(t)["id"].(string)
			a2 := e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes/"+a1+"/versions", botA,
				map[string]any{"body": "Validate the zebra order, then refund."}).JSON(t)["id"].(string)
			e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", botB,
				map[string]any{"kind": "procedure", "title": "Agent B", "body": "Agent B keeps its own notes."})
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true, "writes": "human_only"}})
			pa := e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/notes", botA,
				map[string]any{"kind": "pitfall", "title": "Zebra pitfall", "body": "Never skip the zebra check."}).JSON(t)["proposal_id"].(string)

			e.MustDo(http.StatusForbidden, "POST", "/v1/agent-memory/exports", e.PersonKey("rev", "reviewer"), map[string]any{"source_id": "bot-a"})
			e.MustDo(http.StatusBadRequest, "POST", "/v1/agent-memory/exports", e.AdminKey, map[string]any{"source_id": ""})
			e.MustDo(http.StatusBadRequest, "POST", "/v1/agent-memory/exports", e.AdminKey, map[string]any{"source_id": "bot-a", "x": 1})
			started := e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/exports", e.AdminKey, map[string]any{"source_id": "bot-a"}).JSON(t)
			id := started["export_id"].(string)
			require.Equal(t, "running", started["status"])
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			require.NoError(t, temporalClient.GetWorkflow(wctx, workflows.AgentMemoryExportWorkflowID(id), "").Get(wctx, nil))
			if name := os.Getenv("AGENTMEMORY_RECORD_AGENT_EXPORT"); name != "" && engine == "sqlite" {
				recordHistory(t, workflows.AgentMemoryExportWorkflowID(id), filepath.Join("..", "..", "workflows", "testdata", name))
			}

			view := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/exports/"+id, e.AdminKey, nil).JSON(t)
			require.Equal(t, "completed", view["status"])
			require.Equal(t, map[string]any{"notes": json.Number("2"), "proposals": json.Number("1")}, view["counts"])
			var row models.AgentMemoryExport
			require.NoError(t, e.DB.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx))
			require.NotContains(t, string(row.Package), "zebra", "the file is sealed at rest")

			file := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/exports/"+id+"/file", e.AdminKey, nil)
			var f struct {
				ExportID  string                      `json:"export_id"`
				SourceID  string                      `json:"source_id"`
				Notes     []struct{ ID, Body string } `json:"notes"`
				Proposals []struct{ ID string }       `json:"proposals"`
			}
			require.NoError(t, json.Unmarshal(file.Body, &f), "%s", file.Body)
			require.Equal(t, id, f.ExportID)
			require.Equal(t, "bot-a", f.SourceID)
			require.Len(t, f.Notes, 2)
			require.ElementsMatch(t, []string{a1, a2}, []string{f.Notes[0].ID, f.Notes[1].ID}, "every version, only bot-a's")
			require.Contains(t, f.Notes[0].Body+f.Notes[1].Body, "then refund")
			require.Len(t, f.Proposals, 1)
			require.Equal(t, pa, f.Proposals[0].ID)
			e.MustDo(http.StatusForbidden, "GET", "/v1/agent-memory/exports/"+id+"/file", botA, nil)
			for _, action := range []string{"notes.export.request", "notes.export.complete", "notes.export.download"} {
				n, err := e.DB.NewSelect().Model((*models.Receipt)(nil)).Where("space_id = ? AND action = ? AND object_ids LIKE ?", e.SpaceID, action, "%"+id+"%").Count(ctx)
				require.NoError(t, err)
				require.EqualValues(t, 1, n, "receipt %s", action)
			}

			// Erasing bot-a's notes takes its export file with them.
			r := e.MustDo(http.StatusAccepted, "DELETE", "/v1/agent-memory/notes?source_id=bot-a", e.AdminKey, nil).JSON(t)
			require.NoError(t, temporalClient.GetWorkflow(wctx, r["workflow_id"].(string), "").Get(wctx, nil))
			e.MustDo(http.StatusNotFound, "GET", "/v1/agent-memory/exports/"+id+"/file", e.AdminKey, nil)
			e.MustDo(http.StatusNotFound, "GET", "/v1/agent-memory/exports/"+id, e.AdminKey, nil)
		})
	}
}

// TestAgentMemoryExportFileExpires: past its expiry an export file reads as not found, and
// the retention sweep removes it.
func TestAgentMemoryExportFileExpires(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, engine)
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
			bot := e.AgentKey("bot-c", "acme", "agent_memory", "agent_memory:write")
			e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", bot,
				map[string]any{"kind": "procedure", "title": "Short lived", "body": "Exported, then expired."})
			id := e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/exports", e.AdminKey, map[string]any{"source_id": "bot-c"}).JSON(t)["export_id"].(string)
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			require.NoError(t, temporalClient.GetWorkflow(wctx, workflows.AgentMemoryExportWorkflowID(id), "").Get(wctx, nil))
			e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/exports/"+id+"/file", e.AdminKey, nil)

			_, err := e.DB.NewUpdate().Model((*models.AgentMemoryExport)(nil)).Set("expires_at = ?", time.Now().Add(-time.Minute).UTC()).
				Where("id = ?", id).Exec(ctx)
			require.NoError(t, err)
			e.MustDo(http.StatusNotFound, "GET", "/v1/agent-memory/exports/"+id, e.AdminKey, nil)
			e.MustDo(http.StatusNotFound, "GET", "/v1/agent-memory/exports/"+id+"/file", e.AdminKey, nil)
			_, err = e.App.Compliance.SweepBatch(ctx, e.SpaceID, compliance.PhaseExports, "", 500)
			require.NoError(t, err)
			n, err := e.DB.NewSelect().Model((*models.AgentMemoryExport)(nil)).Where("id = ?", id).Count(ctx)
			require.NoError(t, err)
			require.Zero(t, n, "the sweep removed the expired file")
		})
	}
}
