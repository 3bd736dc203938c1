package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/erasure"
	wm "github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
)

const stateDeletePath = "/v1/agent-state/delete"

// eventsOf returns the payloads of the space's outbox events of type typ, in order.
func eventsOf(e *apptest.Env, typ string) []map[string]any {
	e.T.Helper()
	r := e.MustDo(http.StatusOK, "GET", "/v1/events?after=0&limit=1000", e.AdminKey, nil)
	var out []map[string]any
	for _, x := range r.JSON(e.T)["events"].([]any) {
		ev := x.(map[string]any)["event"].(map[string]any)
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

// writeThree writes scope three times and requires versions 1, 2, 3... above from (the
// version floor the scope's agent starts at, 0 for a fresh agent).
func writeThree(e *apptest.Env, key string, scope map[string]any, from int64) {
	e.T.Helper()
	for i, step := range []string{"greet", "sizes", "checkout"} {
		require.Equal(e.T, from+int64(i)+1, mustStore(e, key, map[string]any{"scope": scope, "body": map[string]any{"step": step}}))
	}
}

// requireNoABA requires that scope, removed at version last (after writeThree), reads as
// never written, that its next write lands above last, and that no compare-and-swap holding
// a version of the removed state (last-2, last) matches the new one.
func requireNoABA(e *apptest.Env, key string, scope map[string]any, last int64) {
	e.T.Helper()
	got := read(e, key, scope, "")
	require.Zero(e.T, got.Version, "a removed state reads as never written")
	require.Empty(e.T, got.Body)
	again := mustStore(e, key, map[string]any{"scope": scope, "mode": "cas", "if_version": 0, "body": map[string]any{"step": "greet"}})
	require.Greater(e.T, again, last, "the new incarnation restarted at a version an old CAS holds")
	for _, old := range []int64{last - 2, last} {
		r := write(e, key, map[string]any{"scope": scope, "mode": "cas", "if_version": old, "body": map[string]any{"step": "done"}})
		requireError(e.T, r, http.StatusPreconditionFailed, "agent_state_conflict")
		require.Equal(e.T, again, num(e.T, r.JSON(e.T)["version"]), "the 412 names the new incarnation's version")
	}
	require.Equal(e.T, map[string]any{"step": "greet"}, read(e, key, scope, "").Body, "no stale CAS applied")
}

// Issue 29 §3: an agent deletes its own state by scope; the delete is receipted and evented
// with ids only; the versions never restart (ABA), and a scope never written still reads 0.
func TestStateDeleteByScope(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		c := conv("c-del")
		writeThree(e, key, c, 0)
		stateID := stateRowID(t, e)

		res := e.MustDo(http.StatusOK, "POST", stateDeletePath, key, map[string]any{"scope": c}).JSON(t)
		require.Equal(t, int64(1), num(t, res["deleted"]))
		require.Equal(t, []string{stateID}, strs(res["state_ids"]))
		rc := receiptsOf(e, wm.ActionDelete)
		require.Len(t, rc, 1)
		require.Equal(t, res["receipt_id"], rc[0]["id"])
		require.Equal(t, "compliance", rc[0]["kind"])
		require.Equal(t, []string{stateID}, strs(rc[0]["object_ids"]))
		evs := eventsOf(e, wm.TypeStateDeleted)
		require.Len(t, evs, 1)
		require.Equal(t, stateID, evs[0]["state_id"])
		require.Equal(t, "shop-bot", evs[0]["source_id"])
		require.Equal(t, int64(3), num(t, evs[0]["version"]))
		require.NotContains(t, evs[0], "scope")

		requireNoABA(e, key, c, 3)
		require.Zero(t, read(e, key, conv("never-written"), "").Version, "WM-9: never written is version 0")

		// Deleting what is not there deletes nothing and writes nothing.
		none := e.MustDo(http.StatusOK, "POST", stateDeletePath, key, map[string]any{"scope": conv("never-written")}).JSON(t)
		require.Equal(t, int64(0), num(t, none["deleted"]))
		require.NotContains(t, none, "receipt_id")
		require.Len(t, receiptsOf(e, wm.ActionDelete), 1)
		require.Len(t, eventsOf(e, wm.TypeStateDeleted), 1)
	})
}

// stateRowID returns the id of the space's only stored state.
func stateRowID(t *testing.T, e *apptest.Env) string {
	t.Helper()
	var ids []string
	require.NoError(t, e.DB.NewSelect().Model((*models.AgentState)(nil)).Column("id").Scan(context.Background(), &ids))
	require.Len(t, ids, 1)
	return ids[0]
}

// Issue 29 §3: versions stay monotonic across every way a state leaves the store: the
// retention sweep of an expired state and a conversation erasure (the erasure registry's
// state eraser), on both databases.
func TestStateVersionsNeverRestart(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		clk := &clock{t: time.Date(2026, 1, 10, 10, 0, 0, 0, time.UTC)}
		e.Deps.State.Now = clk.Now
		enableWM(e, typesDoc(wmType("shop-bot", "conversation", 0, map[string]any{"state": "2d"})))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")

		swept := conv("c-swept")
		writeThree(e, key, swept, 0)
		clk.Add(49 * time.Hour)
		res, err := e.Deps.State.DeleteExpired(ctx, e.DB, e.SpaceID, 100, clk.Now())
		require.NoError(t, err)
		require.Equal(t, 1, res.States[e.SpaceID])
		requireNoABA(e, key, swept, 3)

		// The agent's floor is now 3: a new scope of it starts above what any of its removed
		// states reached (4, 5, 6), and a conversation erasure keeps the floor too.
		erased := conv("c-erased")
		writeThree(e, key, erased, 3)
		require.NoError(t, e.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			reach, err := wm.Eraser{}.EraseSubject(ctx, tx, erasure.Target{SpaceID: e.SpaceID, Kind: erasure.Conversation,
				ScopeHash: e.Hasher.Hash(e.SpaceID, "scope:conversation", "c-erased"), ConversationID: "c-erased"})
			require.Len(t, reach[wm.KindAgentState], 1)
			return err
		}))
		requireNoABA(e, key, erased, 6)
	})
}

// Issue 29 §3: a compliance person deletes every state tied to a customer (by scope or by
// subject member, every agent's) in one receipted call; other keys may not, and bad input
// is a 400 that changes nothing.
func TestStateDeleteBySubject(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableWM(e, typesDoc(wmType("shop-bot", "conversation", 0, nil), wmType("care-bot", "subject", 0, nil)))
		shop := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		care := e.AgentKey("care-bot", "acme-ai", "agent_state")
		const ana = "email:ana@example.com"
		mustStore(e, shop, map[string]any{"scope": conv("c-ana"), "subject": ana, "body": map[string]any{"step": "sizes"}})
		mustStore(e, care, map[string]any{"scope": map[string]any{"kind": "subject", "id": "EMAIL:Ana@Example.com"}, "body": map[string]any{"step": "greet"}})
		mustStore(e, shop, map[string]any{"scope": conv("c-other"), "body": map[string]any{"step": "greet"}})
		dpo := e.PersonKey("Dora", "compliance")

		requireError(t, e.Do("POST", stateDeletePath, shop, map[string]any{"subject": ana}), http.StatusForbidden, "role_required")
		requireError(t, e.Do("POST", stateDeletePath, e.PersonKey("Ivo", "integration"), map[string]any{"subject": ana}), http.StatusForbidden, "role_required")
		requireError(t, e.Do("POST", stateDeletePath, shop, map[string]any{"scope": conv("c-ana"), "agent": "care-bot"}), http.StatusForbidden, "agent_mismatch")
		for _, bad := range []map[string]any{
			{},
			{"subject": ana, "scope": conv("c-ana"), "agent": "shop-bot"},
			{"subject": "fax:123"},
			{"scope": map[string]any{"kind": "galaxy", "id": "x"}, "agent": "shop-bot"},
			{"scope": conv("c-ana")}, // a person names the agent
			{"subject": ana, "colour": "red"},
		} {
			r := e.Do("POST", stateDeletePath, dpo, bad)
			require.Equal(t, http.StatusBadRequest, r.Status, "%v: %s", bad, r.Body)
		}
		require.Equal(t, int64(1), read(e, shop, conv("c-ana"), "").Version, "a refused delete changed nothing")

		res := e.MustDo(http.StatusOK, "POST", stateDeletePath, dpo, map[string]any{"subject": "email:ANA@example.com"}).JSON(t)
		require.Equal(t, int64(2), num(t, res["deleted"]))
		require.Zero(t, read(e, shop, conv("c-ana"), "").Version)
		require.Zero(t, read(e, care, map[string]any{"kind": "subject", "id": ana}, "").Version)
		require.Equal(t, int64(1), read(e, shop, conv("c-other"), "").Version, "a state of no customer stays")
		rc := receiptsOf(e, wm.ActionDelete)
		require.Len(t, rc, 1)
		require.ElementsMatch(t, strs(res["state_ids"]), strs(rc[0]["object_ids"]))
		require.Len(t, eventsOf(e, wm.TypeStateDeleted), 2)

		// A person with role compliance deletes one agent's state by scope.
		res = e.MustDo(http.StatusOK, "POST", stateDeletePath, dpo, map[string]any{"scope": conv("c-other"), "agent": "shop-bot"}).JSON(t)
		require.Equal(t, int64(1), num(t, res["deleted"]))
		require.Zero(t, read(e, shop, conv("c-other"), "").Version)
	})
}
