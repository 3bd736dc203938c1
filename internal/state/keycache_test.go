package state_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/state"
)

// countingStore counts the calls that reach a key store behind the cache.
type countingStore struct {
	keystore.Store
	dataKeys, generations atomic.Int64
}

func (c *countingStore) DataKey(ctx context.Context, id string, create bool) ([]byte, error) {
	c.dataKeys.Add(1)
	return c.Store.DataKey(ctx, id, create)
}

func (c *countingStore) Generation(ctx context.Context) (uint64, error) {
	c.generations.Add(1)
	return c.Store.(keystore.Generations).Generation(ctx)
}

// Issue 29 §1: an object-scope state naming no customer is sealed under its own key, and once
// the key is cached a write or a read asks the key store for no key: the cache's only call is
// the destroy-generation check, once per request (keystore.ForRequest), as for every sealed
// state. Both databases.
func TestObjectStateKeyCached(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		e.PutDocument("object-types", map[string]any{"types": []any{map[string]any{
			"type": "order-bot", "ownership": "agent", "fields": map[string]any{"step": map[string]any{"type": "string"}},
			"agent_state": map[string]any{"scope": "object"}}}})
		p, err := auth.Authenticate(ctx, e.DB, e.AgentKey("order-bot", "acme", auth.ScopeAgentState))
		require.NoError(t, err)
		counting := &countingStore{Store: e.Keys.(*keystore.Cache).Unwrap()}
		svc := e.App.State
		svc.Keys = keystore.Cached(counting, 0, 0) // this test's own service graph
		scope := &state.Scope{Kind: "object", ID: "order:shop:C4che"}
		write := func(i int) {
			res, err := svc.Write(keystore.ForRequest(ctx), p, "test/1", state.WriteRequest{Scope: scope, Mode: "merge_by_key",
				Body: json.RawMessage(fmt.Sprintf(`{"step":"step %d"}`, i))})
			require.NoError(t, err)
			require.True(t, res.Stored)
		}
		write(0)
		require.Positive(t, counting.dataKeys.Load(), "the first write creates the state's key")
		keys, gens := counting.dataKeys.Load(), counting.generations.Load()
		const n = 20
		for i := range n {
			write(i + 1)
			got, err := svc.Read(keystore.ForRequest(ctx), p, state.ReadRequest{Scope: scope})
			require.NoError(t, err)
			require.JSONEq(t, fmt.Sprintf(`{"step":"step %d"}`, i+1), string(got.Body))
		}
		require.Equal(t, keys, counting.dataKeys.Load(), "a cached write or read asks the key store for no key")
		require.Equal(t, int64(2*n), counting.generations.Load()-gens, "one destroy-generation check per request")
	})
}
