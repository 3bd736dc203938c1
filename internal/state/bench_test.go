package state_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/state"
)

// BenchmarkObjectScopeState measures the service's write (merge_by_key) and read of one object-scope
// state naming no customer, one agent, in process (no HTTP), on SQLite and PostgreSQL, with
// the app's key store behind its cache: the path per-state sealing (issue 29 §1) adds a data
// key lookup and a seal or open to. Each operation runs as one request (keystore.ForRequest),
// as the API's do. Run it before and after a change, interleaved:
//
//	go test -run '^$' -bench ObjectScopeState -benchtime 2000x ./internal/state
func BenchmarkObjectScopeState(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			e := apptest.New(b, engine)
			e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
			e.PutDocument("object-types", map[string]any{"types": []any{map[string]any{
				"type": "bench-obj", "ownership": "agent",
				"fields":      map[string]any{"count": map[string]any{"type": "integer"}, "step": map[string]any{"type": "string"}},
				"agent_state": map[string]any{"scope": "object"}}}})
			p, err := auth.Authenticate(ctx, e.DB, e.AgentKey("bench-obj", "bench", auth.ScopeAgentState))
			if err != nil {
				b.Fatal(err)
			}
			scope := &state.Scope{Kind: "object", ID: "order:shop:B3nch"}
			write := func(i int) {
				body := json.RawMessage(fmt.Sprintf(`{"count":%d,"step":"step %d"}`, i, i))
				// One operation is one request: its key-cache check is once per request (as the API's).
				res, err := e.App.State.Write(keystore.ForRequest(ctx), p, "bench/1", state.WriteRequest{Scope: scope, Mode: "merge_by_key", Body: body})
				if err != nil || !res.Stored {
					b.Fatalf("write: %v %+v", err, res)
				}
			}
			write(0) // the state (and its key) exist before the timer starts
			b.Run("write", func(b *testing.B) {
				for i := range b.N {
					write(i + 1)
				}
			})
			b.Run("read", func(b *testing.B) {
				for range b.N {
					res, err := e.App.State.Read(keystore.ForRequest(ctx), p, state.ReadRequest{Scope: scope})
					if err != nil || res.Version == 0 {
						b.Fatalf("read: %v %+v", err, res)
					}
				}
			})
		})
	}
}
