package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin/render"
	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/notes"
)

// Issue 16: each replica answers the block (a 304 too) from the answers it keeps in memory,
// and those are exact across replicas: a second replica, wired on its own over the same
// database, holds the answer before each change made through the first; its very next block
// read shows a retire, a new note, an approved proposal and an erasure, and refuses a key
// revoked on the first.
func TestBlockExactAcrossReplicas(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		keep := create(e, bot, note("Keep", "Keep this one."))
		gone := create(e, bot, note("Gone", "Retire this one."))
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		both := []*apptest.Env{e, replica}

		// held reads the block on both replicas twice (the second from memory, a 304) and
		// returns its ETag and note ids, the same on both.
		held := func() (string, []string) {
			t.Helper()
			var etag string
			var ids []string
			for _, srv := range both {
				r := srv.MustDo(http.StatusOK, "GET", blockPath, bot, nil)
				if etag == "" {
					etag, ids = r.Header.Get("ETag"), strs(r.JSON(t)["note_ids"])
				}
				require.Equal(t, etag, r.Header.Get("ETag"), "both replicas give the same answer")
				require.Equal(t, http.StatusNotModified, srv.Do("GET", blockPath, bot, nil, "If-None-Match", etag).Status)
			}
			return etag, ids
		}
		// changed requires that the next conditional read on the replica, then on e, is a 200
		// with a new ETag and exactly want.
		changed := func(etag string, want []string) {
			t.Helper()
			for _, srv := range []*apptest.Env{replica, e} {
				r := srv.Do("GET", blockPath, bot, nil, "If-None-Match", etag)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				require.NotEqual(t, etag, r.Header.Get("ETag"))
				require.ElementsMatch(t, want, strs(r.JSON(t)["note_ids"]))
			}
		}

		etag, ids := held()
		require.ElementsMatch(t, []string{keep, gone}, ids)
		e.MustDo(http.StatusOK, "POST", notesPath+"/"+gone+"/retire", bot, nil)
		changed(etag, []string{keep})

		etag, _ = held()
		added := create(e, bot, note("Added", "A new one."))
		changed(etag, []string{keep, added})

		// A proposal approved through the first replica.
		enableNotes(e, map[string]any{"writes": "human_only"})
		etag, _ = held() // the documents changed: a new answer, held again
		pid := e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Proposed", "Approved later.")).JSON(t)["proposal_id"].(string)
		require.Equal(t, http.StatusNotModified, replica.Do("GET", blockPath, bot, nil, "If-None-Match", etag).Status, "a proposal is not a note")
		approved := e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/proposals/"+pid+"/approve", e.AdminKey, nil).JSON(t)["id"].(string)
		changed(etag, []string{keep, added, approved})

		// The agent's notes erased (by any process: here straight through the service).
		etag, _ = held()
		_, err := e.Deps.Compliance.EraseNotes(context.Background(), e.SpaceID, "shop-bot", "admin")
		require.NoError(t, err)
		changed(etag, []string{})

		// The key revoked on the first replica: refused on the next read of each.
		etag, _ = held()
		var keyID string
		require.NoError(t, e.DB.NewRaw("SELECT id FROM api_keys WHERE hash = ?", auth.HashKey(bot)).Scan(context.Background(), &keyID))
		e.MustDo(http.StatusNoContent, http.MethodDelete, "/v1/keys/"+keyID, e.AdminKey, nil)
		for _, srv := range []*apptest.Env{replica, e} {
			requireError(t, srv.Do("GET", blockPath, bot, nil, "If-None-Match", etag), http.StatusUnauthorized, "invalid_key")
		}
	})
}

// Issue 16: an answer kept in memory ends at the first valid_until of the notes it was
// decided on: with nothing written, the next read after that instant leaves the note out.
func TestBlockAnswerEndsWithValidUntil(t *testing.T) {
	eachClocked(t, func(t *testing.T, e *apptest.Env, clk *clock) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		keep := create(e, bot, note("Keep", "Keep this one."))
		soon := create(e, bot, note("Soon", "Valid for an hour.", "valid_until", clk.Now().Add(time.Hour).Format(time.RFC3339)))
		r := e.MustDo(http.StatusOK, "GET", blockPath, bot, nil)
		require.ElementsMatch(t, []string{keep, soon}, strs(r.JSON(t)["note_ids"]))
		etag := r.Header.Get("ETag")
		clk.Add(59 * time.Minute)
		require.Equal(t, http.StatusNotModified, e.Do("GET", blockPath, bot, nil, "If-None-Match", etag).Status)
		clk.Add(time.Minute)
		r = e.Do("GET", blockPath, bot, nil, "If-None-Match", etag)
		require.Equal(t, http.StatusOK, r.Status, "the note's valid_until has come")
		require.Equal(t, []string{keep}, strs(r.JSON(t)["note_ids"]))
	})
}

// Issue 16: a block's 200 body, encoded once per block and kept with its answer, is byte for
// byte what Gin's PureJSON writes for the block (HTML characters and U+2028 unescaped, a
// final newline), with the same Content-Type, on the read that builds the block, on the
// reads answered from memory, and on another replica; when a note changes the body changes
// with the ETag, and is again PureJSON's.
func TestBlockBodyIsPureJSON(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		create(e, bot, note("Terms & <conditions>", "Quote \"this\" & that: a < b > c, then\u2028go on; café 日本."))
		gone := create(e, bot, note("Gone", "Retire this one."))
		replica := &apptest.Env{T: t, Server: newReplica(e)}

		// pure is what PureJSON writes for the block answered in r.
		pure := func(r apptest.Response) (string, []byte) {
			t.Helper()
			var b notes.Block
			require.NoError(t, json.Unmarshal(r.Body, &b))
			w := httptest.NewRecorder()
			require.NoError(t, render.PureJSON{Data: b}.Render(w))
			return w.Header().Get("Content-Type"), w.Body.Bytes()
		}
		var first apptest.Response
		for _, srv := range []*apptest.Env{e, e, replica, replica} {
			r := srv.MustDo(http.StatusOK, "GET", blockPath, bot, nil)
			contentType, body := pure(r)
			require.Equal(t, string(body), string(r.Body))
			require.Equal(t, contentType, r.Header.Get("Content-Type"))
			require.Contains(t, string(r.Body), "Terms & <conditions>", "HTML characters as they are")
			if first.Body == nil {
				first = r
			}
			require.Equal(t, first.Body, r.Body)
			require.Equal(t, first.Header.Get("ETag"), r.Header.Get("ETag"))
		}

		e.MustDo(http.StatusOK, "POST", notesPath+"/"+gone+"/retire", bot, nil)
		for _, srv := range []*apptest.Env{replica, e} {
			r := srv.MustDo(http.StatusOK, "GET", blockPath, bot, nil)
			_, body := pure(r)
			require.Equal(t, string(body), string(r.Body))
			require.NotEqual(t, first.Body, r.Body)
			require.NotEqual(t, first.Header.Get("ETag"), r.Header.Get("ETag"))
			require.NotContains(t, string(r.Body), "Retire this one.")
		}
	})
}
