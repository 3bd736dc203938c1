package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
)

// tableCount counts the rows of table in e's database.
func tableCount(t *testing.T, e *apptest.Env, table string) int {
	t.Helper()
	n, err := e.DB.NewSelect().Table(table).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

// writeCounts is what a stored write adds to: notes, receipts and outbox events.
func writeCounts(t *testing.T, e *apptest.Env) [3]int {
	t.Helper()
	return [3]int{tableCount(t, e, "notes"), tableCount(t, e, "receipts"), tableCount(t, e, "outbox")}
}

// Issue 17 §2: the same note again (other white space, other tag order) answers 200 with the
// existing note and duplicate_of, and stores nothing (no note, receipt or outbox event);
// another case, another visibility or a retired original make a new note.
func TestNoteDuplicateAnswersExistingNote(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		first := e.MustDo(http.StatusCreated, "POST", notesPath, bot,
			note("Refunds", "Ask for the order.\nThen refund.", "tags", []string{"refund", "billing"})).JSON(t)
		id := first["id"].(string)
		before := writeCounts(t, e)

		r := e.MustDo(http.StatusOK, "POST", notesPath, bot,
			note("  Refunds ", "Ask  for the order.\n\n Then refund.", "tags", []string{"billing", "refund"}, "visibility", "source"))
		dup := r.JSON(t)
		require.Equal(t, id, dup["duplicate_of"])
		require.Empty(t, r.Header.Get("Idempotent-Replayed"))
		delete(dup, "duplicate_of")
		require.Equal(t, first, dup, "the existing note, as the 201 showed it")
		require.Equal(t, before, writeCounts(t, e), "nothing stored: notes, receipts, outbox")

		// Not duplicates: case, visibility, another agent's identical note.
		create(e, bot, note("refunds", "Ask for the order.\nThen refund.", "tags", []string{"refund", "billing"}))
		create(e, bot, note("Refunds", "Ask for the order.\nThen refund.", "tags", []string{"refund", "billing"}, "visibility", "space"))
		other := create(e, writer(e, "help-bot", "acme"), note("Refunds", "Ask for the order.\nThen refund.", "tags", []string{"refund", "billing"}))
		require.NotEqual(t, id, other)

		// A person writing for the agent meets the same rule.
		integ := e.PersonKey("loader", "integration")
		r = e.MustDo(http.StatusOK, "POST", notesPath, integ,
			note("Refunds", "Ask for the order. Then refund.", "tags", []string{"refund", "billing"}, "source_id", "shop-bot"))
		require.Equal(t, id, r.JSON(t)["duplicate_of"])

		// Once the original is retired, the same note is new again.
		e.MustDo(http.StatusOK, "POST", notesPath+"/"+id+"/retire", bot, nil)
		again := create(e, bot, note("Refunds", "Ask for the order.\nThen refund.", "tags", []string{"refund", "billing"}))
		require.NotEqual(t, id, again)
	})
}

// At the hourly limit (AM-7) and at the cap a duplicate still answers 200 duplicate_of (it
// stores nothing, so it does not count), while a new note is refused.
func TestNoteDuplicateAtRateLimitAndCap(t *testing.T) {
	eachClocked(t, func(t *testing.T, e *apptest.Env, clk *clock) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		var first string
		for i := range 20 {
			id := create(e, bot, note(fmt.Sprintf("Note %d", i), "Body."))
			if i == 0 {
				first = id
			}
			clk.Add(time.Second)
		}
		requireError(t, e.Do("POST", notesPath, bot, note("Note 20", "Body.")), 429, "note_rate_limited")
		for range 3 {
			r := e.MustDo(http.StatusOK, "POST", notesPath, bot, note("Note 0", "Body."))
			require.Equal(t, first, r.JSON(t)["duplicate_of"])
		}
		requireError(t, e.Do("POST", notesPath, bot, note("Note 20", "Body.")), 429, "note_rate_limited")

		// The cap: 20 active notes, cap 20; the limit's hour has passed.
		enableNotes(e, map[string]any{"max_notes_per_source": 20})
		clk.Add(time.Hour)
		requireError(t, e.Do("POST", notesPath, bot, note("Note 20", "Body.")), 409, "note_cap_reached")
		r := e.MustDo(http.StatusOK, "POST", notesPath, bot, note("Note 0", "Body."))
		require.Equal(t, first, r.JSON(t)["duplicate_of"])
	})
}

// Idempotency-Key is unchanged: a replay answers the first answer (201, replayed); a new key
// on a duplicate answers 200 duplicate_of and is not remembered, so its retry is checked
// again.
func TestNoteDuplicateAndIdempotencyKey(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		body := note("Stock", "Follow next_cursor.")
		id := e.MustDo(http.StatusCreated, "POST", notesPath, bot, body, "Idempotency-Key", "k1").JSON(t)["id"]
		r := e.MustDo(http.StatusCreated, "POST", notesPath, bot, body, "Idempotency-Key", "k1")
		require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
		require.Equal(t, id, r.JSON(t)["id"])
		require.NotContains(t, r.JSON(t), "duplicate_of")
		for range 2 {
			r = e.MustDo(http.StatusOK, "POST", notesPath, bot, body, "Idempotency-Key", "k2")
			require.Empty(t, r.Header.Get("Idempotent-Replayed"))
			require.Equal(t, id, r.JSON(t)["duplicate_of"])
		}
		n, err := e.DB.NewSelect().Table("note_requests").Count(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "only k1's stored answer is remembered")
	})
}

// Two (several) identical writes at once store one note: one 201, the others 200
// duplicate_of that note.
func TestNoteDuplicateConcurrentWritesStoreOne(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		const n = 4
		var wg sync.WaitGroup
		got := make([]apptest.Response, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = e.Do("POST", notesPath, bot, note("Sizes", "Sizes run small in the kids line."))
			}()
		}
		wg.Wait()
		created, dups := "", 0
		for _, r := range got {
			switch r.Status {
			case http.StatusCreated:
				require.Empty(t, created, "a second 201: %s", r.Body)
				created = r.JSON(t)["id"].(string)
			case http.StatusOK:
				dups++
			default:
				t.Fatalf("got %d, want 201 or 200: %s", r.Status, r.Body)
			}
		}
		require.NotEmpty(t, created)
		require.Equal(t, n-1, dups)
		for _, r := range got {
			if r.Status == http.StatusOK {
				require.Equal(t, created, r.JSON(t)["duplicate_of"])
			}
		}
		require.Equal(t, 1, tableCount(t, e, "notes"))
	})
}

// Under writes: human_only a duplicate of an active note answers that note; no proposal.
func TestNoteDuplicateUnderHumanOnly(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		bot := writer(e, "shop-bot", "acme")
		id := create(e, bot, note("Sizes", "Sizes run small."))
		enableNotes(e, map[string]any{"writes": "human_only"})
		r := e.MustDo(http.StatusOK, "POST", notesPath, bot, note("Sizes", "Sizes run small."))
		require.Equal(t, id, r.JSON(t)["duplicate_of"])
		require.Equal(t, 0, tableCount(t, e, "note_proposals"))
		e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Sizes", "Sizes run large."))
	})
}

// MCP remember: the same note again answers status duplicate with the existing note's id
// (note_id and duplicate_of), stores nothing, and still answers at the hourly limit.
func TestMCPRememberDuplicate(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		url := serveAPI(t, e)
		enableNotes(e, nil)
		cs := mcpSession(t, url, writer(e, "shop-bot", "acme-ai"))
		args := map[string]any{"kind": "procedure", "title": "Step 0", "body": "Check the stock before offering a size.", "tags": []string{"stock"}}
		isErr, out := callTool(t, cs, api.ToolRemember, args)
		require.False(t, isErr, "answer: %v", out)
		require.Equal(t, "stored", out["status"])
		id := out["note_id"].(string)
		before := writeCounts(t, e)

		isErr, out = callTool(t, cs, api.ToolRemember, map[string]any{"kind": "procedure", "title": "Step 0 ", "body": "Check the stock  before offering a size.", "tags": []string{"stock"}})
		require.False(t, isErr, "answer: %v", out)
		require.Equal(t, "duplicate", out["status"])
		require.Equal(t, id, out["note_id"])
		require.Equal(t, id, out["duplicate_of"])
		require.Equal(t, before, writeCounts(t, e))

		for i := 1; i < 20; i++ {
			isErr, out = callTool(t, cs, api.ToolRemember, map[string]any{"kind": "procedure", "title": fmt.Sprintf("Step %d", i), "body": "Check the stock before offering a size."})
			require.False(t, isErr, "write %d: %v", i, out)
		}
		isErr, out = callTool(t, cs, api.ToolRemember, map[string]any{"kind": "procedure", "title": "Step 20", "body": "Check the stock before offering a size."})
		require.True(t, isErr)
		require.Equal(t, "note_rate_limited", out["error"].(map[string]any)["code"])
		isErr, out = callTool(t, cs, api.ToolRemember, args)
		require.False(t, isErr, "at the limit: %v", out)
		require.Equal(t, "duplicate", out["status"])
		require.Equal(t, id, out["duplicate_of"])
	})
}
