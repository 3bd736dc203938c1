package compliance_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/compliance"
)

// TestNotesRetention (issue 34 §1): with retention.notes "30d" the sweep's notes phase retires
// the active notes not revised for 30 days, with a note.retire receipt by "system" (reason
// retention), and takes them off the notes cap's count; a note revised since stays active,
// and a space without retention.notes (the default) keeps its old notes. Both databases.
func TestNotesRetention(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}, "retention": map[string]any{"notes": "30d"}})
		_, otherAdmin := e.NewSpace("no-retention", true)
		e.MustDo(http.StatusOK, "PUT", "/v1/documents/features", otherAdmin, map[string]any{"agent_memory": map[string]any{"enabled": true}})
		bot := e.AgentKey("shop-bot", "acme", "agent_memory", "agent_memory:write")
		otherBot := e.MustDo(http.StatusCreated, "POST", "/v1/keys", otherAdmin, map[string]any{"kind": "agent", "agent": "shop-bot", "vendor": "acme",
			"scopes": []string{"agent_memory", "agent_memory:write"}}).JSON(t)["key"].(string)
		note := func(key, title string) string {
			r := e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", key, map[string]any{"kind": "procedure",
				"title": title, "body": "Validate the purchase with the order number first.", "tags": []string{"returns"}})
			return r.JSON(t)["id"].(string)
		}
		old, fresh, otherOld := note(bot, "Old advice"), note(bot, "Fresh advice"), note(otherBot, "Old elsewhere")
		_, err := e.DB.ExecContext(ctx, `UPDATE notes SET updated_at = ? WHERE id IN (?, ?)`, time.Now().Add(-31*24*time.Hour), old, otherOld)
		require.NoError(t, err)
		_, err = e.DB.ExecContext(ctx, `UPDATE notes SET updated_at = ? WHERE id = ?`, time.Now().Add(-29*24*time.Hour), fresh)
		require.NoError(t, err)

		out, err := e.Deps.Compliance.SweepBatch(ctx, "", compliance.PhaseNotes, "", 100)
		require.NoError(t, err)
		require.True(t, out.Done)
		require.Equal(t, 1, out.Removed)
		status := func(id string) string {
			var s string
			require.NoError(t, e.DB.NewRaw(`SELECT status FROM notes WHERE id = ?`, id).Scan(ctx, &s))
			return s
		}
		require.Equal(t, "retired", status(old))
		require.Equal(t, "active", status(fresh), "revised 29 days ago: kept")
		require.Equal(t, "active", status(otherOld), "retention.notes is off by default")
		var active int64
		require.NoError(t, e.DB.NewRaw(`SELECT SUM(active) FROM note_source_counts WHERE space_id = ?`, e.SpaceID).Scan(ctx, &active))
		require.Equal(t, int64(1), active, "the cap's count follows")
		var receipts int
		require.NoError(t, e.DB.NewRaw(`SELECT count(*) FROM receipts WHERE space_id = ? AND action = 'note.retire' AND actor_key_id = 'system'`, e.SpaceID).Scan(ctx, &receipts))
		require.Equal(t, 1, receipts)

		again, err := e.Deps.Compliance.SweepBatch(ctx, "", compliance.PhaseNotes, "", 100)
		require.NoError(t, err)
		require.Equal(t, 0, again.Removed, "a second sweep retires nothing more")
	})
}
