package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/notes"
)

// postConcurrently posts bodies[i] with headers[i] (nil for none) at once through e, so the
// note queue commits them in one batch, each member in a savepoint of its own, and returns
// the answers in the order of bodies.
func postConcurrently(e *apptest.Env, key string, bodies []map[string]any, headers [][]string) []apptest.Response {
	got := make([]apptest.Response, len(bodies))
	var wg sync.WaitGroup
	for i, body := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = e.Do("POST", notesPath, key, body, headers[i]...)
		}()
	}
	wg.Wait()
	return got
}

// statusCounts counts answers by status.
func statusCounts(answers []apptest.Response) map[int]int {
	out := map[int]int{}
	for _, r := range answers {
		out[r.Status]++
	}
	return out
}

// Issue 16, AM-7: the kept count of a source's active notes stays the number of its active
// notes, and the cap stays exact, through what a batch refuses after changing the count
// (replays of an Idempotency-Key, a reused one, duplicates, the cap itself: each member's
// savepoint takes its count change back), through expired notes (counted until retired, so
// the count passes the cap while the notes under it do not), through an approval the cap
// refuses, and through an approved edit.
func TestNoteActiveCountThroughRefusalsExpiryAndApprovals(t *testing.T) {
	eachClocked(t, func(t *testing.T, e *apptest.Env, clk *clock) {
		enableNotes(e, map[string]any{"max_notes_per_source": 3})
		bot := writer(e, "tally-bot", "acme")
		exact := func(want int) {
			t.Helper()
			kept, stored := activeCounts(t, e, "tally-bot")
			require.Equal(t, want, stored)
			require.Equal(t, stored, kept, "the kept count is the number of active notes")
		}
		soon := create(e, bot, note("Expiring", "Valid for an hour.", "valid_until", clk.Now().Add(time.Hour).Format(time.RFC3339)))
		lasting := create(e, bot, note("Lasting", "No end."))
		exact(2)

		// One batch with one place left: the same Idempotency-Key three times (one note, two
		// replays) and a duplicate of a stored note.
		idem := []string{"Idempotency-Key", "tally-1"}
		got := postConcurrently(e, bot,
			[]map[string]any{note("Keyed", "Once."), note("Keyed", "Once."), note("Keyed", "Once."), note("Lasting", "No end.")},
			[][]string{idem, idem, idem, nil})
		require.Equal(t, map[int]int{http.StatusCreated: 3, http.StatusOK: 1}, statusCounts(got))
		exact(3)
		// One batch at the cap: a replay, the key reused with another body, a duplicate and
		// three new notes, each refused by the cap after counting itself.
		got = postConcurrently(e, bot,
			[]map[string]any{note("Keyed", "Once."), note("Keyed", "Another body."), note("Lasting", "No end."),
				note("Over 1", "Refused."), note("Over 2", "Refused."), note("Over 3", "Refused.")},
			[][]string{idem, idem, nil, nil, nil, nil})
		require.Equal(t, http.StatusCreated, got[0].Status, "the replay")
		requireError(t, got[1], http.StatusConflict, notes.CodeIdempotencyReuse)
		require.Equal(t, http.StatusOK, got[2].Status, "the duplicate")
		for _, r := range got[3:] {
			requireError(t, r, http.StatusConflict, notes.CodeCapReached)
		}
		exact(3)
		requireError(t, e.Do("POST", notesPath, bot, note("Over 4", "Refused.")), http.StatusConflict, notes.CodeCapReached)
		exact(3)

		// An hour on, the expiring note no longer counts for the cap, though it stays active
		// (and counted) until retired: one more note is stored, the count passes the cap, and
		// the next note is refused by the exact count.
		clk.Add(2 * time.Hour)
		create(e, bot, note("After expiry", "Takes the expired note's place."))
		exact(4)
		requireError(t, e.Do("POST", notesPath, bot, note("Over 5", "Refused.")), http.StatusConflict, notes.CodeCapReached)
		exact(4)
		e.MustDo(http.StatusOK, "POST", notesPath+"/"+soon+"/retire", bot, nil)
		exact(3)
		requireError(t, e.Do("POST", notesPath, bot, note("Over 6", "Refused.")), http.StatusConflict, notes.CodeCapReached)
		exact(3)

		// Proposals: a new note's approval is refused at the cap and leaves the count; after a
		// retirement it is stored. An approved edit supersedes its note: no change.
		enableNotes(e, map[string]any{"max_notes_per_source": 3, "writes": "human_only"})
		pid := e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Proposed", "Approved once there is room.")).JSON(t)["proposal_id"].(string)
		requireError(t, e.Do("POST", "/v1/agent-memory/proposals/"+pid+"/approve", e.AdminKey, nil), http.StatusConflict, notes.CodeCapReached)
		exact(3)
		e.MustDo(http.StatusOK, "POST", notesPath+"/"+lasting+"/retire", bot, nil)
		exact(2)
		e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/proposals/"+pid+"/approve", e.AdminKey, nil)
		exact(3)
		ids := listIDs(e, bot, "?status=active")
		require.Len(t, ids, 3)
		edit := e.MustDo(http.StatusAccepted, "POST", notesPath+"/"+ids[0]+"/versions", bot, map[string]any{"title": "Edited"}).JSON(t)["proposal_id"].(string)
		e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/proposals/"+edit+"/approve", e.AdminKey, nil)
		exact(3)
		require.NotContains(t, listIDs(e, bot, "?status=active"), ids[0], "the edited version is retired")
	})
}

// Issue 16, AM-7, AM-12: edits and retirements of a source's notes over two replicas racing
// the erasure of the source: whichever commits first, the kept count stays the number of the
// source's active notes (none once the erasure has run after them), and new notes after it
// are counted from there.
func TestNoteActiveCountEditsRetiresRacingErasure(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		bot := writer(e, "erased-bot", "acme")
		var ids []string
		for i := range 8 {
			ids = append(ids, create(e, bot, note(fmt.Sprintf("Doomed %d", i), "Erased soon.")))
		}
		exact := func() int {
			t.Helper()
			kept, stored := activeCounts(t, e, "erased-bot")
			require.Equal(t, stored, kept, "the kept count is the number of active notes")
			return stored
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := e.Deps.Compliance.EraseNotes(context.Background(), e.SpaceID, "erased-bot", "admin")
			require.NoError(t, err)
		})
		for i, id := range ids {
			wg.Go(func() {
				var r apptest.Response
				if i%2 == 0 {
					r = replica.Do("POST", notesPath+"/"+id+"/versions", bot, map[string]any{"title": fmt.Sprintf("Edited %d", i)})
				} else {
					r = e.Do("POST", notesPath+"/"+id+"/retire", bot, nil)
				}
				require.Contains(t, []int{http.StatusCreated, http.StatusOK, http.StatusNotFound, http.StatusConflict}, r.Status, "%s", r.Body)
			})
		}
		wg.Wait()
		left := exact()
		require.Zero(t, left, "an edit committed before the erasure is erased with its note; one after it finds no note")
		create(e, bot, note("After", "Counted from what is left."))
		require.Equal(t, left+1, exact())
	})
}
