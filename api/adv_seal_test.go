package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api/apitest"
	"github.com/agentmemory/agentmemory/models"
)

// Issue 29 §1, attacked: a note's remembered answer (note_requests) taken before the note's
// hard delete, as a restored backup holds it, is sealed: it names no title or body in clear,
// and its Idempotency-Key replay is a clean 404 note_not_found (the note's key is gone), not
// the erased note; without the old row, the same key writes the note again as new.
func TestAdvSealNoteReplayAfterDelete(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
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
