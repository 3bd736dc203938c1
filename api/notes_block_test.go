package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/notes"
)

const blockPath = "/v1/agent-memory/block"

// AM-4: the block: bounds, order, whole notes, real token counts, byte-identical answers and
// ETags across calls and restarts, 304 on If-None-Match, a new ETag on any change, no
// retired, superseded or expired note.
func TestNoteBlock(t *testing.T) {
	eachClocked(t, func(t *testing.T, e *apptest.Env, clk *clock) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		for _, q := range []string{"?max_tokens=49", "?max_tokens=2001", "?max_tokens=abc", "?tags=Bad", "?view=a%20b"} {
			r := e.Do("GET", blockPath+q, bot, nil)
			require.Equal(t, 400, r.Status, "%s: got %d, want 400", q, r.Status)
		}
		old := create(e, bot, note("Old general", "General advice number one."))
		clk.Add(time.Second)
		refund := create(e, bot, note("Refund", "Refund steps.", "tags", []string{"refund"}))
		clk.Add(time.Second)
		voice := create(e, bot, note("Voice", "Speak slowly.", "tags", []string{"voice"}))
		clk.Add(time.Second)
		edited := create(e, bot, note("Edited", "First text."))
		clk.Add(time.Second)
		edited2 := e.MustDo(http.StatusCreated, "POST", notesPath+"/"+edited+"/versions", bot, map[string]any{"body": "Second text."}).JSON(t)["id"].(string)
		clk.Add(time.Second)
		retired := create(e, bot, note("Retired", "Gone."))
		e.MustDo(http.StatusOK, "POST", notesPath+"/"+retired+"/retire", bot, nil)
		expiring := create(e, bot, note("Expiring", "Soon gone.", "valid_until", clk.Now().Add(time.Hour).Format(time.RFC3339)))

		get := func(q string, headers ...string) apptest.Response {
			return e.Do("GET", blockPath+q, bot, nil, headers...)
		}
		r := get("?max_tokens=2000&tags=refund&view=voice")
		require.Equal(t, 200, r.Status, "%s", r.Body)
		b := r.JSON(t)
		// Tag matches first (refund, voice: same version, older first), then the most revised
		// (edited v2), then the oldest.
		require.Equal(t, []string{refund, voice, edited2, old, expiring}, strs(b["note_ids"]))
		text := b["text"].(string)
		require.True(t, strings.HasPrefix(text, notes.BlockOpen+"\n"+notes.BlockHeader+"\n"), "%q", text)
		require.True(t, strings.HasSuffix(text, notes.BlockClose))
		n, err := notes.CountTokens(text)
		require.NoError(t, err)
		require.Equal(t, n, mustInt(t, b["tokens"]), "tokens count the whole text, wrapper included")
		require.NotContains(t, text, "First text.", "superseded versions never appear")
		require.NotContains(t, text, "Gone.", "retired notes never appear")
		etag := r.Header.Get("ETag")
		require.NotEmpty(t, etag)

		// The same request: the same bytes and ETag; also from a restarted server.
		require.Equal(t, r.Body, get("?max_tokens=2000&tags=refund&view=voice").Body)
		restarted := api.NewServer(e.Deps)
		e2 := *e
		e2.Server = restarted
		r2 := e2.Do("GET", blockPath+"?max_tokens=2000&tags=refund&view=voice", bot, nil)
		require.Equal(t, r.Body, r2.Body)
		require.Equal(t, etag, r2.Header.Get("ETag"))

		nm := get("?max_tokens=2000&tags=refund&view=voice", "If-None-Match", etag)
		require.Equal(t, http.StatusNotModified, nm.Status)
		require.Equal(t, etag, nm.Header.Get("ETag"))
		require.Empty(t, nm.Body)

		// Whole notes only: a small budget delivers a prefix of whole notes.
		small := get("?max_tokens=60&tags=refund&view=voice").JSON(t)
		require.LessOrEqual(t, mustInt(t, small["tokens"]), 60)
		for _, id := range strs(small["note_ids"]) {
			n := e.MustDo(http.StatusOK, "GET", notesPath+"/"+id, bot, nil).JSON(t)
			require.Contains(t, small["text"], n["body"].(string))
		}
		require.Less(t, len(strs(small["note_ids"])), 5)

		// Any change to a delivered note changes the ETag: here only its tags.
		e.MustDo(http.StatusCreated, "POST", notesPath+"/"+old+"/versions", bot, map[string]any{"tags": []string{"general"}})
		r3 := get("?max_tokens=2000&tags=refund&view=voice")
		require.NotEqual(t, etag, r3.Header.Get("ETag"))
		require.Equal(t, 200, get("?max_tokens=2000&tags=refund&view=voice", "If-None-Match", etag).Status)

		// Expired notes leave the block.
		clk.Add(time.Hour)
		require.NotContains(t, strs(get("?max_tokens=2000").JSON(t)["note_ids"]), expiring)
	})
}

func mustInt(t testing.TB, v any) int {
	t.Helper()
	n, err := v.(interface{ Int64() (int64, error) }).Int64()
	require.NoError(t, err)
	return int(n)
}

// AM-4: the block is the same for every customer: it does not depend on who asks beyond the
// agent, and a budget no note fits gives an empty text.
func TestNoteBlockEmpty(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		r := e.MustDo(http.StatusOK, "GET", blockPath, bot, nil)
		require.JSONEq(t, `{"text":"","enabled":true,"note_ids":[],"tokens":0}`, string(r.Body))
		create(e, bot, note("Big", strings.Repeat("word ", 300)))
		r = e.MustDo(http.StatusOK, "GET", blockPath+"?max_tokens=50", bot, nil)
		require.JSONEq(t, `{"text":"","enabled":true,"note_ids":[],"tokens":0}`, string(r.Body), "a note is never cut")
	})
}

// AM-14: search by words and tags on each engine's full-text search, with the block's
// visibility and status rules.
func TestNoteSearch(t *testing.T) {
	eachClocked(t, func(t *testing.T, e *apptest.Env, clk *clock) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		refund := create(e, bot, note("Refund by gift card", "Ask how the customer wants the refund.", "tags", []string{"refund", "orders"}))
		ship := create(e, bot, note("Shipping status", "Check the carrier before promising a date.", "tags", []string{"shipping"}))
		card := create(e, bot, note("Invalid credit card", "Ask them to log out and in; then clear the cookies.", "tags", []string{"site"}))
		pt := create(e, bot, note("Reembolso", "Confirme a compra antes do reembolso.", "tags", []string{"refund"}))
		retired := create(e, bot, note("Refund old way", "Refund by paper check.", "tags", []string{"refund"}))
		e.MustDo(http.StatusOK, "POST", notesPath+"/"+retired+"/retire", bot, nil)
		expiring := create(e, bot, note("Refund promo", "Refund within the promo.", "valid_until", clk.Now().Add(time.Minute).Format(time.RFC3339)))

		search := func(q string) []string {
			return ids(e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/search"+q, bot, nil).JSON(t)["notes"])
		}
		require.ElementsMatch(t, []string{refund, pt, expiring}, search("?q=refund"), "words match titles, bodies and tags")
		require.ElementsMatch(t, []string{refund}, search("?q=refund+gift"), "every word must match")
		require.ElementsMatch(t, []string{card}, search("?q=COOKIES"))
		require.ElementsMatch(t, []string{pt}, search("?q=reembolso"))
		require.ElementsMatch(t, []string{ship}, search("?q=carrier&tags=shipping"))
		require.Empty(t, search("?q=carrier&tags=refund"))
		require.ElementsMatch(t, []string{refund, pt}, search("?tags=refund"))
		require.ElementsMatch(t, []string{refund}, search("?tags=refund,orders"))
		require.Len(t, search("?tags=refund&limit=1"), 1)
		clk.Add(time.Minute)
		require.ElementsMatch(t, []string{refund, pt}, search("?q=refund"), "expired notes leave search")

		for _, q := range []string{"", "?q=%21%21", "?limit=0&q=x", "?limit=51&q=x", "?tags=Bad"} {
			r := e.Do("GET", "/v1/agent-memory/search"+q, bot, nil)
			require.Equal(t, 400, r.Status, "%q: got %d, want 400", q, r.Status)
		}
		other := e.AgentKey("rival-bot", "globex", "agent_memory")
		require.Empty(t, ids(e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/search?q=refund", other, nil).JSON(t)["notes"]))
	})
}

// AM-4, issue 16: the block is built once per note versions and request, and a 304 is
// decided without loading notes; a retire (the only in-place change of a note) still
// changes the bytes and the ETag at once, on this server and on a second one.
func TestNoteBlockCacheFollowsRetire(t *testing.T) {
	eachClocked(t, func(t *testing.T, e *apptest.Env, clk *clock) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		keep := create(e, bot, note("Keep", "Keep this one."))
		gone := create(e, bot, note("Gone", "Retire this one."))
		first := e.MustDo(http.StatusOK, "GET", blockPath, bot, nil)
		etag := first.Header.Get("ETag")
		require.Equal(t, http.StatusNotModified, e.Do("GET", blockPath, bot, nil, "If-None-Match", etag).Status)

		e.MustDo(http.StatusOK, "POST", notesPath+"/"+gone+"/retire", bot, nil)
		e2 := *e
		e2.Server = api.NewServer(e.Deps)
		for _, env := range []*apptest.Env{e, &e2} {
			r := env.Do("GET", blockPath, bot, nil, "If-None-Match", etag)
			require.Equal(t, http.StatusOK, r.Status, "a retire changes the block")
			require.NotEqual(t, etag, r.Header.Get("ETag"))
			require.Equal(t, []string{keep}, strs(r.JSON(t)["note_ids"]))
			require.NotContains(t, r.JSON(t)["text"], "Retire this one.")
		}
	})
}
