package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// result is one concurrent answer: status and decoded body.
type result struct {
	Status int
	Body   map[string]any
	Raw    string
}

// concurrently sends every body as PUT /v1/agent-state at once (released together) and
// returns the answers in order. Safe off the test goroutine: it never calls t.
func concurrently(e *apptest.Env, key string, bodies []map[string]any) []result {
	out := make([]result, len(bodies))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, b := range bodies {
		data, _ := json.Marshal(b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req := httptest.NewRequest(http.MethodPut, "/v1/agent-state", bytes.NewReader(data))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			e.Server.ServeHTTP(rec, req)
			var m map[string]any
			dec := json.NewDecoder(rec.Body)
			dec.UseNumber()
			_ = dec.Decode(&m)
			out[i] = result{Status: rec.Code, Body: m, Raw: fmt.Sprint(m)}
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// WM-6: 50 parallel merge writers of 50 different fields on one state lose nothing: all 50
// fields are there at version 50, and each writer got a distinct version.
func TestWMConcurrentMergeWriters(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const n = 50
		fields := map[string]any{}
		for i := range n {
			fields[fmt.Sprintf("f%02d", i)] = map[string]any{"type": "integer"}
		}
		enableWM(e, typesDoc(map[string]any{"type": "shop-bot", "ownership": "agent", "fields": fields,
			"agent_state": map[string]any{"scope": "conversation"}}))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		c := conv("c-parallel")
		bodies := make([]map[string]any, n)
		for i := range n {
			bodies[i] = map[string]any{"scope": c, "body": map[string]any{fmt.Sprintf("f%02d", i): i}}
		}
		var versions []int
		for i, r := range concurrently(e, key, bodies) {
			require.Equal(t, http.StatusOK, r.Status, "writer %d: %s", i, r.Raw)
			require.Equal(t, true, r.Body["stored"], "writer %d: %s", i, r.Raw)
			versions = append(versions, int(num(t, r.Body["version"])))
		}
		sort.Ints(versions)
		for i, v := range versions {
			require.Equal(t, i+1, v, "versions answered: %v", versions)
		}
		got := read(e, key, c, "")
		require.Equal(t, int64(n), got.Version)
		require.Len(t, got.Body, n)
		for i := range n {
			require.Equal(t, json.Number(fmt.Sprint(i)), got.Body[fmt.Sprintf("f%02d", i)])
		}
	})
}

// WM-5, MS-6: parallel cas writers at the same version: exactly one wins, the others get 412
// with the winner's version, and the state is the winner's body. Covers the creation race
// (if_version 0) and updates, several rounds.
func TestWMConcurrentCASWriters(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const writers, rounds = 16, 4
		key := setupWM(e)
		c := conv("c-cas-race")
		for round := range rounds {
			bodies := make([]map[string]any, writers)
			for i := range writers {
				bodies[i] = map[string]any{"scope": c, "mode": "cas", "if_version": round,
					"body": map[string]any{"count": round*100 + i, "order_id": fmt.Sprint("w", i)}}
			}
			winner := -1
			for i, r := range concurrently(e, key, bodies) {
				switch r.Status {
				case http.StatusOK:
					require.Equal(t, true, r.Body["stored"], r.Raw)
					require.Equal(t, int64(round+1), num(t, r.Body["version"]))
					require.Equal(t, -1, winner, "round %d: writers %d and %d both won", round, winner, i)
					winner = i
				case http.StatusPreconditionFailed:
					require.Equal(t, int64(round+1), num(t, r.Body["version"]), r.Raw)
				default:
					t.Fatalf("round %d writer %d: got %d, want 200 or 412: %s", round, i, r.Status, r.Raw)
				}
			}
			require.NotEqual(t, -1, winner, "round %d: nobody won", round)
			got := read(e, key, c, "")
			require.Equal(t, int64(round+1), got.Version)
			require.Equal(t, map[string]any{"count": json.Number(fmt.Sprint(round*100 + winner)), "order_id": fmt.Sprint("w", winner)}, got.Body)
		}
	})
}
