package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

var approvePattern = regexp.MustCompile(`/console/settings/features/changes/(chg_[A-Za-z0-9_-]+)/approve`)

// spaceKey mints a person key in the space of admin.
func spaceKey(t *testing.T, e *apptest.Env, admin, name string, roles ...string) string {
	t.Helper()
	r := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/keys", admin, map[string]any{"kind": "person", "name": name, "roles": roles})
	return r.JSON(t)["key"].(string)
}

// features returns the features document and its version, read through REST.
func features(t *testing.T, e *apptest.Env, key string) (map[string]any, string) {
	t.Helper()
	r := e.MustDo(http.StatusOK, http.MethodGet, "/v1/documents/features", key, nil)
	return r.JSON(t), r.Header.Get("X-Document-Version")
}

func stateEnabled(doc map[string]any) bool {
	as, _ := doc["agent_state"].(map[string]any)
	on, _ := as["enabled"].(bool)
	return on
}

func TestConsoleSettingsChangeRequests(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		_, admin := e.NewSpace("governed", false)
		sol := signIn(t, e, spaceKey(t, e, admin, "Sol", "security"))
		rui := signIn(t, e, spaceKey(t, e, admin, "Rui", "security"))

		// Direct PUT is off: the button proposes a change, and a direct save is refused.
		s := sol.get("/console/settings")
		require.Equal(t, http.StatusOK, s.Status)
		require.Contains(t, s.Body, `action="/console/settings/features/changes"`)
		require.Contains(t, s.Body, ">Propose change</button>")
		require.NotContains(t, s.Body, ">Save features</button>")
		require.NotContains(t, s.Body, "<script")
		r := sol.post("/console/settings/features", url.Values{"document": {`{"agent_state":{"enabled":true}}`}})
		require.Equal(t, http.StatusConflict, r.Status)
		doc, version := features(t, e, admin)
		require.False(t, stateEnabled(doc))
		require.Equal(t, "0", version)

		// Without the CSRF token a proposal is 403 and stores nothing.
		require.Equal(t, http.StatusForbidden, sol.post("/console/settings/features/changes", url.Values{"csrf": {""}, "document": {`{"agent_state":{"enabled":true}}`}}).Status)
		require.Empty(t, approvePattern.FindStringSubmatch(sol.get("/console/settings").Body))

		// Proposed: listed pending with its diff, + and - lines styled apart.
		r = sol.post("/console/settings/features/changes", url.Values{"document": {`{"agent_state":{"enabled":true}}`}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		s = rui.get(r.Location)
		require.Contains(t, s.Body, "Change proposed")
		m := approvePattern.FindStringSubmatch(s.Body)
		require.NotNil(t, m, s.Body)
		id := m[1]
		require.Contains(t, s.Body, `Proposed by <strong>Sol</strong>`)
		require.Contains(t, s.Body, `<span class="badge wait">pending</span>`)
		require.Regexp(t, `<span class="del">-\s+&#34;enabled&#34;: false</span>`, s.Body)
		require.Regexp(t, `<span class="add">&#43;\s+&#34;enabled&#34;: true</span>`, s.Body)
		require.Contains(t, s.Body, `<span class="hdr">--- features@v0</span>`)
		require.Contains(t, s.Body, `action="/console/settings/features/changes/`+id+`/reject"`)
		// The proposer is told they cannot approve their own change.
		own := sol.get("/console/settings")
		require.Contains(t, own.Body, "You proposed this change")

		// The proposer's approve is refused by the server (403, the service's message), and
		// nothing is applied.
		r = sol.post("/console/settings/features/changes/"+id+"/approve", nil)
		require.Equal(t, http.StatusForbidden, r.Status)
		require.Contains(t, r.Body, "approved by another person than its proposer")
		require.Contains(t, r.Body, `role="alert"`)
		doc, version = features(t, e, admin)
		require.False(t, stateEnabled(doc))
		require.Equal(t, "0", version)

		// A second security person's approve needs the CSRF token...
		rui.get("/console/settings")
		require.Equal(t, http.StatusForbidden, rui.post("/console/settings/features/changes/"+id+"/approve", url.Values{"csrf": {""}}).Status)
		doc, _ = features(t, e, admin)
		require.False(t, stateEnabled(doc))
		// ...and applies the document.
		r = rui.post("/console/settings/features/changes/"+id+"/approve", nil)
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		doc, version = features(t, e, admin)
		require.True(t, stateEnabled(doc))
		require.Equal(t, "1", version)
		s = sol.get(r.Location)
		require.Contains(t, s.Body, "Change approved")
		require.Contains(t, s.Body, `<span class="badge ok">applied</span>`)
		require.Contains(t, s.Body, "<strong>Rui</strong>")
		require.Contains(t, s.Body, "applied as version 1")
		require.Nil(t, approvePattern.FindStringSubmatch(s.Body), "no pending change left")

		// Reject with a reason (CSRF and the reason required).
		r = sol.post("/console/settings/features/changes", url.Values{"document": {`{"agent_state":{"enabled":false}}`}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		id2 := approvePattern.FindStringSubmatch(rui.get("/console/settings").Body)[1]
		require.Equal(t, http.StatusForbidden, rui.post("/console/settings/features/changes/"+id2+"/reject", url.Values{"csrf": {""}, "reason": {"keep it on"}}).Status)
		r = rui.post("/console/settings/features/changes/"+id2+"/reject", url.Values{"reason": {"  "}})
		require.Equal(t, http.StatusBadRequest, r.Status)
		require.Contains(t, r.Body, "reason must be")
		r = rui.post("/console/settings/features/changes/"+id2+"/reject", url.Values{"reason": {"keep it on"}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		s = sol.get(r.Location)
		require.Contains(t, s.Body, "Change rejected.")
		require.Contains(t, s.Body, `<span class="badge bad">rejected</span>`)
		require.Contains(t, s.Body, "Reason: keep it on")
		doc, version = features(t, e, admin)
		require.True(t, stateEnabled(doc), "a rejected change touches nothing")
		require.Equal(t, "1", version)
		// Deciding it again is refused.
		require.Equal(t, http.StatusConflict, rui.post("/console/settings/features/changes/"+id2+"/approve", nil).Status)

		// A proposal identical to the document is refused inline, the text kept.
		r = sol.post("/console/settings/features/changes", url.Values{"document": {`{"agent_state":{"enabled":true}}`}})
		require.Equal(t, http.StatusConflict, r.Status)
		require.Contains(t, r.Body, "the proposed document is the current one")
	})
}

func TestConsoleSettingsDirectPutOffersBoth(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		b := signIn(t, e, e.PersonKey("Sol", "security"))
		s := b.get("/console/settings")
		require.Contains(t, s.Body, ">Save features</button>")
		require.Contains(t, s.Body, `formaction="/console/settings/features/changes">Propose change</button>`)
		r := b.post("/console/settings/features/changes", url.Values{"document": {`{"agent_state":{"enabled":true}}`}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		require.NotNil(t, approvePattern.FindStringSubmatch(b.get("/console/settings").Body))
		doc, _ := features(t, e, e.AdminKey)
		require.False(t, stateEnabled(doc), "a proposal is not applied")
	})
}

// A new space's first screen after sign-in is Notes: with agent memory still off it says so
// (200, with what to do), not a refusal.
func TestConsoleNotesWhileAgentMemoryIsOff(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		_, admin := e.NewSpace("fresh", false)
		b := signIn(t, e, admin)
		s := b.get("/console/notes")
		require.Equal(t, http.StatusOK, s.Status, s.Body)
		require.Contains(t, s.Body, "Agent memory is off for this space")
		require.Contains(t, s.Body, "Settings")
	})
}
