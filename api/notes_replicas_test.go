package api_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/notes"
)

// postAll sends every body at once, alternately through e and replica (two API servers with
// their own pools on one database), and returns how many answered each status.
func postAll(t *testing.T, e, replica *apptest.Env, key string, bodies []map[string]any) map[int]int {
	t.Helper()
	got := make([]apptest.Response, len(bodies))
	var wg sync.WaitGroup
	for i, body := range bodies {
		srv := e
		if i%2 == 1 {
			srv = replica
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = srv.Do("POST", notesPath, key, body)
		}()
	}
	wg.Wait()
	counts := map[int]int{}
	for _, r := range got {
		counts[r.Status]++
	}
	return counts
}

// Issue 16: note writes of one source racing over two replicas on one database keep the
// hourly limit, the cap and duplicate detection exact (AM-7, issue 17 §2): 30 distinct notes
// of an agent store exactly RateLimit; 12 distinct notes under a cap of 5 store exactly 5;
// 6 identical notes store one.
func TestNoteLimitsExactAcrossReplicas(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		replica := &apptest.Env{T: t, Server: newReplica(e)}

		bot := writer(e, "shop-bot", "acme")
		var bodies []map[string]any
		for i := range notes.RateLimit + 10 {
			bodies = append(bodies, note(fmt.Sprintf("Limit %d", i), "Body."))
		}
		counts := postAll(t, e, replica, bot, bodies)
		require.Equal(t, map[int]int{http.StatusCreated: notes.RateLimit, http.StatusTooManyRequests: 10}, counts)

		// The cap, written by a person for another agent (no hourly limit for people).
		enableNotes(e, map[string]any{"max_notes_per_source": 5})
		writer(e, "cap-bot", "acme")
		loader := e.PersonKey("loader", "integration")
		bodies = nil
		for i := range 12 {
			bodies = append(bodies, note(fmt.Sprintf("Cap %d", i), "Body.", "source_id", "cap-bot"))
		}
		counts = postAll(t, e, replica, loader, bodies)
		require.Equal(t, map[int]int{http.StatusCreated: 5, http.StatusConflict: 7}, counts)

		// Duplicates: another agent, one note six times.
		enableNotes(e, nil)
		dup := writer(e, "dup-bot", "acme")
		bodies = nil
		for range 6 {
			bodies = append(bodies, note("Sizes", "Sizes run small in the kids line."))
		}
		counts = postAll(t, e, replica, dup, bodies)
		require.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusOK: 5}, counts)
	})
}

// activeCounts returns source's count of active notes in e's space as the cap's bound keeps it
// (note_source_counts; 0 without a row) and as the notes are (status active).
func activeCounts(t *testing.T, e *apptest.Env, source string) (kept, stored int) {
	t.Helper()
	ctx := context.Background()
	err := e.DB.NewRaw("SELECT active FROM note_source_counts WHERE space_id = ? AND source_id = ?", e.SpaceID, source).Scan(ctx, &kept)
	if !errors.Is(err, sql.ErrNoRows) {
		require.NoError(t, err)
	}
	require.NoError(t, e.DB.NewRaw("SELECT count(*) FROM notes WHERE space_id = ? AND source_id = ? AND status = 'active'",
		e.SpaceID, source).Scan(ctx, &stored))
	return kept, stored
}

// Issue 16, AM-7: a source's count of active notes, which spares the cap's count while the
// source is under the cap, stays the number of its active notes through writes racing over
// two replicas (own pools, one database), edits, retirements through either replica, an
// approved proposal and an erasure racing writes of the source; and the cap stays exact once
// the count reaches it (exactly the free places are stored).
func TestNoteActiveCountExactAcrossReplicas(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableNotes(e, nil)
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		bot := writer(e, "count-bot", "acme")
		loader := e.PersonKey("loader", "integration")
		exact := func(want int) {
			t.Helper()
			kept, stored := activeCounts(t, e, "count-bot")
			require.Equal(t, want, stored)
			require.Equal(t, stored, kept, "the kept count is the number of active notes")
		}
		batch := func(prefix string, n int) []map[string]any {
			var bodies []map[string]any
			for i := range n {
				bodies = append(bodies, note(fmt.Sprintf("%s %d", prefix, i), "Body.", "source_id", "count-bot"))
			}
			return bodies
		}

		require.Equal(t, map[int]int{http.StatusCreated: 16}, postAll(t, e, replica, loader, batch("Race", 16)))
		exact(16)

		// An edit retires its predecessor (no change); retirements through either replica.
		ids := listIDs(e, bot, "?status=active")
		replica.MustDo(http.StatusCreated, "POST", notesPath+"/"+ids[0]+"/versions", bot, map[string]any{"title": "Edited"})
		e.MustDo(http.StatusOK, "POST", notesPath+"/"+ids[1]+"/retire", bot, nil)
		replica.MustDo(http.StatusOK, "POST", notesPath+"/"+ids[2]+"/retire", loader, nil)
		requireError(t, e.Do("POST", notesPath+"/"+ids[2]+"/retire", loader, nil), http.StatusConflict, notes.CodeNotActive)
		exact(14)

		// A proposal approved: one more.
		enableNotes(e, map[string]any{"writes": "human_only"})
		pid := e.MustDo(http.StatusAccepted, "POST", notesPath, bot, note("Proposed", "Approved later.")).JSON(t)["proposal_id"].(string)
		exact(14)
		e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/proposals/"+pid+"/approve", e.AdminKey, nil)
		exact(15)

		// The source erased while writes of it race: what is left is counted, nothing else.
		enableNotes(e, nil)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.Deps.Compliance.EraseNotes(context.Background(), e.SpaceID, "count-bot", "admin")
			require.NoError(t, err)
		}()
		require.Equal(t, map[int]int{http.StatusCreated: 8}, postAll(t, e, replica, loader, batch("During", 8)))
		wg.Wait()
		_, left := activeCounts(t, e, "count-bot")
		exact(left)

		// The cap: three places free, twelve writes over both replicas store three.
		enableNotes(e, map[string]any{"max_notes_per_source": left + 3})
		require.Equal(t, map[int]int{http.StatusCreated: 3, http.StatusConflict: 9}, postAll(t, e, replica, loader, batch("Cap", 12)))
		exact(left + 3)
		ids = listIDs(e, bot, "?status=active")
		replica.MustDo(http.StatusOK, "POST", notesPath+"/"+ids[0]+"/retire", loader, nil)
		require.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusConflict: 3}, postAll(t, e, replica, loader, batch("Freed", 4)))
		exact(left + 3)
	})
}
