package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// POST /v1/keys: role admin; the spec is validated naming the member; the key is shown once
// and stored only as its hash; DELETE revokes it from the next request on.
func TestKeys(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		bad := []struct {
			name, member, code string
			body               any
		}{
			{"no kind", "kind", "invalid_member", map[string]any{"agent": "a", "vendor": "v"}},
			{"unknown kind", "kind", "invalid_member", map[string]any{"kind": "robot"}},
			{"agent without agent", "agent", "invalid_member", map[string]any{"kind": "agent", "vendor": "v"}},
			{"agent with a bad name", "agent", "invalid_member", map[string]any{"kind": "agent", "agent": "shop bot", "vendor": "v"}},
			{"agent without vendor", "vendor", "invalid_member", map[string]any{"kind": "agent", "agent": "a"}},
			{"unknown scope", "scopes", "invalid_member", map[string]any{"kind": "agent", "agent": "a", "vendor": "v", "scopes": []string{"everything"}}},
			{"agent with roles", "roles", "invalid_member", map[string]any{"kind": "agent", "agent": "a", "vendor": "v", "roles": []string{"admin"}}},
			{"person without roles", "roles", "invalid_member", map[string]any{"kind": "person", "name": "Rita"}},
			{"person with unknown role", "roles", "invalid_member", map[string]any{"kind": "person", "name": "Rita", "roles": []string{"root"}}},
			{"person without name", "name", "invalid_member", map[string]any{"kind": "person", "roles": []string{"reviewer"}}},
			{"person with scopes", "scopes", "invalid_member", map[string]any{"kind": "person", "name": "Rita", "roles": []string{"reviewer"}, "scopes": []string{"agent_state"}}},
			{"unknown member", "space_id", "unknown_member", map[string]any{"kind": "person", "name": "Rita", "roles": []string{"reviewer"}, "space_id": "sp_other"}},
			{"scopes not a list", "scopes", "invalid_member", map[string]any{"kind": "agent", "agent": "a", "vendor": "v", "scopes": "agent_state"}},
		}
		for _, tc := range bad {
			r := e.Do(http.MethodPost, "/v1/keys", e.AdminKey, tc.body)
			requireError(t, r, http.StatusBadRequest, tc.code)
			require.Equal(t, tc.member, errMember(t, r), tc.name)
		}
		requireError(t, e.Do(http.MethodPost, "/v1/keys", e.AdminKey, `{"kind":"person","kind":"agent"}`), http.StatusBadRequest, "invalid_json")

		// Only admins mint keys.
		agent := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		body := map[string]any{"kind": "person", "name": "Rita", "roles": []string{"reviewer"}}
		requireError(t, e.Do(http.MethodPost, "/v1/keys", agent, body), http.StatusForbidden, "role_required")
		requireError(t, e.Do(http.MethodPost, "/v1/keys", e.PersonKey("Sec", "security", "integration"), body), http.StatusForbidden, "role_required")
		count, err := e.DB.NewSelect().Model((*models.APIKey)(nil)).Count(context.Background())
		require.NoError(t, err)

		r := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/keys", e.AdminKey, map[string]any{
			"kind": "agent", "agent": "shop-bot", "vendor": "acme-ai", "scopes": []string{"agent_state", "agent_memory", "agent_memory:write"}})
		m := r.JSON(t)
		require.Len(t, m, 2, "the answer is {key_id, key}: %s", r.Body)
		keyID, key := m["key_id"].(string), m["key"].(string)
		require.True(t, strings.HasPrefix(key, "am_"), "key %q", key[:3])
		require.GreaterOrEqual(t, len(key), 3+43, "at least 32 random bytes")
		after, err := e.DB.NewSelect().Model((*models.APIKey)(nil)).Count(context.Background())
		require.NoError(t, err)
		require.Equal(t, count+1, after, "refused requests minted no key")

		// Stored only as a hash: the key is nowhere in the database, its SHA-256 is.
		var row models.APIKey
		require.NoError(t, e.DB.NewSelect().Model(&row).Where("id = ?", keyID).Scan(context.Background()))
		sum := sha256.Sum256([]byte(key))
		require.Equal(t, hex.EncodeToString(sum[:]), row.Hash)
		requireNotStored(t, e, key, key[3:], e.AdminKey[3:], agent[3:])
		require.Equal(t, []string{"agent_state", "agent_memory", "agent_memory:write"}, row.Scopes)

		// The key works; revoked, it fails on the very next request.
		enableWM(e, typesDoc(wmType("shop-bot", "conversation", 0, nil)))
		mustStore(e, key, map[string]any{"scope": conv("c"), "body": map[string]any{"step": "greet"}})
		requireError(t, e.Do(http.MethodDelete, "/v1/keys/"+keyID, agent, nil), http.StatusForbidden, "role_required")
		e.MustDo(http.StatusNoContent, http.MethodDelete, "/v1/keys/"+keyID, e.AdminKey, nil)
		requireError(t, write(e, key, map[string]any{"scope": conv("c"), "body": map[string]any{"step": "sizes"}}), http.StatusUnauthorized, "invalid_key")
		requireError(t, e.Do(http.MethodDelete, "/v1/keys/"+keyID, e.AdminKey, nil), http.StatusNotFound, "key_not_found")
		requireError(t, e.Do(http.MethodDelete, "/v1/keys/key_nope", e.AdminKey, nil), http.StatusNotFound, "key_not_found")

		// Unknown and malformed keys are 401 and say nothing about the key.
		for _, k := range []string{"am_" + strings.Repeat("A", 43), "nope", key + "x"} {
			r := e.Do(http.MethodPost, "/v1/agent-state/read", k, map[string]any{"scope": conv("c")})
			requireError(t, r, http.StatusUnauthorized, "invalid_key")
			require.NotContains(t, string(r.Body), k)
		}
	})
}

// A key of one space never reaches another space's data (MS-1): the space comes from the key.
func TestKeysSpaceIsolation(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		mustStore(e, key, map[string]any{"scope": conv("c-shared-id"), "body": map[string]any{"step": "greet"}})
		// A second space in the same database, served by the same API.
		_, otherAdmin, err := spaces.CreateWith(context.Background(), e.DB, "other", time.Now(), spaces.CreateOptions{DirectPut: true})
		require.NoError(t, err)
		e2 := &apptest.Env{T: t, Server: e.Server, DB: e.DB, AdminKey: otherAdmin}
		enableWM(e2, typesDoc(wmType("shop-bot", "conversation", 0, nil)))
		key2 := e2.AgentKey("shop-bot", "acme-ai", "agent_state")
		require.Equal(t, int64(0), read(e2, key2, conv("c-shared-id"), "").Version)
		require.Equal(t, int64(1), mustStore(e2, key2, map[string]any{"scope": conv("c-shared-id"), "body": map[string]any{"step": "done"}}))
		require.Equal(t, "greet", read(e, key, conv("c-shared-id"), "").Body["step"])
		var row models.APIKey
		require.NoError(t, e.DB.NewSelect().Model(&row).Where("hash = ?", auth.HashKey(key2)).Scan(context.Background()))
		requireError(t, e.Do(http.MethodDelete, "/v1/keys/"+row.ID, e.AdminKey, nil), http.StatusNotFound, "key_not_found")
		requireError(t, e.Do(http.MethodGet, "/v1/profiles/"+"prof_x", otherAdmin, nil), http.StatusNotFound, "profile_not_found")
	})
}

// GET|PUT /v1/documents: features needs role security, object-types admin or integration;
// invalid documents are 400 naming the member and change nothing.
func TestDocuments(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		features := map[string]any{"agent_state": map[string]any{"enabled": true},
			"agent_memory": map[string]any{"enabled": true, "writes": "agents", "max_notes_per_source": 500}}
		admin := e.PersonKey("Ada", "admin")
		security := e.PersonKey("Sec", "security")
		integ := e.PersonKey("Ivo", "integration")
		agent := e.AgentKey("shop-bot", "acme-ai", "agent_state")

		requireError(t, e.Do(http.MethodPut, "/v1/documents/features", admin, features), http.StatusForbidden, "role_required")
		requireError(t, e.Do(http.MethodPut, "/v1/documents/features", integ, features), http.StatusForbidden, "role_required")
		requireError(t, e.Do(http.MethodPut, "/v1/documents/features", agent, features), http.StatusForbidden, "role_required")
		r := e.MustDo(http.StatusOK, http.MethodPut, "/v1/documents/features", security, features)
		require.Equal(t, "1", r.Header.Get("X-Document-Version"))

		types := apptest.ShopBotTypes()
		requireError(t, e.Do(http.MethodPut, "/v1/documents/object-types", security, types), http.StatusForbidden, "role_required")
		requireError(t, e.Do(http.MethodPut, "/v1/documents/object-types", agent, types), http.StatusForbidden, "role_required")
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/documents/object-types", admin, types)
		r = e.MustDo(http.StatusOK, http.MethodPut, "/v1/documents/object-types", integ, types)
		require.Equal(t, "2", r.Header.Get("X-Document-Version"))

		requireError(t, e.Do(http.MethodGet, "/v1/documents/features", agent, nil), http.StatusForbidden, "role_required")
		requireError(t, e.Do(http.MethodGet, "/v1/documents/nope", admin, nil), http.StatusNotFound, "document_not_found")
		requireError(t, e.Do(http.MethodPut, "/v1/documents/nope", admin, map[string]any{}), http.StatusNotFound, "document_not_found")

		withType := func(mut func(t map[string]any)) map[string]any {
			d := apptest.ShopBotTypes()
			mut(d["types"].([]any)[0].(map[string]any))
			return d
		}
		as := func(t map[string]any) map[string]any { return t["agent_state"].(map[string]any) }
		badTypes := []struct {
			name, member string
			doc          any
		}{
			{"unknown top member", "typos", map[string]any{"types": []any{}, "typos": 1}},
			{"unknown type member", "types[0].colour", withType(func(t map[string]any) { t["colour"] = "red" })},
			{"unknown agent_state member", "types[0].agent_state.if_verison", withType(func(t map[string]any) { as(t)["if_verison"] = 1 })},
			{"max_bytes over 65536", "types[0].agent_state.max_bytes", withType(func(t map[string]any) { as(t)["max_bytes"] = 65537 })},
			{"max_bytes negative", "types[0].agent_state.max_bytes", withType(func(t map[string]any) { as(t)["max_bytes"] = -1 })},
			{"state retention 0d", "types[0].retention.state", withType(func(t map[string]any) { t["retention"] = map[string]any{"state": "0d"} })},
			{"state retention 181d", "types[0].retention.state", withType(func(t map[string]any) { t["retention"] = map[string]any{"state": "181d"} })},
			{"state retention 23h", "types[0].retention.state", withType(func(t map[string]any) { t["retention"] = map[string]any{"state": "23h"} })},
			{"state retention words", "types[0].retention.state", withType(func(t map[string]any) { t["retention"] = map[string]any{"state": "a month"} })},
			{"field retention of no field", "types[0].retention.nope", withType(func(t map[string]any) { t["retention"] = map[string]any{"nope": "1d"} })},
			{"scope outside the four", "types[0].agent_state.scope", withType(func(t map[string]any) { as(t)["scope"] = "session" })},
			{"write mode", "types[0].agent_state.write", withType(func(t map[string]any) { as(t)["write"] = "append" })},
			{"over_cap", "types[0].agent_state.over_cap", withType(func(t map[string]any) { as(t)["over_cap"] = "truncate" })},
			{"unknown field type", "types[0].fields.step.type", withType(func(t map[string]any) {
				t["fields"].(map[string]any)["step"] = map[string]any{"type": "uuid"}
			})},
			{"sensitivity", "types[0].fields.offer.sensitivity", withType(func(t map[string]any) {
				t["fields"].(map[string]any)["offer"] = map[string]any{"type": "string", "sensitivity": "secret"}
			})},
			{"agent type without agent_state", "types[0].agent_state", withType(func(t map[string]any) { delete(t, "agent_state") })},
			{"ownership", "types[0].ownership", withType(func(t map[string]any) { t["ownership"] = "model" })},
			{"type name", "types[0].type", withType(func(t map[string]any) { t["type"] = "Shop Bot" })},
		}
		for _, tc := range badTypes {
			r := e.Do(http.MethodPut, "/v1/documents/object-types", admin, tc.doc)
			require.Equal(t, http.StatusBadRequest, r.Status, "%s: got %d, want 400: %s", tc.name, r.Status, r.Body)
			require.Equal(t, tc.member, errMember(t, r), "%s: %s", tc.name, r.Body)
			msg := r.JSON(t)["error"].(map[string]any)["message"].(string)
			require.Contains(t, msg, tc.member[strings.LastIndex(tc.member, ".")+1:], "%s: the message names the member", tc.name)
		}
		dup := `{"types":[{"type":"a","type":"b","fields":{}}]}`
		requireError(t, e.Do(http.MethodPut, "/v1/documents/object-types", admin, dup), http.StatusBadRequest, "invalid_json")

		badFeatures := []struct {
			name, member string
			doc          any
		}{
			{"unknown member", "agent_sate", map[string]any{"agent_sate": map[string]any{"enabled": true}}},
			{"unknown nested member", "agent_state.enable", map[string]any{"agent_state": map[string]any{"enable": true}}},
			{"writes", "agent_memory.writes", map[string]any{"agent_memory": map[string]any{"writes": "everyone"}}},
			{"enabled not a boolean", "agent_state.enabled", map[string]any{"agent_state": map[string]any{"enabled": "yes"}}},
		}
		for _, tc := range badFeatures {
			r := e.Do(http.MethodPut, "/v1/documents/features", security, tc.doc)
			require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", tc.name, r.Body)
			require.Equal(t, tc.member, errMember(t, r), "%s: %s", tc.name, r.Body)
		}

		// Nothing changed: the same versions and contents as before the refusals.
		r = e.MustDo(http.StatusOK, http.MethodGet, "/v1/documents/object-types", admin, nil)
		require.Equal(t, "2", r.Header.Get("X-Document-Version"))
		require.Contains(t, string(r.Body), `"shop-bot"`)
		r = e.MustDo(http.StatusOK, http.MethodGet, "/v1/documents/features", admin, nil)
		require.Equal(t, "1", r.Header.Get("X-Document-Version"))
		require.Equal(t, true, r.JSON(t)["agent_state"].(map[string]any)["enabled"])

		// A valid document with every retention bound is accepted.
		ok := withType(func(t map[string]any) {
			t["retention"] = map[string]any{"state": "180d", "cart_note": "1h"}
			as(t)["max_bytes"] = 65536
		})
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/documents/object-types", admin, ok)
		ok = withType(func(t map[string]any) { t["retention"] = map[string]any{"state": "1d"} })
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/documents/object-types", admin, ok)
	})
}

// POST /v1/profiles: role integration; handles canonicalised (lower-case e-mail, E.164
// phone); a handle held by another profile is 409 handle_taken; name and handles never in
// the database in clear.
func TestProfiles(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		integ := e.PersonKey("Ivo", "integration")
		body := map[string]any{"name": "Marisol Fenwick", "handles": []string{"email:Marisol.Fenwick@Example.COM", "phone:+55 (11) 97531-8642", "username:MFenwick"}}
		requireError(t, e.Do(http.MethodPost, "/v1/profiles", e.PersonKey("Rita", "reviewer", "admin"), body), http.StatusForbidden, "role_required")
		requireError(t, e.Do(http.MethodPost, "/v1/profiles", e.AgentKey("shop-bot", "acme-ai", "agent_state"), body), http.StatusForbidden, "role_required")

		r := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/profiles", integ, body)
		id := r.JSON(t)["profile_id"].(string)
		p := e.MustDo(http.StatusOK, http.MethodGet, "/v1/profiles/"+id, integ, nil).JSON(t)
		require.Equal(t, "Marisol Fenwick", p["name"])
		require.Equal(t, []any{"email:marisol.fenwick@example.com", "phone:+5511975318642", "username:mfenwick"}, p["handles"])

		for _, h := range []string{"email:MARISOL.FENWICK@example.com", "phone:(11) 97531-8642", "phone:+5511975318642"} {
			r := e.Do(http.MethodPost, "/v1/profiles", integ, map[string]any{"name": "Someone", "handles": []string{"email:fresh@example.com", h}})
			requireError(t, r, http.StatusConflict, "handle_taken")
			require.NotContains(t, string(r.Body), "97531")
			require.NotContains(t, string(r.Body), "marisol")
		}
		// A refused profile left nothing behind: its fresh handle is still free.
		e.MustDo(http.StatusCreated, http.MethodPost, "/v1/profiles", integ, map[string]any{"name": "Other", "handles": []string{"email:fresh@example.com"}})

		for _, bad := range []map[string]any{
			{"name": "X", "handles": []string{}},
			{"name": "X", "handles": []string{"fax:1234567"}},
			{"name": "X", "handles": []string{"email:not-an-address"}},
			{"name": "X", "handles": []string{"email:x@example.com"}, "space_id": "sp_x"},
		} {
			r := e.Do(http.MethodPost, "/v1/profiles", integ, bad)
			require.Equal(t, http.StatusBadRequest, r.Status, "%v: %s", bad, r.Body)
		}

		// The phone digits as a run long enough that no hex hash holds it by chance.
		requireNotStored(t, e, "Marisol", "Fenwick", "975318642", "97531-8642", "mfenwick")
		requireError(t, e.Do(http.MethodGet, "/v1/profiles/"+id, e.PersonKey("Rita", "reviewer"), nil), http.StatusForbidden, "role_required")
		requireError(t, e.Do(http.MethodGet, "/v1/profiles/prof_nope", integ, nil), http.StatusNotFound, "profile_not_found")
	})
}
