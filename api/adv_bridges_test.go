package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// Attacks on bridges (issue 31, SH-3) beyond TestBridgeNeedsBothSides: an active bridge from A
// to B is never read the other way round, never leased through, never widened by the generic
// change route to spaces the document's space is not a side of, and oversized terms are
// refused; every refused read is byte for byte the answer to a board that does not exist.
func TestAdvBridgeOneWay(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		be := newBridgeEnv(t, e)
		id := approveBridge(t, e, be.secA1, be.secA2, be.terms("", "triage", "alice"))
		approveBridge(t, e, be.secB1, be.secB2, be.terms(id, "triage", "alice"))
		require.Equal(t, http.StatusOK, bridgedRead(e, be.triage, be.a.id, "incident-42").Status)
		absent := bridgedRead(e, be.triage, "sp_nosuchspace", "incident-42")
		requireError(t, absent, http.StatusNotFound, "board_not_found")

		// A's agent alice is listed, but the bridge runs from A to B: nothing of B's crosses.
		requireAbsent(t, absent, bridgedRead(e, be.alice, be.b.id, "incident-42"))
		requireAbsent(t, absent, bridgedRead(e, be.triage, be.a.id, "incident-4"))
		requireAbsent(t, absent, e.Do("POST", "/v1/boards/read", be.triage, map[string]any{"type": "Findings", "id": "incident-42", "space": be.a.id}))

		// Never leased or written through.
		requireError(t, e.Do("POST", "/v1/boards/lease", be.triage, map[string]any{"type": "findings", "id": "incident-42", "space": be.a.id, "ttl_seconds": 30}), http.StatusBadRequest, "unknown_member")

		// The generic change route holds the same rules as POST /v1/bridges.
		foreign := map[string]any{"bridges": []any{map[string]any{"id": "br_x", "from": "sp_x", "to": "sp_y", "agents": []string{"triage"}, "boards": []any{map[string]any{"type": "findings"}}}}}
		requireError(t, e.Do("POST", "/v1/documents/bridges/changes", be.secA1, foreign), http.StatusBadRequest, "invalid_document")
		agents := make([]string, 51)
		for i := range agents {
			agents[i] = fmt.Sprintf("a%d", i)
		}
		requireError(t, e.Do("POST", "/v1/bridges", be.secA1, be.termsWith(agents)), http.StatusBadRequest, "invalid_document")
		requireError(t, e.Do("POST", "/v1/bridges", be.secA1, map[string]any{"from": be.a.id, "to": be.b.id, "agents": []string{strings.Repeat("x", 129)}, "boards": []any{map[string]any{"type": "findings"}}}), http.StatusBadRequest, "invalid_document")
		requireError(t, e.Do("POST", "/v1/bridges", be.secA1, map[string]any{"from": be.a.id, "to": be.b.id, "agents": []string{"triage"}, "boards": []any{map[string]any{"type": "findings", "ids": "incident-["}}}), http.StatusBadRequest, "invalid_document")
		require.Equal(t, "active", bridgeStatus(t, e, be.secA1, id))
	})
}

// termsWith is the bridge from A to B for agents, findings incident-*.
func (be bridgeEnv) termsWith(agents []string) map[string]any {
	return map[string]any{"from": be.a.id, "to": be.b.id, "agents": agents,
		"boards": []any{map[string]any{"type": "findings", "ids": "incident-*"}}}
}
