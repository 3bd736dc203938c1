package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// AM-12: GET /v1/agent-memory/export (admin) returns every note version (retired ones too)
// and every proposal of the space, with a notes.export receipt; other roles and agents 403.
func TestNoteExport(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		v1 := create(e, bot, note("Refunds", "Ask for the order id first."))
		v2 := e.MustDo(http.StatusCreated, "POST", notesPath+"/"+v1+"/versions", bot, map[string]any{"body": "Ask for the order id, then the reason."}).JSON(t)["id"].(string)
		enableNotes(e, map[string]any{"writes": "human_only"})
		pid := e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Pitfall", "Never promise a date.")).JSON(t)["proposal_id"].(string)
		enableNotes(e, map[string]any{"enabled": false})

		requireError(t, e.Do("GET", "/v1/agent-memory/export", bot, nil), http.StatusForbidden, "role_required")
		requireError(t, e.Do("GET", "/v1/agent-memory/export", e.PersonKey("rev", "reviewer"), nil), http.StatusForbidden, "role_required")

		r := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/export", e.AdminKey, nil)
		require.Contains(t, r.Header.Get("Content-Disposition"), "attachment")
		x := r.JSON(t)
		require.Equal(t, e.SpaceID, x["space_id"])
		require.NotEmpty(t, x["exported_at"])
		notes := x["notes"].([]any)
		require.Equal(t, []string{v1, v2}, ids(notes), "every version, by lineage and version")
		require.Equal(t, "retired", notes[0].(map[string]any)["status"])
		require.Equal(t, "Ask for the order id, then the reason.", notes[1].(map[string]any)["body"])
		props := x["proposals"].([]any)
		require.Equal(t, []string{pid}, ids(props))
		require.Equal(t, "Never promise a date.", props[0].(map[string]any)["note"].(map[string]any)["body"])
		rc := receiptsOf(e, "notes.export")
		require.Len(t, rc, 1)
		require.Equal(t, map[string]any{"notes": json.Number("2"), "proposals": json.Number("1")}, rc[0]["detail"])
	})
}
