package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// TestAdvSchemaChangeExactAcrossReplicas (adversarial): object-types changes made through one
// replica are in force on the very next request of another that has the key, the documents
// and the state's row in memory: a pii flag added masks, a field removed is refused, a lower
// max_bytes refuses, a raised one accepts, and a field re-added is accepted again.
func TestAdvSchemaChangeExactAcrossReplicas(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		c := conv("c-schema")
		// The replica caches the key, the documents and the row.
		mustStore(replica, key, map[string]any{"scope": c, "body": map[string]any{"offer": "first"}})
		mustStore(replica, key, map[string]any{"scope": c, "body": map[string]any{"offer": "second"}})

		// offer becomes pii.
		typ := wmType("shop-bot", "conversation", 0, nil)
		typ["fields"].(map[string]any)["offer"] = map[string]any{"type": "string", "pii": true}
		e.PutDocument("object-types", typesDoc(typ))
		mustStore(replica, key, map[string]any{"scope": c, "body": map[string]any{"offer": "mail ana@example.com"}})
		require.NotContains(t, read(replica, key, c, "").Raw, "ana@example.com", "the pii flag added through the other replica masks")

		// order_id removed.
		typ = wmType("shop-bot", "conversation", 0, nil)
		delete(typ["fields"].(map[string]any), "order_id")
		e.PutDocument("object-types", typesDoc(typ))
		r := replica.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, map[string]any{"scope": c, "body": map[string]any{"order_id": "A-1"}}).JSON(t)
		require.Equal(t, false, r["stored"], "%v", r)
		require.Equal(t, "not_declared_field", r["reason"], "%v", r)

		// max_bytes lowered below the state's size.
		e.PutDocument("object-types", typesDoc(wmType("shop-bot", "conversation", 16, nil)))
		r = replica.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, map[string]any{"scope": c, "body": map[string]any{"count": 1}}).JSON(t)
		require.Equal(t, false, r["stored"], "%v", r)
		require.Equal(t, "over_cap", r["reason"], "%v", r)

		// Raised again: the replica, which refused on the 16-byte schema, accepts.
		e.PutDocument("object-types", typesDoc(wmType("shop-bot", "conversation", 0, nil)))
		mustStore(replica, key, map[string]any{"scope": c, "body": map[string]any{"order_id": "A-2"}})

		// A declared-nowhere agent on a fresh scope: refused, then declared through e, accepted.
		other := e.AgentKey("other-bot", "acme-ai", "agent_state")
		e.PutDocument("object-types", typesDoc(wmType("shop-bot", "conversation", 0, nil), wmType("third-bot", "conversation", 0, nil)))
		mustStore(replica, key, map[string]any{"scope": c, "body": map[string]any{"order_id": "A-3"}})
		r = replica.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", other, map[string]any{"scope": conv("c-other"), "body": map[string]any{"offer": "x"}}).JSON(t)
		require.Equal(t, false, r["stored"], "%v", r)
		e.PutDocument("object-types", typesDoc(wmType("shop-bot", "conversation", 0, nil), wmType("other-bot", "conversation", 0, nil)))
		mustStore(replica, other, map[string]any{"scope": conv("c-other"), "body": map[string]any{"offer": "x"}})
	})
}
