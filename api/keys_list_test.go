package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/models"
)

// listedKey is one entry of GET /v1/keys as the test reads it.
type listedKey struct {
	ID         string     `json:"key_id"`
	Kind       string     `json:"kind"`
	Name       string     `json:"name"`
	Agent      string     `json:"agent"`
	Vendor     string     `json:"vendor"`
	Scopes     []string   `json:"scopes"`
	Roles      []string   `json:"roles"`
	Purposes   []string   `json:"purposes"`
	CreatedBy  string     `json:"created_by"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

type keyPage struct {
	Keys      []listedKey `json:"keys"`
	NextAfter *string     `json:"next_after"`
}

func listKeys(t *testing.T, e *apptest.Env, key, query string) keyPage {
	t.Helper()
	r := e.MustDo(http.StatusOK, http.MethodGet, "/v1/keys"+query, key, nil)
	var p keyPage
	require.NoError(t, json.Unmarshal(r.Body, &p), "body: %s", r.Body)
	return p
}

func byID(keys []listedKey) map[string]listedKey {
	m := map[string]listedKey{}
	for _, k := range keys {
		m[k.ID] = k
	}
	return m
}

// GET /v1/keys (issue 27) lists the space's keys, revoked ones too, with kind, name, agent,
// vendor, scopes, roles, created, revoked and last used; never a key or its hash; only this
// space's keys; to admin and security only.
func TestListKeys(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		mint := func(spec map[string]any) (id, key string) {
			m := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/keys", e.AdminKey, spec).JSON(t)
			return m["key_id"].(string), m["key"].(string)
		}
		botID, bot := mint(map[string]any{"kind": "agent", "agent": "shop-bot", "vendor": "acme-ai", "scopes": []string{"agent_state", "agent_memory"}})
		secID, sec := mint(map[string]any{"kind": "person", "name": "Sol", "roles": []string{"security"}})
		_, rev := mint(map[string]any{"kind": "person", "name": "Rui", "roles": []string{"reviewer"}})
		oldID, _ := mint(map[string]any{"kind": "agent", "agent": "old-bot", "vendor": "acme-ai", "scopes": []string{"context"}})
		e.MustDo(http.StatusNoContent, http.MethodDelete, "/v1/keys/"+oldID, e.AdminKey, nil)
		_, otherAdmin := e.NewSpace("other", true)
		otherID := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/keys", otherAdmin,
			map[string]any{"kind": "agent", "agent": "shop-bot", "vendor": "acme-ai", "scopes": []string{"context"}}).JSON(t)["key_id"].(string)

		r := e.MustDo(http.StatusOK, http.MethodGet, "/v1/keys", e.AdminKey, nil)
		for _, secret := range []string{e.AdminKey, bot, sec, rev, otherAdmin, auth.HashKey(bot), `"hash"`, `"key"`} {
			require.NotContains(t, string(r.Body), secret, "the listing shows a secret or a hash")
		}
		var page keyPage
		require.NoError(t, json.Unmarshal(r.Body, &page))
		require.Nil(t, page.NextAfter)
		keys := byID(page.Keys)
		require.Len(t, keys, 5, "the admin key and the four minted: %s", r.Body)
		require.NotContains(t, keys, otherID, "another space's key is listed")
		for i := 1; i < len(page.Keys); i++ {
			require.Less(t, page.Keys[i-1].ID, page.Keys[i].ID, "keys are in id order")
		}

		b := keys[botID]
		require.Equal(t, "agent", b.Kind)
		require.Equal(t, "shop-bot", b.Agent)
		require.Equal(t, "acme-ai", b.Vendor)
		require.Equal(t, []string{"agent_state", "agent_memory"}, b.Scopes)
		require.Empty(t, b.Roles)
		require.NotEmpty(t, b.CreatedBy)
		require.False(t, b.CreatedAt.IsZero())
		require.Nil(t, b.RevokedAt)
		require.Nil(t, b.LastUsedAt, "the bot never used its key")
		s := keys[secID]
		require.Equal(t, "person", s.Kind)
		require.Equal(t, "Sol", s.Name)
		require.Equal(t, []string{"security"}, s.Roles)
		require.Empty(t, s.Scopes)
		require.NotNil(t, keys[oldID].RevokedAt, "a revoked key is listed as revoked")
		var adminKey listedKey
		for _, k := range page.Keys {
			if k.Kind == "person" && k.Name == "admin" {
				adminKey = k
			}
		}
		require.NotNil(t, adminKey.LastUsedAt, "the admin key's own requests are its last use")

		// A use shows at the next listing (the listing writes what the replica noted).
		e.MustDo(http.StatusOK, http.MethodGet, "/v1/agent-memory/block", bot, nil)
		used := byID(listKeys(t, e, sec, "").Keys)[botID].LastUsedAt
		require.NotNil(t, used, "the bot's request is not its last use")
		require.WithinDuration(t, time.Now(), *used, time.Minute)

		// Roles: admin or security; never an agent nor another person.
		requireError(t, e.Do(http.MethodGet, "/v1/keys", bot, nil), http.StatusForbidden, "role_required")
		requireError(t, e.Do(http.MethodGet, "/v1/keys", rev, nil), http.StatusForbidden, "role_required")
		requireError(t, e.Do(http.MethodGet, "/v1/keys", "", nil), http.StatusUnauthorized, "missing_key")
	})
}

// GET /v1/keys pages by key id: limit keys, next_after the last one's id while more follow;
// a malformed limit or after is 400 invalid_query naming it.
func TestListKeysPages(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		for i := range 4 {
			e.MustDo(http.StatusCreated, http.MethodPost, "/v1/keys", e.AdminKey,
				map[string]any{"kind": "person", "name": "p" + strings.Repeat("x", i), "roles": []string{"reviewer"}})
		}
		all := listKeys(t, e, e.AdminKey, "").Keys
		require.Len(t, all, 5)
		var got []listedKey
		query := "?limit=2"
		for pages := 0; ; pages++ {
			require.Less(t, pages, 5, "paging does not end")
			p := listKeys(t, e, e.AdminKey, query)
			require.LessOrEqual(t, len(p.Keys), 2)
			got = append(got, p.Keys...)
			if p.NextAfter == nil {
				break
			}
			require.Equal(t, p.Keys[len(p.Keys)-1].ID, *p.NextAfter)
			query = "?limit=2&after=" + *p.NextAfter
		}
		require.Len(t, got, 5)
		for i := range all {
			require.Equal(t, all[i].ID, got[i].ID, "pages give the keys in order, each once")
		}
		for _, tc := range []struct{ query, member string }{
			{"?limit=0", "limit"}, {"?limit=501", "limit"}, {"?limit=x", "limit"},
			{"?after=nope", "after"}, {"?after=key_' OR 1=1 --", "after"},
		} {
			r := e.Do(http.MethodGet, "/v1/keys"+strings.ReplaceAll(tc.query, " ", "%20"), e.AdminKey, nil)
			requireError(t, r, http.StatusBadRequest, "invalid_query")
			require.Equal(t, tc.member, errMember(t, r), tc.query)
		}
	})
}

// Usage notes a key's use at most once a minute and writes it off the request's path: no
// statement until Flush, one UPDATE per key then, never moving a stored time backwards; a
// key noted again within the minute is not written again.
func TestKeyUsageRecordsAtMostOncePerMinute(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		var admin models.APIKey
		require.NoError(t, e.DB.NewSelect().Model(&admin).Where("space_id = ?", e.SpaceID).Scan(ctx))
		lastUsed := func() *time.Time {
			var row models.APIKey
			require.NoError(t, e.DB.NewSelect().Model(&row).Where("id = ?", admin.ID).Scan(ctx))
			return row.LastUsedAt
		}
		require.Nil(t, lastUsed())
		u := auth.NewUsage()
		t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
		u.Touch(admin.ID, t0)
		require.Nil(t, lastUsed(), "Touch wrote on the request's path")
		require.NoError(t, u.Flush(ctx, e.DB, t0))
		require.True(t, t0.Equal(*lastUsed()), "got %v, want %v", lastUsed(), t0)
		u.Touch(admin.ID, t0.Add(30*time.Second)) // within the minute: not noted
		require.NoError(t, u.Flush(ctx, e.DB, t0.Add(30*time.Second)))
		require.True(t, t0.Equal(*lastUsed()))
		u.Touch(admin.ID, t0.Add(61*time.Second))
		require.NoError(t, u.Flush(ctx, e.DB, t0.Add(61*time.Second)))
		require.True(t, t0.Add(61*time.Second).Equal(*lastUsed()))
		// Another replica's older use never moves it back.
		other := auth.NewUsage()
		other.Touch(admin.ID, t0.Add(10*time.Second))
		require.NoError(t, other.Flush(ctx, e.DB, t0.Add(10*time.Second)))
		require.True(t, t0.Add(61*time.Second).Equal(*lastUsed()))
		var nilUsage *auth.Usage
		nilUsage.Touch(admin.ID, t0)
		require.NoError(t, nilUsage.Flush(ctx, e.DB, t0))
	})
}

// TestKeySelf: GET /v1/keys/self tells any key its own space, id, kind, agent and vendor or
// name, scopes, roles and purposes (QT-2), never a secret; without a key it is 401.
func TestKeySelf(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		bot := e.AgentKey("shop-bot", "acme-ai", "agent_memory", "context")
		var self map[string]any
		r := e.MustDo(http.StatusOK, http.MethodGet, "/v1/keys/self", bot, nil)
		require.NoError(t, json.Unmarshal(r.Body, &self))
		listed := listKeys(t, e, e.AdminKey, "")
		var want listedKey
		for _, k := range listed.Keys {
			if k.Agent == "shop-bot" {
				want = k
			}
		}
		require.Equal(t, e.SpaceID, self["space_id"])
		for member, v := range map[string]any{"key_id": want.ID, "kind": "agent", "agent": "shop-bot", "vendor": "acme-ai",
			"scopes": []any{"agent_memory", "context"}, "roles": []any{}, "purposes": []any{}, "revoked_at": nil} {
			require.Equal(t, v, self[member], member)
		}
		require.NotContains(t, string(r.Body), bot, "never the key")

		sol := e.PersonKey("Sol", "security", "reviewer")
		r = e.MustDo(http.StatusOK, http.MethodGet, "/v1/keys/self", sol, nil)
		self = nil
		require.NoError(t, json.Unmarshal(r.Body, &self))
		require.Equal(t, "person", self["kind"])
		require.Equal(t, "Sol", self["name"])
		require.ElementsMatch(t, []any{"security", "reviewer"}, self["roles"])
		require.Equal(t, []any{}, self["scopes"])
		require.NotContains(t, self, "agent")

		require.Equal(t, http.StatusUnauthorized, e.Do(http.MethodGet, "/v1/keys/self", "", nil).Status)
	})
}

// TestKeyPurposes: an agent key's purposes are set at mint, listed with the key, told to the
// key itself and named in the key.create receipt (QT-2); bad purposes are 400 naming the
// member and mint nothing.
func TestKeyPurposes(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		r := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/keys", e.AdminKey, map[string]any{"kind": "agent", "agent": "shop-bot",
			"vendor": "acme-ai", "scopes": []string{"agent_memory"}, "purposes": []string{"customer-support", "refunds"}})
		minted := r.JSON(t)
		id, key := minted["key_id"].(string), minted["key"].(string)

		var self map[string]any
		require.NoError(t, json.Unmarshal(e.MustDo(http.StatusOK, http.MethodGet, "/v1/keys/self", key, nil).Body, &self))
		require.Equal(t, []any{"customer-support", "refunds"}, self["purposes"])
		for _, k := range listKeys(t, e, e.AdminKey, "").Keys {
			if k.ID == id {
				require.Equal(t, []string{"customer-support", "refunds"}, k.Purposes)
			} else {
				require.Equal(t, []string{}, k.Purposes, "keys minted without purposes list none")
			}
		}
		var detail map[string]any
		for _, rc := range spaceReceipts(t, e, e.AdminKey) {
			if rc.Action == "key.create" && len(rc.ObjectIDs) == 1 && rc.ObjectIDs[0] == id {
				detail = rc.Detail
			}
		}
		require.Equal(t, []any{"customer-support", "refunds"}, detail["purposes"], "the receipt names the purposes")

		before := len(listKeys(t, e, e.AdminKey, "").Keys)
		for _, bad := range []map[string]any{
			{"kind": "agent", "agent": "a1", "vendor": "v", "purposes": []string{"Refunds"}},
			{"kind": "agent", "agent": "a1", "vendor": "v", "purposes": []string{"x", "x"}},
			{"kind": "agent", "agent": "a1", "vendor": "v", "purposes": []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}},
			{"kind": "agent", "agent": "a1", "vendor": "v", "purposes": "refunds"},
			{"kind": "person", "name": "Sol", "roles": []string{"security"}, "purposes": []string{"audit"}},
		} {
			r := e.Do(http.MethodPost, "/v1/keys", e.AdminKey, bad)
			require.Equal(t, http.StatusBadRequest, r.Status, "%v: %s", bad, r.Body)
		}
		require.Len(t, listKeys(t, e, e.AdminKey, "").Keys, before, "a refused mint stores nothing")
	})
}
