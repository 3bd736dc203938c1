package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// bridgeEnv is two spaces of one database: A (e's space, direct PUT on) holds the findings
// board incident-42 written by its agent alice; B (direct PUT off) has the agents triage and
// other. Each space has two security people.
type bridgeEnv struct {
	e                  *apptest.Env
	a, b               govSpace
	secA1, secA2       string
	secB1, secB2       string
	triage, otherAgent string
	alice              string // A's agent, granted read_write on findings
}

func newBridgeEnv(t *testing.T, e *apptest.Env) bridgeEnv {
	be := newBoardEnv(t, e)
	be.grant(t, map[string]any{"agent": "alice", "access": "read_write"})
	e.MustDo(http.StatusOK, "PUT", "/v1/boards", be.alice, map[string]any{"type": "findings", "id": "incident-42", "if_version": 0, "body": map[string]any{"title": "disk full", "tags": []string{"db"}}})
	a := govSpace{e: e, id: e.SpaceID, admin: e.AdminKey}
	b := newGovSpace(e)
	return bridgeEnv{
		e: e, a: a, b: b,
		secA1: a.person("Sol", "security"), secA2: a.person("Ana", "security"),
		secB1: b.person("Rui", "security"), secB2: b.person("Eva", "security"),
		triage: agentKeyIn(t, e, b.admin, "triage", "acme"), otherAgent: agentKeyIn(t, e, b.admin, "other", "acme"),
		alice: be.alice,
	}
}

// terms is the bridge from A to B both sides propose (each side lists them in its own order).
func (be bridgeEnv) terms(id string, agents ...string) map[string]any {
	return map[string]any{"id": id, "from": be.a.id, "to": be.b.id, "agents": agents,
		"boards": []any{map[string]any{"type": "findings", "ids": "incident-*"}}}
}

// approveBridge proposes terms with proposer and approves them with approver; it returns the
// bridge's id.
func approveBridge(t *testing.T, e *apptest.Env, proposer, approver string, terms map[string]any) string {
	t.Helper()
	m := e.MustDo(http.StatusAccepted, "POST", "/v1/bridges", proposer, terms).JSON(t)
	changeID := m["change_id"].(string)
	requireError(t, e.Do("POST", "/v1/documents/bridges/changes/"+changeID+"/approve", proposer, nil), http.StatusForbidden, "change_own_proposal")
	e.MustDo(http.StatusOK, "POST", "/v1/documents/bridges/changes/"+changeID+"/approve", approver, nil)
	return m["bridge"].(map[string]any)["id"].(string)
}

func bridgedRead(e *apptest.Env, key, space, id string) apptest.Response {
	return e.Do("POST", "/v1/boards/read", key, map[string]any{"type": "findings", "id": id, "space": space})
}

// requireAbsent checks r is exactly the answer to a board that does not exist (want).
func requireAbsent(t *testing.T, want, r apptest.Response) {
	t.Helper()
	require.Equal(t, want.Status, r.Status, "got %d, want %d: %s", r.Status, want.Status, r.Body)
	require.Equal(t, string(want.Body), string(r.Body), "got %s, want %s", r.Body, want.Body)
}

func bridgeStatus(t *testing.T, e *apptest.Env, key, id string) string {
	t.Helper()
	r := e.MustDo(http.StatusOK, "GET", "/v1/bridges", key, nil)
	for _, b := range r.JSON(t)["bridges"].([]any) {
		if m := b.(map[string]any); m["id"] == id {
			return m["status"].(string)
		}
	}
	return ""
}

// Issue 31, SH-3: a bridge lets B's named agents read A's listed boards only once the
// security people of both spaces approved it (each a change request with a second person);
// until then, and for anything it does not list, the answer is byte for byte that of a board
// that does not exist. The bridge is never written through, is receipted in both chains,
// and ends on the next request on every replica when either side removes it.
func TestBridgeNeedsBothSides(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		be := newBridgeEnv(t, e)
		absent := bridgedRead(e, be.triage, "sp_nosuchspace", "incident-42")
		requireError(t, absent, http.StatusNotFound, "board_not_found")
		requireAbsent(t, absent, bridgedRead(e, be.triage, be.a.id, "incident-42"))

		// Never by a direct PUT, even where the space's documents allow it.
		requireError(t, e.Do("PUT", "/v1/documents/bridges", e.AdminKey, map[string]any{"bridges": []any{}}), http.StatusConflict, "bridge_change_request_required")
		requireError(t, e.Do("POST", "/v1/bridges", e.PersonKey("ivy", "admin"), be.terms("")), http.StatusForbidden, "role_required")
		requireError(t, e.Do("POST", "/v1/bridges", be.secA1, map[string]any{"from": "sp_x", "to": "sp_y", "agents": []string{"triage"}, "boards": []any{map[string]any{"type": "findings"}}}), http.StatusBadRequest, "invalid_document")

		// A proposal is listed, and in force nowhere, until a second person approves it.
		pending := e.MustDo(http.StatusAccepted, "POST", "/v1/bridges", be.secA1, be.terms("", "triage")).JSON(t)
		listed := e.MustDo(http.StatusOK, "GET", "/v1/bridges", be.secA2, nil).JSON(t)
		require.Len(t, listed["proposals"], 1, "got %v, want the one pending proposal", listed["proposals"])
		require.Empty(t, listed["bridges"], "got %v, want no bridge before the approval", listed["bridges"])
		e.MustDo(http.StatusOK, "POST", "/v1/documents/bridges/changes/"+pending["change_id"].(string)+"/reject", be.secA2, map[string]any{"reason": "not yet"})

		// A's side alone: no bridge.
		id := approveBridge(t, e, be.secA1, be.secA2, be.terms("", "triage"))
		require.Equal(t, "awaiting_peer", bridgeStatus(t, e, be.secA1, id))
		requireAbsent(t, absent, bridgedRead(e, be.triage, be.a.id, "incident-42"))
		// B proposing other terms under the same id: still none.
		other := approveBridge(t, e, be.secB1, be.secB2, be.terms(id, "triage", "other"))
		require.Equal(t, id, other)
		requireAbsent(t, absent, bridgedRead(e, be.triage, be.a.id, "incident-42"))
		e.MustDo(http.StatusOK, "DELETE", "/v1/bridges/"+id, be.secB1, nil)

		// Both sides, the same terms: triage reads, and only what is listed.
		approveBridge(t, e, be.secB1, be.secB2, be.terms(id, "triage"))
		require.Equal(t, "active", bridgeStatus(t, e, be.secA1, id))
		require.Equal(t, "active", bridgeStatus(t, e, be.secB2, id))
		requireBridgeView(t, e, be.secA1, id, "out")
		requireBridgeView(t, e, be.secB2, id, "in")
		requireError(t, e.Do("POST", "/v1/bridges", be.secA1, be.terms(id, "triage")), http.StatusConflict, "bridge_exists")
		requireError(t, e.Do("GET", "/v1/bridges", be.triage, nil), http.StatusForbidden, "role_required")
		r := bridgedRead(e, be.triage, be.a.id, "incident-42")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.JSONEq(t, `{"title":"disk full","tags":["db"]}`, string(mustRaw(t, r.JSON(t)["body"])))
		requireAbsent(t, absent, bridgedRead(e, be.otherAgent, be.a.id, "incident-42"))
		requireAbsent(t, absent, bridgedRead(e, be.triage, be.a.id, "incident-99")) // listed, never written
		requireAbsent(t, absent, e.Do("POST", "/v1/boards/read", be.triage, map[string]any{"type": "audit", "id": "incident-42", "space": be.a.id}))
		e.MustDo(http.StatusOK, "PUT", "/v1/boards", be.alice, map[string]any{"type": "findings", "id": "audit-1", "if_version": 0, "body": map[string]any{"title": "x"}})
		requireAbsent(t, absent, bridgedRead(e, be.triage, be.a.id, "audit-1"))
		// Read only: a write naming A's space is refused, and A's board is unchanged.
		requireError(t, e.Do("PUT", "/v1/boards", be.triage, map[string]any{"type": "findings", "id": "incident-42", "space": be.a.id, "if_version": 1, "body": map[string]any{"title": "y"}}), http.StatusBadRequest, "unknown_member")
		require.Equal(t, "disk full", boardRead(e, be.alice, "incident-42").JSON(t)["body"].(map[string]any)["title"])

		// Receipted in both chains: each side's approval and the read.
		requireBridgeReceipts(t, e, be.a.admin, "board.read.bridged", id)
		requireBridgeReceipts(t, e, be.b.admin, "board.read", id)

		// Revoked from B's side on one replica: refused on the next request on both.
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		require.Equal(t, http.StatusOK, bridgedRead(replica, be.triage, be.a.id, "incident-42").Status)
		e.MustDo(http.StatusOK, "DELETE", "/v1/bridges/"+id, be.secB2, nil)
		requireAbsent(t, absent, bridgedRead(e, be.triage, be.a.id, "incident-42"))
		requireAbsent(t, absent, bridgedRead(replica, be.triage, be.a.id, "incident-42"))
		require.Equal(t, "awaiting_peer", bridgeStatus(t, e, be.secA1, id))

		// Approved again by B, then revoked from A's side on the replica.
		approveBridge(t, e, be.secB1, be.secB2, be.terms(id, "triage"))
		require.Equal(t, http.StatusOK, bridgedRead(e, be.triage, be.a.id, "incident-42").Status)
		replica.MustDo(http.StatusOK, "DELETE", "/v1/bridges/"+id, be.secA2, nil)
		requireAbsent(t, absent, bridgedRead(e, be.triage, be.a.id, "incident-42"))
		requireAbsent(t, absent, bridgedRead(replica, be.triage, be.a.id, "incident-42"))
		requireError(t, e.Do("DELETE", "/v1/bridges/"+id, be.secA1, nil), http.StatusNotFound, "bridge_not_found")
	})
}

// requireBridgeReceipts checks the chain key reads has the approval of bridge id (a
// document.put of bridges naming a change) and a read of action through it, and verifies.
func requireBridgeReceipts(t *testing.T, e *apptest.Env, key, action, id string) {
	t.Helper()
	var approvals, reads int
	for _, rc := range spaceReceipts(t, e, key) {
		if rc.Action == "document.put" && len(rc.ObjectIDs) == 1 && rc.ObjectIDs[0] == "bridges" && rc.Detail["change_id"] != nil {
			approvals++
		}
		if rc.Action == action && rc.Detail["bridge"] == id {
			reads++
		}
	}
	require.GreaterOrEqual(t, approvals, 1, "got %d bridge approvals in the chain, want at least 1", approvals)
	require.Equal(t, 1, reads, "got %d %s receipts naming the bridge, want 1", reads, action)
	v := e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", key, nil).JSON(t)
	require.Equal(t, true, v["ok"], "verify: %v", v)
}

// requireBridgeView checks GET /v1/bridges lists bridge id with direction.
func requireBridgeView(t *testing.T, e *apptest.Env, key, id, direction string) {
	t.Helper()
	for _, b := range e.MustDo(http.StatusOK, "GET", "/v1/bridges", key, nil).JSON(t)["bridges"].([]any) {
		if m := b.(map[string]any); m["id"] == id {
			require.Equal(t, direction, m["direction"], "got direction %v, want %s", m["direction"], direction)
			return
		}
	}
	t.Fatalf("bridge %s is not listed", id)
}
