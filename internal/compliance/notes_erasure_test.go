package compliance_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/models"
)

// noteIDs returns the ids of objects in list (a JSON array of objects with "id").
func noteIDs(list any) []string {
	out := []string{}
	for _, x := range list.([]any) {
		out = append(out, x.(map[string]any)["id"].(string))
	}
	return out
}

// AM-12: DELETE /v1/agent-memory/notes?source_id= (admin) erases, through
// NoteErasureWorkflow on a real Temporal dev server, every note (all versions), proposal,
// search-index row, tag and remembered answer of one agent, with a notes.erase receipt; the
// other agent's notes and the receipt chain are untouched; a second erasure finds nothing.
func TestAgentNoteErasureEndToEnd(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := newEnv(t, engine)
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
			botA := e.AgentKey("bot-a", "acme", "agent_memory", "agent_memory:write")
			botB := e.AgentKey("bot-b", "acme", "agent_memory", "agent_memory:write")
			note := func(key, title, body string, headers ...string) string {
				r := e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", key,
					map[string]any{"kind": "procedure", "title": title, "body": body, "tags": []string{"refund"}}, headers...)
				return r.JSON(t)["id"].(string)
			}
			a1 := note(botA, "Refund zebra", "Validate the zebra order first.", "Idempotency-Key", "k-1")
			a2 := e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes/"+a1+"/versions", botA,
				map[string]any{"body": "Validate the zebra order, then refund."}).JSON(t)["id"].(string)
			b1 := note(botB, "Refund zebra for B", "Agent B keeps zebra notes too.")
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true, "writes": "human_only"}})
			pa := e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/notes", botA,
				map[string]any{"kind": "pitfall", "title": "Zebra pitfall", "body": "Never skip the zebra check."}).JSON(t)["proposal_id"].(string)
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})

			resp := e.Do("DELETE", "/v1/agent-memory/notes?source_id=bot-a", e.PersonKey("rev", "reviewer"), nil)
			require.Equal(t, http.StatusForbidden, resp.Status, "got %d: %s", resp.Status, resp.Body)
			resp = e.Do("DELETE", "/v1/agent-memory/notes", e.AdminKey, nil)
			require.Equal(t, http.StatusBadRequest, resp.Status, "got %d: %s", resp.Status, resp.Body)

			erase := func() activities.NoteErasureResult {
				r := e.MustDo(http.StatusAccepted, "DELETE", "/v1/agent-memory/notes?source_id=bot-a", e.AdminKey, nil).JSON(t)
				require.Equal(t, "running", r["status"])
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				var out activities.NoteErasureResult
				require.NoError(t, temporalClient.GetWorkflow(ctx, r["workflow_id"].(string), "").Get(ctx, &out))
				if name := os.Getenv("AGENTMEMORY_RECORD_NOTE_ERASURE"); name != "" && engine == "sqlite" && out.Notes > 0 {
					// Re-record the replay fixture (the checkpoint branch, "note-erasure-checkpoint"):
					// AGENTMEMORY_RECORD_NOTE_ERASURE=note_erasure_checkpoint.json go test ./internal/compliance -run TestAgentNoteErasureEndToEnd/sqlite
					recordHistory(t, r["workflow_id"].(string), filepath.Join("..", "..", "workflows", "testdata", name))
				}
				return out
			}
			require.Equal(t, activities.NoteErasureResult{Notes: 2, Proposals: 1}, erase())
			if db.IsSQLite(e.DB) {
				// The erased text left the write-ahead log too (the checkpoint step).
				var seq int
				var name, file string
				require.NoError(t, e.DB.QueryRowContext(context.Background(), "PRAGMA database_list").Scan(&seq, &name, &file))
				wal, err := os.ReadFile(file + "-wal")
				if !errors.Is(err, os.ErrNotExist) {
					require.NoError(t, err)
				}
				require.NotContains(t, string(wal), "Validate the zebra order", "erased text in %s-wal", file)
			}

			x := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/export", e.AdminKey, nil).JSON(t)
			require.Equal(t, []string{b1}, noteIDs(x["notes"]))
			require.Empty(t, x["proposals"])
			search := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/search?q=zebra", botB, nil).JSON(t)
			require.Equal(t, []string{b1}, noteIDs(search["notes"]))
			require.Equal(t, http.StatusNotFound, e.Do("GET", "/v1/agent-memory/notes/"+a1, e.AdminKey, nil).Status)
			require.Equal(t, http.StatusNotFound, e.Do("GET", "/v1/agent-memory/proposals/"+pa, e.AdminKey, nil).Status)

			// Nothing of bot-a remains in any table, the search index included.
			ctx := context.Background()
			gone := []string{a1, a2}
			n, err := e.DB.NewSelect().Model((*models.NoteTag)(nil)).Where("note_id IN (?)", bun.In(gone)).Count(ctx)
			require.NoError(t, err)
			require.Zero(t, n, "tags of erased notes")
			n, err = e.DB.NewSelect().Model((*models.NoteRequest)(nil)).Where("space_id = ?", e.SpaceID).Count(ctx)
			require.NoError(t, err)
			require.Zero(t, n, "the remembered answer carried an erased note")
			if db.IsSQLite(e.DB) {
				var fts int
				require.NoError(t, e.DB.QueryRowContext(ctx, `SELECT count(*) FROM notes_fts WHERE note_id IN (?, ?)`, a1, a2).Scan(&fts))
				require.Zero(t, fts, "search-index rows of erased notes")
				require.NoError(t, e.DB.QueryRowContext(ctx, `SELECT count(*) FROM notes_fts WHERE notes_fts MATCH 'zebra'`).Scan(&fts))
				require.Equal(t, 1, fts, "only agent B's note is indexed")
			}

			rcpts := e.MustDo(http.StatusOK, "GET", "/v1/receipts?limit=1000", e.AdminKey, nil).JSON(t)["receipts"].([]any)
			var erased []map[string]any
			for _, r := range rcpts {
				if m := r.(map[string]any); m["action"] == "notes.erase" {
					erased = append(erased, m)
				}
			}
			require.Len(t, erased, 1)
			require.Equal(t, "admin", erased[0]["kind"])
			require.Contains(t, string(e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).Body), `"ok":true`)

			require.Equal(t, activities.NoteErasureResult{}, erase(), "a second erasure finds nothing")
			require.Equal(t, []string{b1}, noteIDs(e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/notes", e.AdminKey, nil).JSON(t)["notes"]))
		})
	}
}
