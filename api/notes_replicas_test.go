package api_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api/apitest"
	"github.com/agentmemory/agentmemory/internal/notes"
)

// postAll sends every body at once, alternately through e and replica (two API servers with
// their own pools on one database), and returns how many answered each status.
func postAll(t *testing.T, e, replica *apitest.Env, key string, bodies []map[string]any) map[int]int {
	t.Helper()
	got := make([]apitest.Response, len(bodies))
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
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		enableNotes(e, nil)
		replica := &apitest.Env{T: t, Server: newReplica(e)}

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
