package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/proposals"
)

// Issue 29 §3: an admin hard-deletes one note with all its versions: gone from reads, lists,
// search and the block (the cached block of this replica and of another one at its next
// read), with the proposals that held its text, receipted and evented by id; the other notes
// stay; the store keeps none of its text (SQLite's full-text tables included).
func TestNoteHardDelete(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, map[string]any{"writes": "human_only"})
		bot := writer(e, "shop-bot", "acme")
		integ := e.PersonKey("loader", "integration")
		keep := create(e, integ, note("Greeting", "Greet the customer warmly.", "source_id", "shop-bot", "tags", []string{"refund"}))

		// Version 1 from an approved proposal, version 2 from an approved edit, and a pending
		// edit proposal: all hold the note's text.
		pid := e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Refund", "Quokkaberry refunds need the order id.", "tags", []string{"refund"})).JSON(t)["proposal_id"].(string)
		v1 := e.MustDo(http.StatusCreated, "POST", proposalsPath+"/"+pid+"/approve", e.AdminKey, nil).JSON(t)["id"].(string)
		eid := e.MustDo(http.StatusAccepted, "POST", notesPath+"/"+v1+"/versions", bot, map[string]any{"body": "Quokkaberry refunds need the order id and reason."}).JSON(t)["proposal_id"].(string)
		v2 := e.MustDo(http.StatusCreated, "POST", proposalsPath+"/"+eid+"/approve", e.AdminKey, nil).JSON(t)["id"].(string)
		pending := e.MustDo(http.StatusAccepted, "POST", notesPath+"/"+v2+"/versions", bot, map[string]any{"body": "Quokkaberry refunds: order id, reason, photo."}).JSON(t)["proposal_id"].(string)

		replica := &apptest.Env{T: t, Server: newReplica(e)}
		var etags []string
		for _, srv := range []*apptest.Env{e, replica} {
			b := srv.MustDo(http.StatusOK, "GET", blockPath+"?tags=refund", bot, nil)
			require.ElementsMatch(t, []string{keep, v2}, strs(b.JSON(t)["note_ids"]))
			require.Equal(t, http.StatusNotModified, srv.Do("GET", blockPath+"?tags=refund", bot, nil, "If-None-Match", b.Header.Get("ETag")).Status, "held in memory")
			etags = append(etags, b.Header.Get("ETag"))
		}
		require.Contains(t, ids(e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/search?q=quokkaberry", bot, nil).JSON(t)["notes"]), v2)

		requireError(t, e.Do("DELETE", notesPath+"/"+v1, bot, nil), http.StatusForbidden, "role_required")
		requireError(t, e.Do("DELETE", notesPath+"/"+v1, integ, nil), http.StatusForbidden, "role_required")
		requireError(t, e.Do("DELETE", notesPath+"/note_nope", e.AdminKey, nil), http.StatusNotFound, "note_not_found")
		e.MustDo(http.StatusOK, "GET", notesPath+"/"+v1, bot, nil) // refusals changed nothing

		// Deleting by an old version's id deletes the whole note.
		res := e.MustDo(http.StatusOK, "DELETE", notesPath+"/"+v1, e.AdminKey, nil).JSON(t)
		require.Equal(t, []string{v1, v2}, strs(res["note_ids"]))
		require.ElementsMatch(t, []string{pid, eid, pending}, strs(res["proposal_ids"]))

		for _, id := range []string{v1, v2} {
			requireError(t, e.Do("GET", notesPath+"/"+id, bot, nil), http.StatusNotFound, "note_not_found")
		}
		for _, id := range []string{pid, eid, pending} {
			requireError(t, e.Do("GET", proposalsPath+"/"+id, e.AdminKey, nil), http.StatusNotFound, "proposal_not_found")
		}
		require.Equal(t, []string{keep}, listIDs(e, bot, ""))
		require.Empty(t, listIDs(e, bot, "?status=retired"), "the retired version went too")
		require.Empty(t, ids(e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/search?q=quokkaberry", bot, nil).JSON(t)["notes"]))
		for i, srv := range []*apptest.Env{e, replica} {
			b := srv.Do("GET", blockPath+"?tags=refund", bot, nil, "If-None-Match", etags[i])
			require.Equal(t, http.StatusOK, b.Status, "a replica answered 304 for a block holding a deleted note")
			require.Equal(t, []string{keep}, strs(b.JSON(t)["note_ids"]))
			require.NotContains(t, strings.ToLower(string(b.Body)), "quokkaberry")
		}
		requireError(t, e.Do("DELETE", notesPath+"/"+v2, e.AdminKey, nil), http.StatusNotFound, "note_not_found")

		rc := receiptsOf(e, proposals.ActionNoteDelete)
		require.Len(t, rc, 1)
		require.Equal(t, res["receipt_id"], rc[0]["id"])
		require.ElementsMatch(t, []string{v1, v2, pid, eid, pending}, strs(rc[0]["object_ids"]))
		evs := eventsOf(e, events.TypeNoteDeleted)
		require.Len(t, evs, 2)
		require.ElementsMatch(t, []string{v1, v2}, []string{evs[0]["note_id"].(string), evs[1]["note_id"].(string)})
		require.Equal(t, "shop-bot", evs[0]["source_id"])
		require.NotContains(t, strings.ToLower(dbText(t, e)), "quokkaberry", "the note's text is still stored")

		// The source's count of active notes lost the deleted note: a new one is stored.
		require.NotEmpty(t, create(e, integ, note("After", "Written after the delete.", "source_id", "shop-bot")))
	})
}
