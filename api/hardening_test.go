package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// Requests whose path or query carry NUL bytes or invalid UTF-8 are refused before any
// handler runs, with a message that repeats nothing of the request.
func TestBadPathsAndQueriesAre400(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		for _, path := range []string{
			"/v1/documents/ana.souza%40example.com%00",
			"/v1/profiles/prof_%00/agent-state",
			"/v1/agent-memory/notes/note_%ff%fe",
			"/v1/receipts?after=%00",
			"/v1/agent-memory/search?q=inv%ff",
		} {
			r := e.Do(http.MethodGet, path, e.AdminKey, nil)
			require.Equal(t, http.StatusBadRequest, r.Status, "%s: got %d, want 400: %s", path, r.Status, r.Body)
			require.Equal(t, "invalid_request", r.ErrorCode(t))
			require.NotContains(t, string(r.Body), "ana.souza")
		}
	})
}

// MS-5: Agent-Version is a short version token; anything else is 400 and nothing is written.
func TestAgentVersionHeaderIsBounded(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		e.PutDocument("object-types", apptest.ShopBotTypes())
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		body := map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c-1"}, "body": map[string]any{"step": "a"}}
		for _, v := range []string{strings.Repeat("v", 129), "ana.souza@example.com", "shop bot 1.0", "v1\u202e"} {
			r := e.Do(http.MethodPut, "/v1/agent-state", key, body, "Agent-Version", v)
			require.Equal(t, http.StatusBadRequest, r.Status, "Agent-Version %q: got %d: %s", v, r.Status, r.Body)
			require.Equal(t, "invalid_header", r.ErrorCode(t))
		}
		r := e.MustDo(http.StatusOK, http.MethodPost, "/v1/agent-state/read", key, map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c-1"}})
		require.Equal(t, json.Number("0"), r.JSON(t)["version"], "nothing was written")
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, body, "Agent-Version", "shop-bot/1.4.2+build:7")
	})
}

// The Authorization scheme is case-insensitive (RFC 9110); the key itself is not.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
			r := e.Do(http.MethodGet, "/v1/receipts/verify", "", nil, "Authorization", scheme+" "+e.AdminKey)
			require.Equal(t, http.StatusOK, r.Status, "scheme %q: %s", scheme, r.Body)
		}
		r := e.Do(http.MethodGet, "/v1/receipts/verify", "", nil, "Authorization", "Bearer "+strings.ToUpper(e.AdminKey))
		require.Equal(t, http.StatusUnauthorized, r.Status)
		r = e.Do(http.MethodGet, "/v1/receipts/verify", "", nil, "Authorization", "Basic "+e.AdminKey)
		require.Equal(t, http.StatusUnauthorized, r.Status)
	})
}

// An agent name belongs to one vendor in a space: its state and notes are found by that name.
func TestAgentNameKeepsItsVendor(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.AgentKey("shop-bot", "acme-ai", "agent_state")
		e.AgentKey("shop-bot", "acme-ai", "agent_memory") // a second key of the same agent
		r := e.Do(http.MethodPost, "/v1/keys", e.AdminKey, map[string]any{"kind": "agent", "agent": "shop-bot", "vendor": "rival-ai", "scopes": []string{"agent_state"}})
		require.Equal(t, http.StatusConflict, r.Status, "%s", r.Body)
		require.Equal(t, "agent_vendor_mismatch", r.ErrorCode(t))
	})
}

// Member names match exactly: a case variant of if_version must never turn a CAS into a
// merge (security baseline).
func TestCaseVariantMembersAreRefused(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		e.PutDocument("object-types", apptest.ShopBotTypes())
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		scope := `{"kind":"conversation","id":"c-1"}`
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, `{"scope":`+scope+`,"body":{"step":"a"}}`)
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, `{"scope":`+scope+`,"body":{"step":"b"}}`)
		for _, body := range []string{
			`{"scope":` + scope + `,"if_version":1,"IF_VERSION":null,"body":{"step":"stale"}}`,
			`{"scope":` + scope + `,"mode":"cas","if_version":1,"Mode":"merge_by_key","body":{"step":"stale"}}`,
			`{"SCOPE":` + scope + `,"body":{"step":"stale"}}`,
		} {
			r := e.Do(http.MethodPut, "/v1/agent-state", key, body)
			require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", body, r.Body)
			require.Equal(t, "unknown_member", r.ErrorCode(t))
		}
		r := e.MustDo(http.StatusOK, http.MethodPost, "/v1/agent-state/read", key, `{"scope":`+scope+`}`)
		require.Equal(t, map[string]any{"step": "b"}, r.JSON(t)["body"])
	})
}
