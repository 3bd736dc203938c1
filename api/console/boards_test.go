package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// consoleBoardTypes declares the board type findings with a rule of each kind the screen shows.
func consoleBoardTypes() map[string]any {
	return map[string]any{"types": []any{map[string]any{
		"type": "findings", "ownership": "shared",
		"fields": map[string]any{
			"title":   map[string]any{"type": "string", "conflict": map[string]any{"rule": "reject"}},
			"notes":   map[string]any{"type": "object", "conflict": map[string]any{"rule": "merge_by_key", "then": "theirs"}},
			"longest": map[string]any{"type": "string", "conflict": map[string]any{"rule": "cel", "expr": `size(ours) >= size(theirs) ? ours : theirs`}},
			"contact": map[string]any{"type": "text", "pii": true},
		},
		"retention": map[string]any{"contact": "7d"},
	}}}
}

var revokeGrantPattern = regexp.MustCompile(`/console/boards/findings/grants/(bg_[A-Za-z0-9_-]+)/revoke`)

// Issue 31: the Boards screen shows each board type's fields with their conflict rules, its
// grants (granted and revoked here, as POST/DELETE /v1/boards/{type}/grants) and each board's
// size, version, writers and dates, never its content (WM-11).
func TestConsoleBoardsScreen(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		e.PutDocument("object-types", consoleBoardTypes())
		ada := signIn(t, e, e.PersonKey("Ada", "admin"))
		s := ada.get("/console/boards")
		require.Equal(t, http.StatusOK, s.Status, s.Body)
		require.Contains(t, s.Body, `<span class="tag rule">merge_by_key</span> <span class="muted">then</span> <span class="tag rule">theirs</span>`)
		require.Contains(t, s.Body, `size(ours) &gt;= size(theirs) ? ours : theirs`)
		require.Contains(t, s.Body, "pii · masked")
		require.Contains(t, s.Body, "kept 7d")
		require.Contains(t, s.Body, "No grants")
		require.NotContains(t, s.Body, "<script")

		r := ada.post("/console/boards/findings/grants", url.Values{"who": {"agent"}, "name": {"alice"}, "access": {"read_write"}, "boards": {"incident-*"}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		alice := e.AgentKey("alice", "acme")
		e.MustDo(http.StatusOK, "PUT", "/v1/boards", alice, map[string]any{"type": "findings", "id": "incident-42", "if_version": 0,
			"body": map[string]any{"title": "disk full on db-7", "contact": "call the on-call lead"}})
		s = ada.get(r.Location)
		require.Contains(t, s.Body, "Grant added")
		require.Contains(t, s.Body, "agent <strong>alice</strong>")
		require.Contains(t, s.Body, `<td class="num">1</td>`, "the board's version")
		require.Contains(t, s.Body, `<span class="tag">alice</span>`, "the board's writer")
		require.NotContains(t, s.Body, "disk full", "never a board's content")
		require.NotContains(t, s.Body, "incident-42", "never a board's id in clear")
		require.NotContains(t, s.Body, "on-call")

		// A person without admin sees the screen but cannot grant; the server refuses it.
		sol := signIn(t, e, e.PersonKey("Sol", "security"))
		require.NotContains(t, sol.get("/console/boards").Body, `action="/console/boards/findings/grants"`)
		require.Equal(t, http.StatusForbidden, sol.post("/console/boards/findings/grants", url.Values{"name": {"bob"}, "access": {"read"}}).Status)
		// A bad grant is refused inline and changes nothing.
		ada.get("/console/boards")
		bad := ada.post("/console/boards/findings/grants", url.Values{"who": {"agent"}, "name": {""}, "access": {"read"}})
		require.Equal(t, http.StatusBadRequest, bad.Status)
		require.Contains(t, bad.Body, "Refused.")

		m := revokeGrantPattern.FindStringSubmatch(ada.get("/console/boards").Body)
		require.NotNil(t, m)
		r = ada.post("/console/boards/findings/grants/"+m[1]+"/revoke", nil)
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		require.Contains(t, ada.get(r.Location).Body, "Grant revoked")
		refused := e.Do("POST", "/v1/boards/read", alice, map[string]any{"type": "findings", "id": "incident-42"})
		require.Equal(t, http.StatusForbidden, refused.Status, "got %d, want 403 after the revocation: %s", refused.Status, refused.Body)

		// Where direct PUT is off, a grant from the screen is a change request of board-grants,
		// which Settings lists for a second security person.
		_, govAdmin := e.NewSpace("governed", false)
		gusKey := spaceKey(t, e, govAdmin, "Gus", "admin", "security")
		gov := signIn(t, e, gusKey)
		val := spaceKey(t, e, govAdmin, "Val", "security")
		// Gus proposes: a change of the space's first admin key could only be approved by a key
		// it did not mint (issue 31), and every key here descends from it.
		prop := e.MustDo(http.StatusCreated, "POST", "/v1/documents/object-types/changes", gusKey, consoleBoardTypes()).JSON(t)
		e.MustDo(http.StatusOK, "POST", "/v1/documents/object-types/changes/"+prop["id"].(string)+"/approve", val, nil)
		require.Contains(t, gov.get("/console/boards").Body, "Approved grants.")
		r = gov.post("/console/boards/findings/grants", url.Values{"who": {"vendor"}, "name": {"acme"}, "access": {"read"}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		require.Contains(t, gov.get(r.Location).Body, "Proposed as a change request of board-grants")
		require.Contains(t, gov.get("/console/settings").Body, `/console/settings/board-grants/changes/`)
	})
}

var approveBridgePattern = regexp.MustCompile(`/console/bridges/changes/(chg_[A-Za-z0-9_-]+)/approve`)
var bridgeIDPattern = regexp.MustCompile(`<code>(br_[A-Za-z0-9_-]+)</code>`)

// Issue 31, SH-3: the Bridges screen proposes a bridge, shows the proposal to a second
// security person who approves it (never its proposer), shows the bridge awaiting the other
// space until that side approves the same bridge, then active, and removes it.
func TestConsoleBridgesScreen(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		e.PutDocument("object-types", consoleBoardTypes())
		otherID, otherAdmin := e.NewSpace("partner", false)
		sol := signIn(t, e, e.PersonKey("Sol", "security"))
		ana := signIn(t, e, e.PersonKey("Ana", "security"))
		rui, eva := spaceKey(t, e, otherAdmin, "Rui", "security"), spaceKey(t, e, otherAdmin, "Eva", "security")

		s := sol.get("/console/bridges")
		require.Equal(t, http.StatusOK, s.Status, s.Body)
		require.Contains(t, s.Body, e.SpaceID, "the space's id, for the other side")
		r := sol.post("/console/bridges", url.Values{"direction": {"out"}, "peer": {otherID}, "agents": {"triage"}, "boards": {"findings:incident-*"}, "knowledge_bases": {"handbook, runbooks"}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		s = sol.get(r.Location)
		require.Contains(t, s.Body, "Bridge proposed")
		require.Contains(t, s.Body, "You proposed this bridge")
		id := approveBridgePattern.FindStringSubmatch(s.Body)[1]
		own := sol.post("/console/bridges/changes/"+id+"/approve", nil)
		require.Equal(t, http.StatusForbidden, own.Status)
		require.Contains(t, own.Body, "another person than its proposer")

		s = ana.get("/console/bridges")
		require.Contains(t, s.Body, "Proposed by <strong>Sol</strong>")
		require.Regexp(t, `<span class="add">&#43;\s+&#34;to&#34;: &#34;`+otherID+`&#34;`, s.Body)
		require.Regexp(t, `<span class="add">&#43;\s+&#34;handbook&#34;`, s.Body, "the bases that may cross, in the diff")
		r = ana.post("/console/bridges/changes/"+id+"/approve", nil)
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		s = ana.get(r.Location)
		require.Contains(t, s.Body, "awaiting the other space")
		bridge := bridgeIDPattern.FindStringSubmatch(s.Body)[1]

		// The other side proposes and approves the same bridge (REST).
		prop := e.MustDo(http.StatusAccepted, "POST", "/v1/bridges", rui, map[string]any{"id": bridge, "from": e.SpaceID, "to": otherID,
			"agents": []string{"triage"}, "boards": []any{map[string]any{"type": "findings", "ids": "incident-*"}}, "knowledge_bases": []string{"runbooks", "handbook"}}).JSON(t)
		e.MustDo(http.StatusOK, "POST", "/v1/documents/bridges/changes/"+prop["change_id"].(string)+"/approve", eva, nil)
		s = ana.get("/console/bridges")
		require.Contains(t, s.Body, `<span class="badge ok">active</span>`)
		require.Contains(t, s.Body, `<td class="tags"><span class="tag">handbook</span><span class="tag">runbooks</span></td>`, "the bases that cross")
		require.Contains(t, s.Body, "No proposals wait")

		r = ana.post("/console/bridges/"+bridge+"/revoke", nil)
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		s = ana.get(r.Location)
		require.Contains(t, s.Body, "Bridge removed")
		require.Contains(t, s.Body, "No bridges")
		// A person without security is refused the screen.
		integ := signIn(t, e, e.PersonKey("Ivo", "integration"))
		require.Equal(t, http.StatusForbidden, integ.get("/console/bridges").Status)
	})
}
