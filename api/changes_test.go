package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/changes"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// govSpace is a space created with the default (direct PUT off) in e's database: its admin
// key and a helper minting person keys in it.
type govSpace struct {
	e     *apptest.Env
	id    string
	admin string
}

func newGovSpace(e *apptest.Env) govSpace {
	id, admin := e.NewSpace("governed", false)
	return govSpace{e: e, id: id, admin: admin}
}

func (g govSpace) person(name string, roles ...string) string {
	r := g.e.MustDo(http.StatusCreated, "POST", "/v1/keys", g.admin, map[string]any{"kind": "person", "name": name, "roles": roles})
	return r.JSON(g.e.T)["key"].(string)
}

// change decodes a change request answer.
func change(t *testing.T, r apptest.Response) changes.Change {
	t.Helper()
	var c changes.Change
	require.NoError(t, json.Unmarshal(r.Body, &c), "%s", r.Body)
	return c
}

func listChanges(t *testing.T, e *apptest.Env, key, name, query string) []changes.Change {
	t.Helper()
	r := e.MustDo(http.StatusOK, "GET", "/v1/documents/"+name+"/changes"+query, key, nil)
	var page struct {
		Changes []changes.Change `json:"changes"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &page), "%s", r.Body)
	return page.Changes
}

func spaceReceipts(t *testing.T, e *apptest.Env, key string) []receipts.Receipt {
	t.Helper()
	r := e.MustDo(http.StatusOK, "GET", "/v1/receipts?limit=1000", key, nil)
	var page struct {
		Receipts []receipts.Receipt `json:"receipts"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &page), "%s", r.Body)
	return page.Receipts
}

func docVersion(t *testing.T, e *apptest.Env, key, name string) (string, map[string]any) {
	t.Helper()
	r := e.MustDo(http.StatusOK, "GET", "/v1/documents/"+name, key, nil)
	return r.Header.Get("X-Document-Version"), r.JSON(t)
}

// Issue 15: in a new space direct PUT is refused (409 direct_put_disabled, nothing changes);
// a change is proposed, listed with its diff, refused to its proposer (403
// change_own_proposal, also through another key of the same name) and to a person without
// role security, and applied by a second security person: the document, a document.put
// receipt naming the change and a space.document_change_applied event.
func TestChangeRequestApprovedBySecondPerson(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		g := newGovSpace(e)
		sec1 := g.person("Sol", "security")
		sec1again := g.person("sol", "security", "admin")
		sec2 := g.person("Rui", "security")
		reviewer := g.person("Val", "reviewer", "admin")

		v, features := docVersion(t, e, g.admin, "features")
		require.Equal(t, "0", v)
		require.Equal(t, map[string]any{"direct_put": false}, features["documents"], "the default states the setting")
		doc := map[string]any{"agent_state": map[string]any{"enabled": true}}
		requireError(t, e.Do("PUT", "/v1/documents/features", g.admin, doc), http.StatusConflict, "direct_put_disabled")
		requireError(t, e.Do("PUT", "/v1/documents/object-types", g.admin, apptest.ShopBotTypes()), http.StatusConflict, "direct_put_disabled")
		v, _ = docVersion(t, e, g.admin, "features")
		require.Equal(t, "0", v, "a refused PUT changes nothing")

		r := e.MustDo(http.StatusCreated, "POST", "/v1/documents/features/changes", sec1, doc)
		ch := change(t, r)
		require.Equal(t, changes.Pending, ch.Status)
		require.Equal(t, int64(0), ch.BaseVersion)
		require.Contains(t, ch.Diff, "--- features@v0\n+++ features (proposed)\n")
		require.Contains(t, ch.Diff, "\n-    \"enabled\": false\n+    \"enabled\": true\n")
		require.JSONEq(t, `{"enabled": true}`, mustJSON(t, mapOf(t, ch.Document)["agent_state"]))
		require.Equal(t, map[string]any{"direct_put": false}, mapOf(t, ch.Document)["documents"], "the proposal keeps the setting")

		list := listChanges(t, e, reviewer, "features", "")
		require.Len(t, list, 1)
		require.Equal(t, ch.ID, list[0].ID)
		require.Equal(t, ch.Diff, list[0].Diff)
		require.Empty(t, listChanges(t, e, reviewer, "features", "?status=applied"))
		require.Empty(t, listChanges(t, e, reviewer, "object-types", ""))
		got := change(t, e.MustDo(http.StatusOK, "GET", "/v1/documents/features/changes/"+ch.ID, reviewer, nil))
		require.Equal(t, ch.ID, got.ID)
		requireError(t, e.Do("GET", "/v1/documents/object-types/changes/"+ch.ID, reviewer, nil), http.StatusNotFound, "change_not_found")
		requireError(t, e.Do("GET", "/v1/documents/features/changes/"+ch.ID, e.AdminKey, nil), http.StatusNotFound, "change_not_found") // another space

		approve := "/v1/documents/features/changes/" + ch.ID + "/approve"
		requireError(t, e.Do("POST", approve, sec1, nil), http.StatusForbidden, "change_own_proposal")
		requireError(t, e.Do("POST", approve, sec1again, nil), http.StatusForbidden, "change_own_proposal")
		// A look-alike of the proposer's name (a Cyrillic letter, a full-width letter) is the
		// same person (every class: TestChangeLookAlikeNamesAreTheProposer); a key minted after
		// the proposal (an admin making their own "second person") never approves it.
		requireError(t, e.Do("POST", approve, g.person("\u0405ol", "security"), nil), http.StatusForbidden, "change_own_proposal")
		requireError(t, e.Do("POST", approve, g.person("\uff33ol", "security"), nil), http.StatusForbidden, "change_own_proposal")
		requireError(t, e.Do("POST", approve, g.person("Totally Someone Else", "security"), nil), http.StatusForbidden, "change_approver_too_new")
		requireError(t, e.Do("POST", approve, reviewer, nil), http.StatusForbidden, "role_required")
		requireError(t, e.Do("POST", approve, e.AdminKey, nil), http.StatusNotFound, "change_not_found")
		v, _ = docVersion(t, e, g.admin, "features")
		require.Equal(t, "0", v, "refused approvals change nothing")

		applied := change(t, e.MustDo(http.StatusOK, "POST", approve, sec2, nil))
		require.Equal(t, changes.Applied, applied.Status)
		require.NotNil(t, applied.AppliedVersion)
		require.Equal(t, int64(1), *applied.AppliedVersion)
		require.NotNil(t, applied.DecidedBy)
		v, features = docVersion(t, e, g.admin, "features")
		require.Equal(t, "1", v)
		require.Equal(t, true, features["agent_state"].(map[string]any)["enabled"])
		requireError(t, e.Do("POST", approve, sec2, nil), http.StatusConflict, "change_not_pending")
		require.Len(t, listChanges(t, e, reviewer, "features", "?status=applied"), 1)

		var put, propose int
		for _, rc := range spaceReceipts(t, e, g.admin) {
			switch rc.Action {
			case "document.put":
				put++
				require.Equal(t, ch.ID, rc.Detail["change_id"])
				require.Equal(t, float64(1), rc.Detail["version"])
				require.Equal(t, *applied.DecidedBy, rc.ActorKeyID)
			case "document.change.propose":
				propose++
			}
		}
		require.Equal(t, 1, put)
		require.Equal(t, 1, propose)
		e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", g.admin, nil)

		var types []string
		for _, ev := range getEvents(t, e, "", g.admin).Events {
			require.Equal(t, ch.ID, ev.Event.ChangeID)
			require.Equal(t, "features", ev.Event.Document)
			types = append(types, ev.Event.Type)
		}
		require.Equal(t, []string{changes.EventProposed, changes.EventApplied}, types)

		// The applied document kept the setting: direct PUT stays off.
		requireError(t, e.Do("PUT", "/v1/documents/features", g.admin, doc), http.StatusConflict, "direct_put_disabled")
	})
}

// Issue 31 (the two-person rule): a key the proposer minted, directly or through a key it
// minted, never approves the proposer's change (403 change_approver_minted_by_proposer), even
// when it was minted before the proposal and carries another name; a key minted after it is
// 403 change_approver_too_new; a key of a genuinely other person approves.
func TestChangeApproverMintedByProposer(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		g := newGovSpace(e)
		sol := g.person("Sol", "security", "admin")
		other := g.person("Val", "security")
		mint := func(by, name string, roles ...string) string {
			r := e.MustDo(http.StatusCreated, "POST", "/v1/keys", by, map[string]any{"kind": "person", "name": name, "roles": roles})
			return r.JSON(t)["key"].(string)
		}
		direct := mint(sol, "Rui", "security")
		middle := mint(sol, "Kim", "admin")
		transitive := mint(middle, "Lee", "security")

		doc := map[string]any{"agent_state": map[string]any{"enabled": true}}
		ch := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/features/changes", sol, doc))
		approve := "/v1/documents/features/changes/" + ch.ID + "/approve"
		requireError(t, e.Do("POST", approve, direct, nil), http.StatusForbidden, "change_approver_minted_by_proposer")
		requireError(t, e.Do("POST", approve, transitive, nil), http.StatusForbidden, "change_approver_minted_by_proposer")
		requireError(t, e.Do("POST", approve, mint(sol, "Max", "security"), nil), http.StatusForbidden, "change_approver_too_new")
		v, _ := docVersion(t, e, g.admin, "features")
		require.Equal(t, "0", v, "refused approvals change nothing")
		require.Equal(t, changes.Pending, change(t, e.MustDo(http.StatusOK, "GET", "/v1/documents/features/changes/"+ch.ID, sol, nil)).Status)

		applied := change(t, e.MustDo(http.StatusOK, "POST", approve, other, nil))
		require.Equal(t, changes.Applied, applied.Status)
		v, _ = docVersion(t, e, g.admin, "features")
		require.Equal(t, "1", v)
	})
}

// Issue 15: a change proposed against a version the document no longer has is stale: it
// lists as stale, its approval is 409 change_stale and applies nothing.
func TestChangeRequestStale(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		g := newGovSpace(e)
		ada, ivo, sec := g.person("Ada", "admin"), g.person("Ivo", "integration"), g.person("Sol", "security")
		a := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/object-types/changes", ada, apptest.ShopBotTypes()))
		b := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/object-types/changes", ivo, map[string]any{"types": []any{
			map[string]any{"type": "other", "fields": map[string]any{"n": map[string]any{"type": "integer"}}}}}))
		pending := listChanges(t, e, sec, "object-types", "?status=pending")
		require.Len(t, pending, 2)
		require.Equal(t, b.ID, pending[0].ID, "newest first")

		e.MustDo(http.StatusOK, "POST", "/v1/documents/object-types/changes/"+a.ID+"/approve", sec, nil)
		stale := listChanges(t, e, sec, "object-types", "?status=stale")
		require.Len(t, stale, 1)
		require.Equal(t, b.ID, stale[0].ID)
		require.Empty(t, listChanges(t, e, sec, "object-types", "?status=pending"))

		requireError(t, e.Do("POST", "/v1/documents/object-types/changes/"+b.ID+"/approve", sec, nil), http.StatusConflict, "change_stale")
		v, types := docVersion(t, e, sec, "object-types")
		require.Equal(t, "1", v)
		require.Contains(t, mustJSON(t, types), `"shop-bot"`)
		require.NotContains(t, mustJSON(t, types), `"other"`)
		got := change(t, e.MustDo(http.StatusOK, "GET", "/v1/documents/object-types/changes/"+b.ID, sec, nil))
		require.Equal(t, changes.Stale, got.Status)
		requireError(t, e.Do("POST", "/v1/documents/object-types/changes/"+b.ID+"/reject", sec, map[string]any{"reason": "late"}), http.StatusConflict, "change_not_pending")

		// Proposed again against version 1, its diff starts from the applied document.
		c := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/object-types/changes", ivo, map[string]any{"types": []any{}}))
		require.Equal(t, int64(1), c.BaseVersion)
		require.Contains(t, c.Diff, "--- object-types@v1\n")
		require.Contains(t, c.Diff, `-      "type": "shop-bot",`)
		requireError(t, e.Do("POST", "/v1/documents/object-types/changes", ivo, mapOf(t, json.RawMessage(mustJSON(t, types)))), http.StatusConflict, "change_without_difference")
	})
}

// Issue 15: a rejection needs a reason (400 member reason), is done by a security person or
// the proposer withdrawing, keeps the reason and never touches the document.
func TestChangeRequestRejected(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		g := newGovSpace(e)
		ada, ivo, sec := g.person("Ada", "admin"), g.person("Ivo", "integration"), g.person("Sol", "security")
		a := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/object-types/changes", ada, apptest.ShopBotTypes()))
		reject := "/v1/documents/object-types/changes/" + a.ID + "/reject"
		require.Equal(t, "reason", errMember(t, e.MustDo(http.StatusBadRequest, "POST", reject, sec, map[string]any{"reason": "  "})))
		requireError(t, e.Do("POST", reject, sec, nil), http.StatusBadRequest, "invalid_json")
		requireError(t, e.Do("POST", reject, ivo, map[string]any{"reason": "no"}), http.StatusForbidden, "role_required")
		r := change(t, e.MustDo(http.StatusOK, "POST", reject, sec, map[string]any{"reason": "the cart note needs a shorter retention"}))
		require.Equal(t, changes.Rejected, r.Status)
		require.Equal(t, "the cart note needs a shorter retention", *r.Reason)
		requireError(t, e.Do("POST", "/v1/documents/object-types/changes/"+a.ID+"/approve", sec, nil), http.StatusConflict, "change_not_pending")
		v, _ := docVersion(t, e, sec, "object-types")
		require.Equal(t, "0", v)

		// The proposer withdraws their own change without role security.
		b := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/object-types/changes", ivo, apptest.ShopBotTypes()))
		e.MustDo(http.StatusOK, "POST", "/v1/documents/object-types/changes/"+b.ID+"/reject", ivo, map[string]any{"reason": "withdrawn"})
		require.Len(t, listChanges(t, e, sec, "object-types", "?status=rejected"), 2)
		var rejects int
		for _, rc := range spaceReceipts(t, e, g.admin) {
			if rc.Action == "document.change.reject" {
				rejects++
			}
			require.NotEqual(t, "document.put", rc.Action)
		}
		require.Equal(t, 2, rejects)
	})
}

// Issue 15: an invalid proposed document is 400 naming the member and stores nothing; the
// proposer needs the role PUT needs; agents read no changes; unknown names and statuses.
func TestChangeRequestValidationAndRoles(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		g := newGovSpace(e)
		ada, sec := g.person("Ada", "admin"), g.person("Sol", "security")
		before := len(spaceReceipts(t, e, g.admin))
		r := e.MustDo(http.StatusBadRequest, "POST", "/v1/documents/features/changes", sec, map[string]any{"agent_memory": map[string]any{"writes": "everyone"}})
		require.Equal(t, "agent_memory.writes", errMember(t, r))
		bad := apptest.ShopBotTypes()
		bad["types"].([]any)[0].(map[string]any)["agent_state"].(map[string]any)["max_bytes"] = 65537
		r = e.MustDo(http.StatusBadRequest, "POST", "/v1/documents/object-types/changes", ada, bad)
		require.Equal(t, "types[0].agent_state.max_bytes", errMember(t, r))
		r = e.MustDo(http.StatusBadRequest, "POST", "/v1/documents/features/changes", sec, map[string]any{"documents": map[string]any{"direct_put": "yes"}})
		require.Equal(t, "documents.direct_put", errMember(t, r))
		require.Empty(t, listChanges(t, e, sec, "features", ""))
		require.Empty(t, listChanges(t, e, sec, "object-types", ""))
		require.Len(t, spaceReceipts(t, e, g.admin), before, "nothing stored")
		require.Empty(t, getEvents(t, e, "", g.admin).Events)

		features := map[string]any{"agent_state": map[string]any{"enabled": true}}
		requireError(t, e.Do("POST", "/v1/documents/features/changes", ada, features), http.StatusForbidden, "role_required")
		requireError(t, e.Do("POST", "/v1/documents/object-types/changes", sec, apptest.ShopBotTypes()), http.StatusForbidden, "role_required")
		agent := e.MustDo(http.StatusCreated, "POST", "/v1/keys", g.admin, map[string]any{"kind": "agent", "agent": "bot", "vendor": "v", "scopes": []string{"agent_state"}}).JSON(t)["key"].(string)
		requireError(t, e.Do("POST", "/v1/documents/features/changes", agent, features), http.StatusForbidden, "role_required")
		requireError(t, e.Do("GET", "/v1/documents/features/changes", agent, nil), http.StatusForbidden, "role_required")
		requireError(t, e.Do("POST", "/v1/documents/nope/changes", sec, features), http.StatusNotFound, "document_not_found")
		requireError(t, e.Do("GET", "/v1/documents/nope/changes", sec, nil), http.StatusNotFound, "document_not_found")
		requireError(t, e.Do("GET", "/v1/documents/features/changes?status=maybe", sec, nil), http.StatusBadRequest, "invalid_query")
		requireError(t, e.Do("GET", "/v1/documents/features/changes/chg_nope", sec, nil), http.StatusNotFound, "change_not_found")
	})
}

// Issue 15: a space created with direct PUT (apptest's, `space create --direct-put`) keeps
// it while features does not turn it off; a PUT that omits the setting stores it stated;
// turned off, PUT is 409 and nothing changes, and only an approved change turns it on again.
func TestDirectPutSetting(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		r := e.MustDo(http.StatusOK, "PUT", "/v1/documents/features", e.AdminKey, map[string]any{"agent_state": map[string]any{"enabled": true}})
		require.Equal(t, map[string]any{"direct_put": true}, r.JSON(t)["documents"], "the stored document states the setting")
		e.MustDo(http.StatusOK, "PUT", "/v1/documents/features", e.AdminKey, map[string]any{"agent_state": map[string]any{"enabled": true}, "documents": map[string]any{"direct_put": false}})
		off := map[string]any{"agent_state": map[string]any{"enabled": false}}
		requireError(t, e.Do("PUT", "/v1/documents/features", e.AdminKey, off), http.StatusConflict, "direct_put_disabled")
		requireError(t, e.Do("PUT", "/v1/documents/object-types", e.AdminKey, apptest.ShopBotTypes()), http.StatusConflict, "direct_put_disabled")
		v, features := docVersion(t, e, e.AdminKey, "features")
		require.Equal(t, "2", v)
		require.Equal(t, true, features["agent_state"].(map[string]any)["enabled"])

		// A change that omits the setting keeps it off; one that states true turns it on.
		kept := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/features/changes", e.AdminKey, off))
		require.Equal(t, map[string]any{"direct_put": false}, mapOf(t, kept.Document)["documents"])
		require.NotContains(t, kept.Diff, "direct_put")
		e.MustDo(http.StatusOK, "POST", "/v1/documents/features/changes/"+kept.ID+"/reject", e.AdminKey, map[string]any{"reason": "withdrawn"})
		// Ana proposes with her own key: the space's first admin key minted every other key, so
		// nothing it proposes can be approved (the two-person rule, issue 31).
		ana := e.PersonKey("Ana", "admin", "security")
		rui := e.PersonKey("Rui", "security") // minted before the proposal it approves
		on := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/features/changes", ana,
			map[string]any{"agent_state": map[string]any{"enabled": true}, "documents": map[string]any{"direct_put": true}}))
		require.Contains(t, on.Diff, "-    \"direct_put\": false\n+    \"direct_put\": true\n")
		requireError(t, e.Do("POST", "/v1/documents/features/changes/"+on.ID+"/approve", ana, nil), http.StatusForbidden, "change_own_proposal")
		e.MustDo(http.StatusOK, "POST", "/v1/documents/features/changes/"+on.ID+"/approve", rui, nil)
		e.PutDocument("object-types", apptest.ShopBotTypes())

		// A direct PUT makes the pending changes of its document stale.
		p := change(t, e.MustDo(http.StatusCreated, "POST", "/v1/documents/object-types/changes", ana, map[string]any{"types": []any{}}))
		e.PutDocument("object-types", apptest.ShopBotTypes())
		requireError(t, e.Do("POST", "/v1/documents/object-types/changes/"+p.ID+"/approve", rui, nil), http.StatusConflict, "change_stale")
	})
}

func mapOf(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	return m
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// A document body of null (or any non-object) is refused, on a direct PUT and in a change
// request alike: null would otherwise decode as an empty document and reset every setting.
func TestDocumentNullBodyRefused(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.MustDo(http.StatusOK, "PUT", "/v1/documents/features", e.AdminKey, map[string]any{"agent_state": map[string]any{"enabled": true}})
		v, _ := docVersion(t, e, e.AdminKey, "features")
		for _, path := range []string{"/v1/documents/features", "/v1/documents/object-types"} {
			requireError(t, e.Do("PUT", path, e.AdminKey, []byte("null")), http.StatusBadRequest, "invalid_document")
			requireError(t, e.Do("POST", path+"/changes", e.AdminKey, []byte(" null ")), http.StatusBadRequest, "invalid_document")
		}
		after, features := docVersion(t, e, e.AdminKey, "features")
		require.Equal(t, v, after, "nothing changed")
		require.Equal(t, true, features["agent_state"].(map[string]any)["enabled"])
	})
}
