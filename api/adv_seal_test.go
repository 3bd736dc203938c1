package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/models"
)

// Issue 29 §1, attacked: a note's remembered answer (note_requests) taken before the note's
// hard delete, as a restored backup holds it, is sealed: it names no title or body in clear,
// and its Idempotency-Key replay is a clean 404 note_not_found (the note's key is gone), not
// the erased note; without the old row, the same key writes the note again as new.
func TestAdvSealNoteReplayAfterDelete(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		body := note("Stock", "Follow next_cursor.")
		id := e.MustDo(http.StatusCreated, "POST", notesPath, bot, body, "Idempotency-Key", "k1").JSON(t)["id"].(string)
		var old models.NoteRequest
		require.NoError(t, e.DB.NewSelect().Model(&old).Where("space_id = ?", e.SpaceID).Scan(t.Context()))
		require.NotContains(t, old.Response, "next_cursor", "the remembered answer holds the note's body in clear")

		e.MustDo(http.StatusOK, "DELETE", notesPath+"/"+id, e.AdminKey, nil)
		_, err := e.DB.NewInsert().Model(&old).Exec(t.Context()) // the row as a backup before the delete holds it
		require.NoError(t, err)
		r := e.Do("POST", notesPath, bot, body, "Idempotency-Key", "k1")
		requireError(t, r, http.StatusNotFound, "note_not_found")
		require.False(t, strings.Contains(string(r.Body), "next_cursor"), "got %s", r.Body)

		_, err = e.DB.NewDelete().Model(&old).WherePK().Exec(t.Context())
		require.NoError(t, err)
		again := e.MustDo(http.StatusCreated, "POST", notesPath, bot, body, "Idempotency-Key", "k1")
		require.Empty(t, again.Header.Get("Idempotent-Replayed"))
		require.NotEqual(t, id, again.JSON(t)["id"])
	})
}

// Issue 29 §1/§3, attacked across two replicas: an object-scope state sealed under its own
// key (erasure.StateKeyID) is deleted on one replica while the other holds the key it opened
// it with; the next write on that other replica, and on the first, reads back on both as
// written (never sealed under the destroyed key), and the old sealed row no longer opens.
func TestAdvSealStateWriteAfterDeleteAcrossReplicas(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableWM(e, typesDoc(wmType("shop-bot", "object", 0, nil)))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		obj := map[string]any{"kind": "object", "id": "order:shop:Zx81"}
		mustStore(e, key, map[string]any{"scope": obj, "body": map[string]any{"step": "greet", "offer": "erased-offer-9931"}})
		require.Equal(t, "erased-offer-9931", read(replica, key, obj, "").Body["offer"])
		var old models.AgentState
		require.NoError(t, e.DB.NewSelect().Model(&old).Where("space_id = ?", e.SpaceID).Scan(t.Context()))
		require.NotContains(t, string(old.Body), "erased-offer-9931", "the state is stored in clear")

		e.MustDo(http.StatusOK, "POST", stateDeletePath, key, map[string]any{"scope": obj})
		require.Zero(t, read(replica, key, obj, "").Version)
		v := mustStore(replica, key, map[string]any{"scope": obj, "body": map[string]any{"step": "sizes"}})
		for _, env := range []*apptest.Env{e, replica} {
			got := read(env, key, obj, "")
			require.Equal(t, v, got.Version)
			require.Equal(t, map[string]any{"step": "sizes"}, got.Body)
		}
		v = mustStore(e, key, map[string]any{"scope": obj, "body": map[string]any{"step": "checkout"}})
		for _, env := range []*apptest.Env{e, replica} {
			got := read(env, key, obj, "")
			require.Equal(t, v, got.Version)
			require.Equal(t, map[string]any{"step": "checkout"}, got.Body)
		}

		// The row as a backup before the delete holds it no longer opens under the new key.
		_, err := e.DB.NewDelete().Model((*models.AgentState)(nil)).Where("space_id = ?", e.SpaceID).Exec(t.Context())
		require.NoError(t, err)
		_, err = e.DB.NewInsert().Model(&old).Exec(t.Context())
		require.NoError(t, err)
		for _, env := range []*apptest.Env{e, replica} {
			got := read(env, key, obj, "")
			require.Zero(t, got.Version, "the erased state came back from the old row: %v", got.Body)
			require.NotContains(t, got.Raw, "erased-offer-9931")
		}
	})
}
