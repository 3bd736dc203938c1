package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// findingsTypes declares the board type "findings" with a rule of every kind (issue 31).
func findingsTypes() map[string]any {
	return map[string]any{"types": []any{map[string]any{
		"type": "findings", "ownership": "shared",
		"fields": map[string]any{
			"title":    map[string]any{"type": "string", "conflict": map[string]any{"rule": "reject"}},
			"owner":    map[string]any{"type": "string", "conflict": map[string]any{"rule": "theirs"}},
			"status":   map[string]any{"type": "string", "conflict": map[string]any{"rule": "ours"}},
			"notes":    map[string]any{"type": "object", "conflict": map[string]any{"rule": "merge_by_key", "then": "reject"}},
			"tags":     map[string]any{"type": "array", "conflict": map[string]any{"rule": "union"}},
			"severity": map[string]any{"type": "integer", "conflict": map[string]any{"rule": "max"}},
			"first_at": map[string]any{"type": "integer", "conflict": map[string]any{"rule": "min"}},
			"hits":     map[string]any{"type": "integer", "conflict": map[string]any{"rule": "sum"}},
			"longest":  map[string]any{"type": "string", "conflict": map[string]any{"rule": "cel", "expr": `size(ours) >= size(theirs) ? ours : theirs`}},
			"customer": map[string]any{"type": "string", "subject": true},
			"contact":  map[string]any{"type": "text", "pii": true},
		},
		"board": map[string]any{"history": 64},
	}}}
}

// boardEnv is a space with the findings type and agent keys: alice and bob of vendor acme,
// carol of vendor other.
type boardEnv struct {
	e                 *apptest.Env
	alice, bob, carol string
}

func newBoardEnv(t *testing.T, e *apptest.Env) boardEnv {
	e.PutDocument("object-types", findingsTypes())
	return boardEnv{e: e, alice: e.AgentKey("alice", "acme"), bob: e.AgentKey("bob", "acme"), carol: e.AgentKey("carol", "other")}
}

func (b boardEnv) grant(t *testing.T, body map[string]any) string {
	r := b.e.MustDo(http.StatusCreated, "POST", "/v1/boards/findings/grants", b.e.AdminKey, body)
	g := r.JSON(t)["grant"].(map[string]any)
	return g["id"].(string)
}

func boardWrite(e *apptest.Env, key, id string, ifVersion int64, body any) apptest.Response {
	return e.Do("PUT", "/v1/boards", key, map[string]any{"type": "findings", "id": id, "if_version": ifVersion, "body": body})
}

func boardRead(e *apptest.Env, key, id string) apptest.Response {
	return e.Do("POST", "/v1/boards/read", key, map[string]any{"type": "findings", "id": id})
}

func TestBoardNoGrantNoAccess(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		b := newBoardEnv(t, e)
		// Nothing granted: nobody reads or writes, whatever vendor they share.
		requireError(t, boardWrite(e, b.alice, "incident-1", 0, map[string]any{"title": "x"}), http.StatusForbidden, "board_grant_required")
		requireError(t, boardRead(e, b.alice, "incident-1"), http.StatusForbidden, "board_grant_required")

		aliceGrant := b.grant(t, map[string]any{"agent": "alice", "access": "read_write", "boards": "incident-*"})
		e.MustDo(http.StatusOK, "PUT", "/v1/boards", b.alice, map[string]any{"type": "findings", "id": "incident-1", "if_version": 0, "body": map[string]any{"title": "x"}})
		// Same vendor, same team: bob has no grant of his own, so nothing.
		requireError(t, boardRead(e, b.bob, "incident-1"), http.StatusForbidden, "board_grant_required")
		requireError(t, boardWrite(e, b.bob, "incident-1", 1, map[string]any{"title": "y"}), http.StatusForbidden, "board_grant_required")
		// The id pattern holds.
		requireError(t, boardWrite(e, b.alice, "audit-1", 0, map[string]any{"title": "x"}), http.StatusForbidden, "board_grant_required")
		// A vendor grant, read only.
		b.grant(t, map[string]any{"vendor": "other", "access": "read"})
		r := boardRead(e, b.carol, "incident-1")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.JSONEq(t, `{"title":"x"}`, string(mustRaw(t, r.JSON(t)["body"])))
		requireError(t, boardWrite(e, b.carol, "incident-1", 1, map[string]any{"title": "y"}), http.StatusForbidden, "board_grant_required")
		// A person key neither reads nor writes boards.
		requireError(t, boardRead(e, e.AdminKey, "incident-1"), http.StatusForbidden, "role_required")

		// Revoked: refused on the next request, on this replica and on another.
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		require.Equal(t, http.StatusOK, boardRead(replica, b.alice, "incident-1").Status)
		e.MustDo(http.StatusOK, "DELETE", "/v1/boards/findings/grants/"+aliceGrant, e.AdminKey, nil)
		requireError(t, boardRead(e, b.alice, "incident-1"), http.StatusForbidden, "board_grant_required")
		requireError(t, boardRead(replica, b.alice, "incident-1"), http.StatusForbidden, "board_grant_required")
		requireError(t, e.Do("DELETE", "/v1/boards/findings/grants/"+aliceGrant, e.AdminKey, nil), http.StatusNotFound, "board_grant_not_found")

		// Granting needs role admin; an unknown type is 404.
		requireError(t, e.Do("POST", "/v1/boards/findings/grants", e.PersonKey("ivy", "integration"), map[string]any{"agent": "bob", "access": "read"}), http.StatusForbidden, "role_required")
		requireError(t, e.Do("POST", "/v1/boards/nope/grants", e.AdminKey, map[string]any{"agent": "bob", "access": "read"}), http.StatusNotFound, "board_type_not_found")
		requireError(t, e.Do("POST", "/v1/boards/findings/grants", e.AdminKey, map[string]any{"agent": "bob", "vendor": "acme", "access": "read"}), http.StatusBadRequest, "invalid_document")

		// Every grant and revocation is receipted.
		var grants, revokes int
		for _, rc := range spaceReceipts(t, e, e.AdminKey) {
			if rc.Action == "document.put" && rc.Detail["board_type"] == "findings" {
				switch rc.Detail["board_grant"] {
				case "grant":
					grants++
				case "revoke":
					revokes++
				}
			}
		}
		require.Equal(t, 2, grants, "got %d grant receipts, want 2", grants)
		require.Equal(t, 1, revokes, "got %d revoke receipts, want 1", revokes)
	})
}

func TestBoardGrantChangeRequested(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		g := newGovSpace(e)
		sec1, sec2 := g.person("Sol", "security", "admin"), g.person("Ana", "security")
		typesDoc, err := json.Marshal(findingsTypes())
		require.NoError(t, err)
		ch := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/object-types/changes", sec1, json.RawMessage(typesDoc)))
		e.MustDo(http.StatusOK, "POST", "/v1/documents/object-types/changes/"+ch.ID+"/approve", sec2, nil)
		agent := agentKeyIn(t, e, g.admin, "alice", "acme")

		r := e.MustDo(http.StatusAccepted, "POST", "/v1/boards/findings/grants", sec1, map[string]any{"agent": "alice", "access": "read_write"})
		m := r.JSON(t)
		require.Equal(t, false, m["applied"])
		changeID := m["change_id"].(string)
		// Pending: not in force.
		requireError(t, boardRead(e, agent, "b1"), http.StatusForbidden, "board_grant_required")
		requireError(t, e.Do("POST", "/v1/documents/board-grants/changes/"+changeID+"/approve", sec1, nil), http.StatusForbidden, "change_own_proposal")
		e.MustDo(http.StatusOK, "POST", "/v1/documents/board-grants/changes/"+changeID+"/approve", sec2, nil)
		require.Equal(t, http.StatusOK, boardRead(e, agent, "b1").Status)
	})
}

// agentKeyIn mints an agent key in the space of admin.
func agentKeyIn(t *testing.T, e *apptest.Env, admin, agent, vendor string) string {
	r := e.MustDo(http.StatusCreated, "POST", "/v1/keys", admin, map[string]any{"kind": "agent", "agent": agent, "vendor": vendor, "scopes": []string{}})
	return r.JSON(t)["key"].(string)
}

func mustRaw(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
