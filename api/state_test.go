package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/subjects"
	"github.com/agentmemory/agentmemory/models"
)

// WM-1: the feature is off by default; a write or read answers 403 feature_disabled.
func TestWMFeatureOff(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("object-types", typesDoc(wmType("shop-bot", "conversation", 0, nil)))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		r := write(e, key, map[string]any{"scope": conv("c-1"), "body": map[string]any{"step": "greet"}})
		requireError(t, r, http.StatusForbidden, "feature_disabled")
		r = e.Do(http.MethodPost, "/v1/agent-state/read", key, map[string]any{"scope": conv("c-1")})
		requireError(t, r, http.StatusForbidden, "feature_disabled")

		// Explicitly off is off too.
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": false}})
		r = write(e, key, map[string]any{"scope": conv("c-1"), "body": map[string]any{"step": "greet"}})
		requireError(t, r, http.StatusForbidden, "feature_disabled")
	})
}

// WM-1: the key needs scope agent_state; a person needs role integration.
func TestWMScopeRequired(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		setupWM(e)
		noScope := e.AgentKey("shop-bot", "acme-ai", "agent_memory")
		req := map[string]any{"scope": conv("c-1"), "body": map[string]any{"step": "greet"}}
		requireError(t, write(e, noScope, req), http.StatusForbidden, "scope_required")
		r := e.Do(http.MethodPost, "/v1/agent-state/read", noScope, map[string]any{"scope": conv("c-1")})
		requireError(t, r, http.StatusForbidden, "scope_required")

		reviewer := e.PersonKey("Rita", "reviewer", "admin")
		req["agent"] = "shop-bot"
		requireError(t, write(e, reviewer, req), http.StatusForbidden, "role_required")

		requireError(t, write(e, "", req), http.StatusUnauthorized, "missing_key")
	})
}

// WM-4: an agent key writes only its own agent's state; a person with integration names any
// agent (and must name one).
func TestWMAgentIdentity(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		r := write(e, key, map[string]any{"scope": conv("c-1"), "agent": "other-bot", "body": map[string]any{"step": "greet"}})
		requireError(t, r, http.StatusForbidden, "agent_mismatch")
		r = e.Do(http.MethodPost, "/v1/agent-state/read", key, map[string]any{"scope": conv("c-1"), "agent": "other-bot"})
		requireError(t, r, http.StatusForbidden, "agent_mismatch")
		require.Equal(t, int64(0), read(e, key, conv("c-1"), "").Version, "a refused write changed the state")

		require.Equal(t, int64(1), mustStore(e, key, map[string]any{"scope": conv("c-1"), "agent": "shop-bot", "body": map[string]any{"step": "greet"}}))

		integ := e.PersonKey("Ivo", "integration")
		r = write(e, integ, map[string]any{"scope": conv("c-1"), "body": map[string]any{"step": "sizes"}})
		requireError(t, r, http.StatusBadRequest, "invalid_member")
		require.Equal(t, "agent", errMember(t, r))

		// The person writes the agent's state: the same state the agent reads.
		require.Equal(t, int64(2), mustStore(e, integ, map[string]any{"scope": conv("c-1"), "agent": "shop-bot", "body": map[string]any{"step": "sizes"}}))
		got := read(e, key, conv("c-1"), "")
		require.Equal(t, int64(2), got.Version)
		require.Equal(t, "sizes", got.Body["step"])
		require.Equal(t, got, read(e, integ, conv("c-1"), "shop-bot"))
	})
}

// WM-2: the schema is the type named like the agent, else the only agent-owned type; with
// none (or several, none named like the agent) every write is not_declared_field.
func TestWMSchemaResolution(t *testing.T) {
	other := func(name string) map[string]any {
		return map[string]any{"type": name, "ownership": "agent",
			"fields":      map[string]any{"mood": map[string]any{"type": "string"}},
			"agent_state": map[string]any{"scope": "task"}}
	}
	space := map[string]any{"type": "order", "fields": map[string]any{"step": map[string]any{"type": "string"}}}
	cases := []struct {
		name     string
		types    map[string]any
		stored   bool
		scope    map[string]any
		declared []string // fields reported not declared when not stored
	}{
		{"named like the agent among several", typesDoc(other("a-bot"), wmType("shop-bot", "conversation", 0, nil), other("z-bot")), true, conv("c-1"), nil},
		{"the only agent-owned type", typesDoc(space, wmType("assistant_state", "conversation", 0, nil)), true, conv("c-1"), nil},
		{"several agent-owned, none named", typesDoc(other("a-bot"), other("z-bot")), false, map[string]any{"kind": "task", "id": "t-1"}, []string{"offer", "step"}},
		{"no agent-owned type", typesDoc(space), false, conv("c-1"), []string{"offer", "step"}},
		{"no document", nil, false, conv("c-1"), []string{"offer", "step"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apptest.Each(t, func(t *testing.T, e *apptest.Env) {
				enableWM(e, tc.types)
				key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
				r := e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key,
					map[string]any{"scope": tc.scope, "body": map[string]any{"step": "greet", "offer": "x"}})
				m := r.JSON(t)
				require.Equal(t, tc.stored, m["stored"], "body: %s", r.Body)
				if tc.stored {
					return
				}
				require.Equal(t, "not_declared_field", m["reason"])
				var fields []string
				for _, f := range m["fields"].([]any) {
					fields = append(fields, f.(string))
				}
				require.Equal(t, tc.declared, fields)
				require.Equal(t, int64(0), read(e, key, tc.scope, "").Version)
			})
		})
	}
}

// WM-5: cas applies only at if_version (0: must not exist), 412 with the current version
// otherwise and nothing changes; the body is the whole state.
func TestWMCAS(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		c := conv("c-cas")
		r := write(e, key, map[string]any{"scope": c, "mode": "cas", "body": map[string]any{"step": "greet"}})
		requireError(t, r, http.StatusBadRequest, "invalid_member")
		require.Equal(t, "if_version", errMember(t, r))

		require.Equal(t, int64(1), mustStore(e, key, map[string]any{"scope": c, "mode": "cas", "if_version": 0,
			"body": map[string]any{"step": "greet", "offer": "familia-plus", "count": 2}}))

		// if_version 0 on an existing state: 412 with the current version.
		r = write(e, key, map[string]any{"scope": c, "mode": "cas", "if_version": 0, "body": map[string]any{"step": "done"}})
		requireError(t, r, http.StatusPreconditionFailed, "agent_state_conflict")
		require.Equal(t, int64(1), num(t, r.JSON(t)["version"]))
		r = write(e, key, map[string]any{"scope": c, "mode": "cas", "if_version": 7, "body": map[string]any{"step": "done"}})
		requireError(t, r, http.StatusPreconditionFailed, "agent_state_conflict")
		require.Equal(t, int64(1), num(t, r.JSON(t)["version"]))
		got := read(e, key, c, "")
		require.Equal(t, int64(1), got.Version)
		require.Equal(t, map[string]any{"step": "greet", "offer": "familia-plus", "count": json.Number("2")}, got.Body)

		// At the right version: the whole state is replaced; fields left out are gone.
		require.Equal(t, int64(2), mustStore(e, key, map[string]any{"scope": c, "mode": "cas", "if_version": 1,
			"body": map[string]any{"step": "checkout"}}))
		got = read(e, key, c, "")
		require.Equal(t, int64(2), got.Version)
		require.Equal(t, map[string]any{"step": "checkout"}, got.Body)

		// A cas body is the whole state: $delete has no meaning there.
		r = write(e, key, map[string]any{"scope": c, "mode": "cas", "if_version": 2, "body": map[string]any{"step": map[string]any{"$delete": true}}})
		requireError(t, r, http.StatusBadRequest, "invalid_member")
		require.Equal(t, int64(2), read(e, key, c, "").Version)

		// A negative if_version and an unknown mode are refused.
		r = write(e, key, map[string]any{"scope": c, "mode": "cas", "if_version": -1, "body": map[string]any{"step": "done"}})
		requireError(t, r, http.StatusBadRequest, "invalid_member")
		r = write(e, key, map[string]any{"scope": c, "mode": "replace", "body": map[string]any{"step": "done"}})
		requireError(t, r, http.StatusBadRequest, "invalid_member")
		require.Equal(t, "mode", errMember(t, r))
	})
}

// WM-2: agent_state.write restricts the modes.
func TestWMWriteModeRestricted(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		typ := wmType("shop-bot", "conversation", 0, nil)
		typ["agent_state"].(map[string]any)["write"] = "cas"
		enableWM(e, typesDoc(typ))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		r := write(e, key, map[string]any{"scope": conv("c"), "body": map[string]any{"step": "greet"}})
		requireError(t, r, http.StatusBadRequest, "invalid_member")
		require.Equal(t, "mode", errMember(t, r))
		require.Equal(t, int64(1), mustStore(e, key, map[string]any{"scope": conv("c"), "mode": "cas", "if_version": 0, "body": map[string]any{"step": "greet"}}))
	})
}

// WM-6: merge_by_key replaces each named field whole (no deep merge), keeps the others, and
// removes a field given exactly as {"$delete": true}; with if_version it applies only there.
func TestWMMerge(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		c := conv("c-merge")
		require.Equal(t, int64(1), mustStore(e, key, map[string]any{"scope": c,
			"body": map[string]any{"step": "sizes", "offer": "familia-plus", "cart": map[string]any{"a": 1, "b": 2}}}))
		require.Equal(t, int64(2), mustStore(e, key, map[string]any{"scope": c, "mode": "merge_by_key",
			"body": map[string]any{"cart": map[string]any{"c": 3}, "count": 1}}))
		got := read(e, key, c, "")
		require.Equal(t, map[string]any{"step": "sizes", "offer": "familia-plus",
			"cart": map[string]any{"c": json.Number("3")}, "count": json.Number("1")}, got.Body)

		// $delete removes exactly that field.
		require.Equal(t, int64(3), mustStore(e, key, map[string]any{"scope": c,
			"body": map[string]any{"offer": map[string]any{"$delete": true}, "step": "checkout"}}))
		got = read(e, key, c, "")
		require.Equal(t, map[string]any{"step": "checkout", "cart": map[string]any{"c": json.Number("3")}, "count": json.Number("1")}, got.Body)
		require.NotContains(t, got.Raw, "offer")

		// A removed field does not come back with later writes of other fields.
		require.Equal(t, int64(4), mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"count": 2}}))
		require.NotContains(t, read(e, key, c, "").Body, "offer")

		// An object with $delete and other members is an ordinary value of an object field.
		require.Equal(t, int64(5), mustStore(e, key, map[string]any{"scope": c,
			"body": map[string]any{"cart": map[string]any{"$delete": true, "keep": 1}}}))
		require.Equal(t, map[string]any{"$delete": true, "keep": json.Number("1")}, read(e, key, c, "").Body["cart"])

		// Any other object whose only member is $delete: 400 and nothing changes.
		for _, bad := range []string{
			`{"offer": {"$delete": false}}`,
			`{"offer": {"$delete": 1}}`,
			`{"offer": {"$delete": "true"}}`,
			`{"offer": {"$delete": null}}`,
			`{"cart": {"x": {"$delete": true}}}`,
			`{"cart": {"x": {"$delete": false}}}`,
			`{"tags": [{"$delete": true}]}`,
		} {
			r := write(e, key, map[string]any{"scope": c, "body": json.RawMessage(bad)})
			requireError(t, r, http.StatusBadRequest, "invalid_member")
			require.True(t, strings.HasPrefix(errMember(t, r), "body."), "member %q for %s", errMember(t, r), bad)
		}
		require.Equal(t, int64(5), read(e, key, c, "").Version)

		// With if_version: only at that version.
		r := write(e, key, map[string]any{"scope": c, "if_version": 4, "body": map[string]any{"count": 9}})
		requireError(t, r, http.StatusPreconditionFailed, "agent_state_conflict")
		require.Equal(t, int64(5), num(t, r.JSON(t)["version"]))
		require.Equal(t, json.Number("2"), read(e, key, c, "").Body["count"])
		require.Equal(t, int64(6), mustStore(e, key, map[string]any{"scope": c, "if_version": 5, "body": map[string]any{"count": 9}}))

		// if_version 0 with merge: only when the state does not exist yet.
		require.Equal(t, int64(1), mustStore(e, key, map[string]any{"scope": conv("c-new"), "if_version": 0, "body": map[string]any{"count": 1}}))
		r = write(e, key, map[string]any{"scope": conv("c-new"), "if_version": 0, "body": map[string]any{"count": 2}})
		requireError(t, r, http.StatusPreconditionFailed, "agent_state_conflict")
	})
}

// WM-7: every stored write adds 1 to the version, from 1; refusals do not.
func TestWMVersionIncrements(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		c := conv("c-v")
		for i := int64(1); i <= 5; i++ {
			require.Equal(t, i, mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"count": i}}))
			require.Equal(t, i, read(e, key, c, "").Version)
		}
		// A write that changes nothing is still a stored write.
		require.Equal(t, int64(6), mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"count": 5}}))
		// Refused writes do not count.
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, map[string]any{"scope": c, "body": map[string]any{"nope": 1}})
		requireError(t, write(e, key, map[string]any{"scope": c, "if_version": 1, "body": map[string]any{"count": 1}}), http.StatusPreconditionFailed, "agent_state_conflict")
		require.Equal(t, int64(7), mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"count": 7}}))
		// Each scope and each agent has its own version.
		require.Equal(t, int64(1), mustStore(e, key, map[string]any{"scope": conv("c-other"), "body": map[string]any{"count": 1}}))
	})
}

// WM-7: an undeclared field refuses the whole write with stored:false, the fields named, the
// version unchanged and the state kept.
func TestWMUndeclaredField(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		c := conv("c-u")
		mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"step": "greet"}})
		r := e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, map[string]any{"scope": c,
			"body": map[string]any{"step": "sizes", "zeta": 1, "alpha": "x"}})
		require.JSONEq(t, `{"stored":false,"version":1,"reason":"not_declared_field","fields":["alpha","zeta"]}`, string(r.Body))
		got := read(e, key, c, "")
		require.Equal(t, int64(1), got.Version)
		require.Equal(t, map[string]any{"step": "greet"}, got.Body)

		// A declared field with a value of the wrong type is a 400 naming it.
		for _, bad := range []map[string]any{{"count": "3"}, {"count": 1.5}, {"step": "nowhere"}, {"flag": "yes"}, {"cart": []int{1}}} {
			r := write(e, key, map[string]any{"scope": c, "body": bad})
			requireError(t, r, http.StatusBadRequest, "invalid_field_value")
		}
		require.Equal(t, int64(1), read(e, key, c, "").Version)
	})
}

// WM-8: over the cap is 200 stored:false over_cap with bytes and max_bytes; the previous
// state stays. The cap counts the UTF-8 bytes of the stored state's canonical JSON.
func TestWMOverCap(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableWM(e, typesDoc(wmType("shop-bot", "conversation", 64, nil)))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		c := conv("c-cap")
		// {"offer":"ééééé"} : canonical JSON 10 bytes + 5 two-byte letters = 22 bytes.
		mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"offer": "ééééé"}})
		got := read(e, key, c, "")
		require.Equal(t, `{"offer":"ééééé"}`, got.Raw)

		// Exactly at the cap is stored: {"offer":"ééééé","order_id":"<n>"} with n chosen to
		// reach 64 bytes.
		base := len(`{"offer":"ééééé","order_id":""}`)
		atCap := strings.Repeat("x", 64-base)
		require.Equal(t, int64(2), mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"order_id": atCap}}))
		// One byte more (a two-byte letter for one ASCII letter) is over.
		over := "é" + strings.Repeat("x", 64-base-1)
		r := e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, map[string]any{"scope": c, "body": map[string]any{"order_id": over}})
		require.JSONEq(t, `{"stored":false,"version":2,"reason":"over_cap","bytes":65,"max_bytes":64}`, string(r.Body))
		got = read(e, key, c, "")
		require.Equal(t, int64(2), got.Version)
		require.Equal(t, atCap, got.Body["order_id"])

		// A cas over the cap keeps the previous state too.
		r = e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, map[string]any{"scope": c, "mode": "cas", "if_version": 2,
			"body": map[string]any{"order_id": strings.Repeat("y", 100)}})
		m := r.JSON(t)
		require.Equal(t, false, m["stored"])
		require.Equal(t, "over_cap", m["reason"])
		require.Equal(t, int64(len(`{"order_id":""}`)+100), num(t, m["bytes"]))
		require.Equal(t, int64(2), read(e, key, c, "").Version)

		// The default cap is 16,384 bytes.
		enableWM(e, typesDoc(wmType("shop-bot", "conversation", 0, nil)))
		r = e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, map[string]any{"scope": conv("c-big"), "body": map[string]any{"offer": strings.Repeat("z", 16384)}})
		require.Equal(t, "over_cap", r.JSON(t)["reason"])
		require.Equal(t, int64(16384), num(t, r.JSON(t)["max_bytes"]))
	})
}

// WM-8: the check order is version (412), declared fields, cap.
func TestWMCheckOrder(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableWM(e, typesDoc(wmType("shop-bot", "conversation", 64, nil)))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		c := conv("c-order")
		mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"step": "greet"}})
		big := strings.Repeat("x", 200)
		r := write(e, key, map[string]any{"scope": c, "if_version": 9, "body": map[string]any{"offer": big, "bogus": 1}})
		requireError(t, r, http.StatusPreconditionFailed, "agent_state_conflict")
		r = write(e, key, map[string]any{"scope": c, "if_version": 1, "body": map[string]any{"offer": big, "bogus": 1}})
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, "not_declared_field", r.JSON(t)["reason"])
		r = write(e, key, map[string]any{"scope": c, "if_version": 1, "body": map[string]any{"offer": big}})
		require.Equal(t, "over_cap", r.JSON(t)["reason"])
		require.Equal(t, int64(1), read(e, key, c, "").Version)
	})
}

// WM-9: a never-written state reads as an empty body, version 0, updated_at null.
func TestWMReadNeverWritten(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		r := e.MustDo(http.StatusOK, http.MethodPost, "/v1/agent-state/read", key, map[string]any{"scope": conv("never")})
		require.Equal(t, `{"body":{},"version":0,"updated_at":null}`, strings.TrimSpace(string(r.Body)))

		mustStore(e, key, map[string]any{"scope": conv("once"), "body": map[string]any{"step": "greet"}})
		got := read(e, key, conv("once"), "")
		require.Equal(t, int64(1), got.Version)
		ts, ok := got.Updated.(string)
		require.True(t, ok, "updated_at: got %v, want a timestamp", got.Updated)
		require.True(t, strings.HasSuffix(ts, "Z"), "updated_at %q is not UTC", ts)
	})
}

// WM-3: the scope kind must be the one the type declares, and one of the four kinds.
func TestWMScopeKind(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		for _, scope := range []map[string]any{
			{"kind": "task", "id": "t-1"},
			{"kind": "subject", "id": "email:ana@example.com"},
			{"kind": "session", "id": "s-1"},
			{"kind": "", "id": "c-1"},
			{"kind": "conversation", "id": ""},
			{"kind": "conversation", "id": "   "},
			{"kind": "conversation", "id": strings.Repeat("c", 513)},
		} {
			r := write(e, key, map[string]any{"scope": scope, "body": map[string]any{"step": "greet"}})
			requireError(t, r, http.StatusBadRequest, "invalid_member")
			require.True(t, strings.HasPrefix(errMember(t, r), "scope."), "member %q", errMember(t, r))
		}
		r := write(e, key, map[string]any{"body": map[string]any{"step": "greet"}})
		requireError(t, r, http.StatusBadRequest, "invalid_member")
		require.Equal(t, "scope", errMember(t, r))
		r = write(e, key, map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c", "extra": 1}, "body": map[string]any{"step": "greet"}})
		requireError(t, r, http.StatusBadRequest, "unknown_member")
		r = write(e, key, map[string]any{"scope": conv("c"), "subject": "ana@example.com", "body": map[string]any{"step": "greet"}})
		requireError(t, r, http.StatusBadRequest, "invalid_member")
		require.Equal(t, "subject", errMember(t, r))
		require.Equal(t, int64(0), read(e, key, conv("c"), "").Version)
	})
}

// WM-3: an object scope id reads type:namespace:id.
func TestWMObjectScope(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableWM(e, typesDoc(wmType("shop-bot", "object", 0, nil)))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		obj := func(id string) map[string]any { return map[string]any{"kind": "object", "id": id} }
		require.Equal(t, int64(1), mustStore(e, key, map[string]any{"scope": obj("order:shop:3348917502"), "body": map[string]any{"step": "greet"}}))
		require.Equal(t, int64(1), mustStore(e, key, map[string]any{"scope": obj("order:shop:a:b"), "body": map[string]any{"step": "greet"}}))
		require.Equal(t, int64(1), read(e, key, obj("order:shop:3348917502"), "").Version)
		require.Equal(t, int64(0), read(e, key, obj("order:shop:3348917503"), "").Version)
		for _, bad := range []string{"3348917502", "order:3348917502", "order::1", ":shop:1", "order:shop:"} {
			r := write(e, key, map[string]any{"scope": obj(bad), "body": map[string]any{"step": "greet"}})
			requireError(t, r, http.StatusBadRequest, "invalid_member")
			require.Equal(t, "scope.id", errMember(t, r), "id %q", bad)
		}
	})
}

// WM-3: a subject scope id is a handle, canonicalised before hashing: e-mail case and phone
// formats name the same state.
func TestWMSubjectScopeCanonical(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableWM(e, typesDoc(wmType("shop-bot", "subject", 0, nil)))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		subj := func(id string) map[string]any { return map[string]any{"kind": "subject", "id": id} }

		require.Equal(t, int64(1), mustStore(e, key, map[string]any{"scope": subj("email:Ana.Souza@Example.COM"), "body": map[string]any{"step": "greet"}}))
		require.Equal(t, int64(2), mustStore(e, key, map[string]any{"scope": subj("EMAIL: ana.souza@example.com "), "body": map[string]any{"offer": "x"}}))
		require.Equal(t, int64(2), read(e, key, subj("email:ana.souza@example.com"), "").Version)

		v := int64(0)
		for _, phone := range []string{"phone:+5511912345678", "phone:+55 (11) 91234-5678", "phone:(11) 91234-5678", "phone:11 9 1234 5678", "phone:+55.11.91234.5678"} {
			v++
			require.Equal(t, v, mustStore(e, key, map[string]any{"scope": subj(phone), "body": map[string]any{"count": v}}), "phone %q", phone)
		}
		require.Equal(t, v, read(e, key, subj("phone:+5511912345678"), "").Version)

		for _, bad := range []string{"ana@example.com", "email:not-an-address", "fax:123", "phone:12"} {
			r := write(e, key, map[string]any{"scope": subj(bad), "body": map[string]any{"step": "greet"}})
			requireError(t, r, http.StatusBadRequest, "invalid_member")
			require.Equal(t, "scope.id", errMember(t, r))
		}
		// The subject member is a handle too, even when the scope already names the customer.
		r := write(e, key, map[string]any{"scope": subj("email:a@example.com"), "subject": "nope", "body": map[string]any{"step": "greet"}})
		requireError(t, r, http.StatusBadRequest, "invalid_member")
		require.Equal(t, "subject", errMember(t, r))
	})
}

// WM-3, WM-7: scope ids, subject handles, pii values and profile names never reach the
// database in clear (every row of every table, and the SQLite file and WAL).
func TestWMNoCleartextInDatabase(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableWM(e, typesDoc(
			wmType("shop-bot", "conversation", 0, nil),
			wmType("crm-bot", "subject", 0, nil),
			wmType("order-bot", "object", 0, nil),
		))
		integ := e.PersonKey("Ivo", "integration")
		e.MustDo(http.StatusCreated, http.MethodPost, "/v1/profiles", integ, map[string]any{
			"name": "Zebulon Quixote", "handles": []string{"email:zebulon.quixote@example.org", "phone:+5511987654321"}})
		shop := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		crm := e.AgentKey("crm-bot", "acme-ai", "agent_state")
		order := e.AgentKey("order-bot", "acme-ai", "agent_state")

		mustStore(e, shop, map[string]any{"scope": conv("conv-Kq7Zt9Wm"), "subject": "email:Zebulon.Quixote@example.org",
			"body": map[string]any{"step": "greet", "offer": "visible-offer-4711", "contact": "zebulon.quixote@example.org",
				"cart_note": "Zebulon Quixote asked to call +55 11 98765-4321"}})
		mustStore(e, crm, map[string]any{"scope": map[string]any{"kind": "subject", "id": "phone:+55 11 98765-4321"}, "body": map[string]any{"step": "greet"}})
		mustStore(e, order, map[string]any{"scope": map[string]any{"kind": "object", "id": "order:shop:Ob9Xq2Lp"}, "body": map[string]any{"step": "greet", "offer": "visible-offer-4711"}})

		// The scan sees what is stored in clear (the control: the agents' names), and none of
		// the secrets (a customer's states are sealed under the customer's key) nor a state's
		// content: a state of no customer is sealed too, under its conversation's key or, of an
		// object scope, under its own (issue 29 §1).
		text := dbText(t, e)
		require.Contains(t, text, "shop-bot")
		require.Contains(t, text, "order-bot")
		requireNotStored(t, e, "conv-Kq7Zt9Wm", "Ob9Xq2Lp", "zebulon.quixote", "5511987654321", "98765-4321",
			"Zebulon", "Quixote", "visible-offer-4711")

		// The masked values are what the agent reads back.
		got := read(e, shop, conv("conv-Kq7Zt9Wm"), "")
		require.Equal(t, "<subject>", got.Body["contact"])
		require.Equal(t, "<subject> asked to call <subject>", got.Body["cart_note"])
	})
}

// WM-7: pii fields are masked at write with typed placeholders, at any depth; a known
// profile's name is masked as <subject>; other fields are kept as written.
func TestWMPIIMasked(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		typ := wmType("shop-bot", "conversation", 0, nil)
		typ["fields"].(map[string]any)["contacts"] = map[string]any{"type": "array", "pii": true}
		enableWM(e, typesDoc(typ))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		integ := e.PersonKey("Ivo", "integration")
		e.MustDo(http.StatusCreated, http.MethodPost, "/v1/profiles", integ, map[string]any{
			"name": "Crystal Minh", "handles": []string{"email:cminh730@email.com"}})

		c := conv("c-pii")
		mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{
			"contact":   "write to ana.souza@example.com",
			"cart_note": "call me at +55 11 91234-5678 or (977) 625-2661, said Crystal Minh",
			"contacts":  []any{"bob@example.net", map[string]any{"phone": "+1 415 555 2671", "n": 3}, 42},
			"offer":     "plain offer",
		}})
		got := read(e, key, c, "")
		require.Equal(t, "write to <email>", got.Body["contact"])
		require.Equal(t, "call me at <phone> or <phone>, said <subject>", got.Body["cart_note"])
		require.Equal(t, []any{"<email>", map[string]any{"phone": "<phone>", "n": json.Number("3")}, json.Number("42")}, got.Body["contacts"])
		require.Equal(t, "plain offer", got.Body["offer"])
		requireNotStored(t, e, "ana.souza@example.com", "91234-5678", "625-2661", "bob@example.net", "555 2671")
	})
}

// Strict JSON: 64-bit integers and number texts round-trip exactly; null, 0, false and "" are
// values.
func TestWMExactValues(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		c := conv("c-exact")
		body := `{"scope":{"kind":"conversation","id":"c-exact"},"body":{"count":9223372036854775807,"price":1.50,"cart":{"big":-9223372036854775808,"odd":9007199254740993}}}`
		r := e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, body)
		require.Equal(t, true, r.JSON(t)["stored"])
		got := read(e, key, c, "")
		require.Equal(t, `{"cart":{"big":-9223372036854775808,"odd":9007199254740993},"count":9223372036854775807,"price":1.50}`, got.Raw)

		// pii fields are re-encoded by masking: numbers keep their text there too.
		r = e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key,
			`{"scope":{"kind":"conversation","id":"c-exact"},"body":{"cart_note":"x@example.com","contact":"ok"}}`)
		require.Equal(t, true, r.JSON(t)["stored"])

		falsy := `{"scope":{"kind":"conversation","id":"c-falsy"},"body":{"offer":"","count":0,"flag":false,"step":null,"cart":{},"tags":[]}}`
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, falsy)
		got = read(e, key, conv("c-falsy"), "")
		require.Equal(t, `{"cart":{},"count":0,"flag":false,"offer":"","step":null,"tags":[]}`, got.Raw)
		// Writing null over a value keeps the field, as null.
		mustStore(e, key, map[string]any{"scope": conv("c-falsy"), "body": map[string]any{"count": nil}})
		got = read(e, key, conv("c-falsy"), "")
		require.Contains(t, got.Body, "count")
		require.Nil(t, got.Body["count"])
	})
}

// Strict JSON: a duplicate key anywhere, malformed JSON, an unknown envelope member (a typo
// such as if_verison must never turn a cas into a merge) are 400 and change nothing.
func TestWMStrictEnvelope(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		c := conv("c-strict")
		mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"count": 1}})
		cases := []struct{ body, code string }{
			{`{"scope":{"kind":"conversation","id":"c-strict"},"scope":{"kind":"conversation","id":"x"},"body":{"count":2}}`, "invalid_json"},
			{`{"scope":{"kind":"conversation","kind":"conversation","id":"c-strict"},"body":{"count":2}}`, "invalid_json"},
			{`{"scope":{"kind":"conversation","id":"c-strict"},"body":{"count":2,"count":3}}`, "invalid_json"},
			{`{"scope":{"kind":"conversation","id":"c-strict"},"body":{"cart":{"a":1,"a":2}}}`, "invalid_json"},
			{`{"scope":{"kind":"conversation","id":"c-strict"},"body":{"tags":[{"a":1,"a":2}]}}`, "invalid_json"},
			{`{"scope":{"kind":"conversation","id":"c-strict"},"mode":"cas","if_verison":1,"body":{"count":2}}`, "unknown_member"},
			{`{"scope":{"kind":"conversation","id":"c-strict"},"if_verison":0,"body":{"count":2}}`, "unknown_member"},
			{`{"scope":{"kind":"conversation","id":"c-strict"},"body":{"count":2}} {}`, "invalid_json"},
			{`{"scope":{"kind":"conversation","id":"c-strict"},"body":{"count":2}`, "invalid_json"},
			{`{"scope":{"kind":"conversation","id":"c-strict"},"if_version":"1","body":{"count":2}}`, "invalid_member"},
			{`{"scope":{"kind":"conversation","id":"c-strict"},"body":[1]}`, "invalid_member"},
			{`{"scope":{"kind":"conversation","id":"c-strict"},"body":"x"}`, "invalid_member"},
			{`{"scope":{"kind":"conversation","id":"c-strict"},"body":null}`, "invalid_member"},
			{`{"scope":{"kind":"conversation","id":"c-strict"}}`, "invalid_member"},
			{``, "invalid_json"},
			{`[]`, "invalid_json"},
		}
		for _, tc := range cases {
			r := e.Do(http.MethodPut, "/v1/agent-state", key, tc.body)
			requireError(t, r, http.StatusBadRequest, tc.code)
		}
		r := e.Do(http.MethodPut, "/v1/agent-state", key, `{"scope":{"kind":"conversation","id":"c-strict"},"if_verison":1,"body":{"count":2}}`)
		require.Equal(t, "if_verison", errMember(t, r))
		got := read(e, key, c, "")
		require.Equal(t, int64(1), got.Version)
		require.Equal(t, `{"count":1}`, got.Raw)

		r = e.Do(http.MethodPost, "/v1/agent-state/read", key, `{"scope":{"kind":"conversation","id":"c-strict"},"scope":{"kind":"conversation","id":"c-strict"}}`)
		requireError(t, r, http.StatusBadRequest, "invalid_json")
		r = e.Do(http.MethodPost, "/v1/agent-state/read", key, `{"scope":{"kind":"conversation","id":"c-strict"},"if_version":1}`)
		requireError(t, r, http.StatusBadRequest, "unknown_member")
	})
}

// Security baseline: a body over the cap is 413 and changes nothing.
func TestWMBodyCap(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		big := `{"scope":{"kind":"conversation","id":"c-413"},"body":{"offer":"` + strings.Repeat("x", 1<<20) + `"}}`
		r := e.Do(http.MethodPut, "/v1/agent-state", key, big)
		requireError(t, r, http.StatusRequestEntityTooLarge, "body_too_large")
		require.Equal(t, int64(0), read(e, key, conv("c-413"), "").Version)
	})
}

// MS-5: each state records the key id that last wrote it and the Agent-Version header.
func TestWMProvenance(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		setupWM(e)
		mint := func(spec map[string]any) (id, key string) {
			m := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/keys", e.AdminKey, spec).JSON(t)
			return m["key_id"].(string), m["key"].(string)
		}
		agentID, agentKey := mint(map[string]any{"kind": "agent", "agent": "shop-bot", "vendor": "acme-ai", "scopes": []string{"agent_state"}})
		personID, personKey := mint(map[string]any{"kind": "person", "name": "Ivo", "roles": []string{"integration"}})
		c := conv("c-prov")
		load := func() models.AgentState {
			var rows []models.AgentState
			require.NoError(t, e.DB.NewSelect().Model(&rows).Scan(context.Background()))
			require.Len(t, rows, 1)
			return rows[0]
		}
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", agentKey, map[string]any{"scope": c, "body": map[string]any{"step": "greet"}}, "Agent-Version", "shop-bot/1.4.2")
		row := load()
		require.Equal(t, agentID, row.KeyID)
		require.Equal(t, "shop-bot/1.4.2", row.AgentVersion)

		e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", personKey, map[string]any{"scope": c, "agent": "shop-bot", "body": map[string]any{"step": "sizes"}})
		row = load()
		require.Equal(t, personID, row.KeyID)
		require.Equal(t, "", row.AgentVersion, "a write without the header records no agent version")
		require.Equal(t, int64(2), row.Version)

		// A refused write leaves the provenance alone.
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", agentKey, map[string]any{"scope": c, "body": map[string]any{"nope": 1}}, "Agent-Version", "shop-bot/9")
		require.Equal(t, personID, load().KeyID)
	})
}

// WM-11: GET /v1/profiles/{id}/agent-state lists the subject's states (their scope or their
// subject member names the customer) with agent, scope kind, size, version and dates, never
// the content or the scope id.
func TestWMProfileAgentState(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableWM(e, typesDoc(wmType("shop-bot", "conversation", 0, nil), wmType("crm-bot", "subject", 0, nil)))
		integ := e.PersonKey("Ivo", "integration")
		prof := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/profiles", integ, map[string]any{
			"name": "Ana Souza", "handles": []string{"email:ana@example.com", "phone:+5511912345678"}}).JSON(t)["profile_id"].(string)
		other := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/profiles", integ, map[string]any{
			"name": "Bruno Lima", "handles": []string{"email:bruno@example.com"}}).JSON(t)["profile_id"].(string)
		shop := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		crm := e.AgentKey("crm-bot", "acme-ai", "agent_state")

		mustStore(e, shop, map[string]any{"scope": conv("conv-secret-1"), "subject": "email:ANA@example.com", "body": map[string]any{"offer": "secret-offer"}})
		mustStore(e, shop, map[string]any{"scope": conv("conv-secret-1"), "body": map[string]any{"step": "sizes"}})
		mustStore(e, crm, map[string]any{"scope": map[string]any{"kind": "subject", "id": "phone:(11) 91234-5678"}, "body": map[string]any{"step": "greet"}})
		mustStore(e, shop, map[string]any{"scope": conv("conv-bruno"), "subject": "email:bruno@example.com", "body": map[string]any{"step": "greet"}})
		mustStore(e, shop, map[string]any{"scope": conv("conv-nobody"), "body": map[string]any{"step": "greet"}})

		r := e.MustDo(http.StatusOK, http.MethodGet, "/v1/profiles/"+prof+"/agent-state", integ, nil)
		require.NotContains(t, string(r.Body), "secret-offer")
		require.NotContains(t, string(r.Body), "conv-secret-1")
		require.NotContains(t, string(r.Body), "sizes")
		var got struct {
			ProfileID string `json:"profile_id"`
			States    []struct {
				Agent     string `json:"agent"`
				ScopeKind string `json:"scope_kind"`
				Bytes     int    `json:"bytes"`
				Version   int64  `json:"version"`
				CreatedAt string `json:"created_at"`
				UpdatedAt string `json:"updated_at"`
			} `json:"states"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &got))
		require.Equal(t, prof, got.ProfileID)
		require.Len(t, got.States, 2, "body: %s", r.Body)
		sort.Slice(got.States, func(i, j int) bool { return got.States[i].Agent < got.States[j].Agent })
		require.Equal(t, "crm-bot", got.States[0].Agent)
		require.Equal(t, "subject", got.States[0].ScopeKind)
		require.Equal(t, int64(1), got.States[0].Version)
		require.Equal(t, len(`{"step":"greet"}`), got.States[0].Bytes)
		require.Equal(t, "shop-bot", got.States[1].Agent)
		require.Equal(t, "conversation", got.States[1].ScopeKind)
		require.Equal(t, int64(2), got.States[1].Version)
		require.Equal(t, len(`{"offer":"secret-offer","step":"sizes"}`), got.States[1].Bytes)
		for _, s := range got.States {
			require.NotEmpty(t, s.CreatedAt)
			require.NotEmpty(t, s.UpdatedAt)
		}
		var keys map[string]any
		require.NoError(t, json.Unmarshal(r.Body, &keys))
		for _, s := range keys["states"].([]any) {
			for k := range s.(map[string]any) {
				require.Contains(t, []string{"agent", "scope_kind", "bytes", "version", "created_at", "updated_at", "expires_at"}, k)
			}
		}

		r = e.MustDo(http.StatusOK, http.MethodGet, "/v1/profiles/"+other+"/agent-state", integ, nil)
		require.NoError(t, json.Unmarshal(r.Body, &got))
		require.Len(t, got.States, 1)

		requireError(t, e.Do(http.MethodGet, "/v1/profiles/"+prof+"/agent-state", shop, nil), http.StatusForbidden, "role_required")
		requireError(t, e.Do(http.MethodGet, "/v1/profiles/"+prof+"/agent-state", e.PersonKey("Rita", "reviewer"), nil), http.StatusForbidden, "role_required")
		requireError(t, e.Do(http.MethodGet, "/v1/profiles/prof_nope/agent-state", integ, nil), http.StatusNotFound, "profile_not_found")
	})
}

// WM-10: a writer reads its own writes, through any replica of the API over the same store:
// the second replica is wired on its own (newReplica: its own pool and services, sharing only
// the database and the key store), and writes alternate between the two.
func TestWMReadYourWrites(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		c := conv("c-ryw")
		for i := int64(1); i <= 20; i++ {
			srv := e
			if i%2 == 0 {
				srv = replica
			}
			v := mustStore(srv, key, map[string]any{"scope": c, "body": map[string]any{"count": i}})
			require.Equal(t, i, v)
			for _, r := range []*apptest.Env{e, replica} {
				got := read(r, key, c, "")
				require.GreaterOrEqual(t, got.Version, v)
				require.Equal(t, json.Number(jsonInt(i)), got.Body["count"])
			}
		}
	})
}

// Issue 16: the working-memory routes read the key and the space documents in one statement;
// a revoked key is still refused on the very next request, on this replica and on a second
// one wired on its own, and a document change is seen by the next request on either.
func TestWMKeyAndDocumentsExactAcrossReplicas(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		c := conv("c-revoke")
		for _, srv := range []*apptest.Env{e, replica} {
			mustStore(srv, key, map[string]any{"scope": c, "body": map[string]any{"order_id": "A-1"}})
			read(srv, key, c, "")
		}

		// Working memory turned off: the next request on either replica sees it.
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": false}})
		for _, srv := range []*apptest.Env{e, replica} {
			requireError(t, write(srv, key, map[string]any{"scope": c, "body": map[string]any{"order_id": "A-2"}}), http.StatusForbidden, "feature_disabled")
		}
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		mustStore(replica, key, map[string]any{"scope": c, "body": map[string]any{"order_id": "A-3"}})

		var keyID string
		require.NoError(t, e.DB.NewRaw("SELECT id FROM api_keys WHERE hash = ?", auth.HashKey(key)).Scan(context.Background(), &keyID))
		e.MustDo(http.StatusNoContent, http.MethodDelete, "/v1/keys/"+keyID, e.AdminKey, nil)
		for _, srv := range []*apptest.Env{e, replica} {
			requireError(t, write(srv, key, map[string]any{"scope": c, "body": map[string]any{"order_id": "A-4"}}), http.StatusUnauthorized, "invalid_key")
			requireError(t, srv.Do(http.MethodPost, "/v1/agent-state/read", key, map[string]any{"scope": c}), http.StatusUnauthorized, "invalid_key")
		}
	})
}

// Issue 16: the space's known subjects (the names and handles of its profiles, which the notes
// gate refuses and a pii field masks) are exact across replicas. The second replica, wired
// on its own, has them cached before a profile is created through the first; its very next
// note naming the customer is refused and its next pii write is masked. Once an erasure
// deleted the profile, the name is no longer matched there either.
func TestKnownSubjectsExactAcrossReplicas(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}, "agent_memory": map[string]any{"enabled": true}})
		e.PutDocument("object-types", typesDoc(wmType("shop-bot", "conversation", 0, nil)))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state", "agent_memory", "agent_memory:write")
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		const says = "call Ana Souza about the exchange"
		// The replica loads (and caches) the space's known subjects: none yet.
		replica.MustDo(http.StatusCreated, http.MethodPost, "/v1/agent-memory/notes", key, map[string]any{"kind": "procedure", "title": "Exchanges", "body": "Offer an exchange before a refund."})
		mustStore(replica, key, map[string]any{"scope": conv("c-before"), "body": map[string]any{"cart_note": says}})
		require.Contains(t, read(replica, key, conv("c-before"), "").Raw, "Ana Souza", "no profile yet: nothing to mask")

		integ := e.PersonKey("integrator", auth.RoleIntegration)
		profileID := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/profiles", integ, map[string]any{"name": "Ana Souza", "handles": []string{"email:ana.souza@example.com"}}).JSON(t)["profile_id"].(string)

		m := requireError(t, replica.Do(http.MethodPost, "/v1/agent-memory/notes", key, map[string]any{"kind": "pitfall", "title": "Call back", "body": "Remember to " + says + "."}),
			http.StatusUnprocessableEntity, "personal_data_in_agent_memory")
		require.Equal(t, []string{"subject"}, strs(m["kinds"]), "the known subject (the name layer skips what it already covers)")
		mustStore(replica, key, map[string]any{"scope": conv("c-after"), "body": map[string]any{"cart_note": says}})
		require.NotContains(t, read(replica, key, conv("c-after"), "").Raw, "Ana Souza", "the replica did not mask a profile created through the other one")

		// The erasure's profile store step (its transaction bumps the revision): the name is
		// no longer a known subject on the replica's next request (the name layer, GATE-2, still
		// refuses the name as a name).
		err := e.DB.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
			_, err := subjects.Eraser{}.EraseSubject(ctx, tx, erasure.Target{SpaceID: e.SpaceID, Kind: erasure.Subject, ProfileIDs: []string{profileID}})
			return err
		})
		require.NoError(t, err)
		m = requireError(t, replica.Do(http.MethodPost, "/v1/agent-memory/notes", key, map[string]any{"kind": "pitfall", "title": "Call back", "body": "Remember to " + says + "."}),
			http.StatusUnprocessableEntity, "personal_data_in_agent_memory")
		require.Equal(t, []string{"name"}, strs(m["kinds"]), "no longer a known subject")
	})
}
