package compliance_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
)

// Issue 29 §1 and §3, as an auditor tests it: states naming no customer of an object scope
// and of an agent scope are sealed under their own keys (erasure.StateKeyID); copy the
// database before the single-state delete of one of them, delete it, restore the old copy
// with the CURRENT key store, and the deleted state reads as never written, before and after
// the restore procedure, its words are in no table, and the states not deleted still read.
// A state stored in clear (by a version before these keys) is sealed at its next write.
// Both databases.
func TestRestoredBackupForgetsDeletedStates(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		step := map[string]any{"step": map[string]any{"type": "string"}}
		e.PutDocument("object-types", map[string]any{"types": []any{
			map[string]any{"type": "order-bot", "ownership": "agent", "fields": step, "agent_state": map[string]any{"scope": "object"}},
			map[string]any{"type": "helper-bot", "ownership": "agent", "fields": step, "agent_state": map[string]any{"scope": "agent"}},
			map[string]any{"type": "chat-bot", "ownership": "agent", "fields": step, "agent_state": map[string]any{"scope": "conversation"}},
		}})
		order := e.AgentKey("order-bot", "acme", auth.ScopeAgentState)
		helper := e.AgentKey("helper-bot", "acme", auth.ScopeAgentState)
		put := func(key string, scope map[string]any, text string) {
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, map[string]any{"scope": scope, "body": map[string]any{"step": text}})
		}
		gone := map[string]any{"kind": "object", "id": "order:shop:Del1"}
		kept := map[string]any{"kind": "object", "id": "order:shop:Kept2"}
		inst := map[string]any{"kind": "agent", "id": "helper-1"}
		put(order, gone, "refund RB-8841 for locker 17")
		put(order, gone, "refund RB-8841 approved")
		put(order, kept, "parcel QK-5510 kept")
		put(helper, inst, "instance memo AX-3390")
		// A conversation's state and a customer's: sealed under the conversation's (or the
		// customer's) key and their own, so their deletes reach the backups too (issue 29 §3).
		chat := e.AgentKey("chat-bot", "acme", auth.ScopeAgentState)
		convGone := map[string]any{"kind": "conversation", "id": "c-del"}
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", chat, map[string]any{"scope": convGone, "body": map[string]any{"step": "coupon CV-2207"}})
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", chat, map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c-ana"},
			"subject": "email:ana@example.com", "body": map[string]any{"step": "sizes SJ-6610"}})
		require.Empty(t, scanTables(t, e.DB, []string{"RB-8841", "QK-5510", "AX-3390", "CV-2207", "SJ-6610"}), "every state is sealed")

		backup := backupDB(t, e, e.Engine)
		e.MustDo(http.StatusOK, "POST", "/v1/agent-state/delete", order, map[string]any{"scope": gone})
		e.MustDo(http.StatusOK, "POST", "/v1/agent-state/delete", chat, map[string]any{"scope": convGone})
		e.MustDo(http.StatusOK, "POST", "/v1/agent-state/delete", e.PersonKey("dpo", auth.RoleCompliance), map[string]any{"subject": "email:ana@example.com"})

		restored, err := db.Open(ctx, backup, db.Options{})
		require.NoError(t, err)
		defer db.Close(restored)
		n, err := restored.NewSelect().Model((*models.AgentState)(nil)).Where("agent = 'order-bot'").Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, n, "the copy was taken before the delete: it holds the deleted state's sealed row")
		ra, err := app.Build(ctx, e.App.Config, app.Overrides{DB: restored, Keys: e.Keys})
		require.NoError(t, err)
		po, err := auth.Authenticate(ctx, restored, order)
		require.NoError(t, err)
		ph, err := auth.Authenticate(ctx, restored, helper)
		require.NoError(t, err)
		pc, err := auth.Authenticate(ctx, restored, chat)
		require.NoError(t, err)
		check := func(when string) {
			for _, id := range []string{"c-del", "c-ana"} {
				res, err := ra.State.Read(ctx, pc, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: id}})
				require.NoError(t, err)
				require.Zero(t, res.Version, "%s: the deleted state of %s reads as never written", when, id)
			}
			res, err := ra.State.Read(ctx, po, state.ReadRequest{Scope: &state.Scope{Kind: "object", ID: "order:shop:Del1"}})
			require.NoError(t, err)
			require.Zero(t, res.Version, "%s: the deleted state reads as never written", when)
			res, err = ra.State.Read(ctx, po, state.ReadRequest{Scope: &state.Scope{Kind: "object", ID: "order:shop:Kept2"}})
			require.NoError(t, err)
			require.Contains(t, string(mustMarshal(res.Body)), "QK-5510", "%s: a state not deleted still reads", when)
			res, err = ra.State.Read(ctx, ph, state.ReadRequest{Scope: &state.Scope{Kind: "agent", ID: "helper-1"}})
			require.NoError(t, err)
			require.Contains(t, string(mustMarshal(res.Body)), "AX-3390", "%s: an agent-scope state not deleted still reads", when)
		}
		check("before the restore procedure")
		steps, err := ra.Restore(ctx)
		require.NoError(t, err)
		t.Logf("restore: %+v", steps)
		check("after the restore procedure")
		n, err = restored.NewSelect().Model((*models.AgentState)(nil)).Where("agent = 'order-bot'").Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "the restore procedure drops the state whose key the delete destroyed")
		n, err = restored.NewSelect().Model((*models.AgentState)(nil)).Where("agent = 'chat-bot'").Count(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "the restore procedure drops the conversation's and the customer's deleted states")
		require.Empty(t, scanTables(t, restored, []string{"RB-8841", "locker 17", "CV-2207", "SJ-6610"}))

		// A state stored in clear before these keys: it reads, and its next write seals it.
		_, err = e.DB.NewUpdate().Model((*models.AgentState)(nil)).Set("body = ?", []byte(`{"step":"legacy ZQ-1204"}`)).
			Set("field_times = '{}'").Where("agent = 'helper-bot'").Exec(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, scanTables(t, e.DB, []string{"ZQ-1204"}), "the control: a clear row is seen by the scan")
		got := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", helper, map[string]any{"scope": inst}).JSON(t)
		require.Equal(t, "legacy ZQ-1204", got["body"].(map[string]any)["step"])
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", helper, map[string]any{"scope": inst, "mode": "merge_by_key", "body": map[string]any{"step": "legacy ZQ-1204 seen"}})
		require.Empty(t, scanTables(t, e.DB, []string{"ZQ-1204"}), "the next write sealed the legacy clear state")

		// A conversation state sealed under the conversation's key alone (by a version before
		// the states' own keys): it reads, and its next write seals it under both keys.
		legacy := map[string]any{"kind": "conversation", "id": "c-legacy"}
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", chat, map[string]any{"scope": legacy, "body": map[string]any{"step": "first"}})
		var row models.AgentState
		require.NoError(t, e.DB.NewSelect().Model(&row).Where("agent = 'chat-bot'").Scan(ctx))
		key, err := e.Keys.DataKey(ctx, erasure.ConversationKeyID(row.ScopeHash), false)
		require.NoError(t, err)
		body, err := keystore.Seal(key, []byte(`{"step":"legacy LG-5150"}`), []byte("state-body:"+row.ID))
		require.NoError(t, err)
		times, err := keystore.Seal(key, []byte("{}"), []byte("state-times:"+row.ID))
		require.NoError(t, err)
		_, err = e.DB.NewUpdate().Model((*models.AgentState)(nil)).Set("body = ?", append([]byte("\x00s1"), body...)).
			Set("field_times = ?", "s1:"+base64.StdEncoding.EncodeToString(times)).Where("id = ?", row.ID).Exec(ctx)
		require.NoError(t, err)
		got = e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", chat, map[string]any{"scope": legacy}).JSON(t)
		require.Equal(t, "legacy LG-5150", got["body"].(map[string]any)["step"], "a state sealed under one key still reads")
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", chat, map[string]any{"scope": legacy, "body": map[string]any{"step": "resealed"}})
		require.NoError(t, e.DB.NewSelect().Model(&row).Where("id = ?", row.ID).Scan(ctx))
		require.True(t, bytes.HasPrefix(row.Body, []byte("\x00s2")), "its next write sealed it under both keys")
	})
}

// TestRestoredBackupForgetsExpiredStates (issue 29 §1): a state that left the store because
// its retention ended, swept or replaced by a write after its expiry, stays gone from a
// backup taken before: the sweep and the replacement destroy its own key, so the old copy,
// read with the current key store while its retention has not ended by the reader's clock,
// reads as never written and the restore procedure drops it; both databases.
func TestRestoredBackupForgetsExpiredStates(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		now := time.Now().UTC()
		e.Deps.State.Now = func() time.Time { return now }
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		e.PutDocument("object-types", map[string]any{"types": []any{map[string]any{"type": "order-bot", "ownership": "agent",
			"fields": map[string]any{"step": map[string]any{"type": "string"}}, "agent_state": map[string]any{"scope": "object"},
			"retention": map[string]any{"state": "2d"}}}})
		order := e.AgentKey("order-bot", "acme", auth.ScopeAgentState)
		put := func(id, text string) {
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", order, map[string]any{"scope": map[string]any{"kind": "object", "id": id},
				"body": map[string]any{"step": text}})
		}
		put("order:shop:Swept1", "swept RS-7731")
		now = now.Add(25 * time.Hour)
		put("order:shop:Replaced2", "replaced RP-4402")
		backup := backupDB(t, e, e.Engine)

		now = now.Add(24 * time.Hour) // the first state's two days are over, the second's not
		res, err := e.Deps.State.DeleteExpired(ctx, e.DB, e.SpaceID, 10, now)
		require.NoError(t, err)
		require.Equal(t, 1, res.States[e.SpaceID], "the sweep deletes the expired state")
		now = now.Add(25 * time.Hour)
		put("order:shop:Replaced2", "fresh RF-1150") // expired now too, and replaced by a write

		restored, err := db.Open(ctx, backup, db.Options{})
		require.NoError(t, err)
		defer db.Close(restored)
		ra, err := app.Build(ctx, e.App.Config, app.Overrides{DB: restored, Keys: e.Keys})
		require.NoError(t, err)
		po, err := auth.Authenticate(ctx, restored, order)
		require.NoError(t, err)
		for _, id := range []string{"order:shop:Swept1", "order:shop:Replaced2"} {
			got, err := ra.State.Read(ctx, po, state.ReadRequest{Scope: &state.Scope{Kind: "object", ID: id}})
			require.NoError(t, err)
			require.Zero(t, got.Version, "%s: the old copy's state is within retention by the reader's clock, yet reads as never written", id)
		}
		_, err = ra.Restore(ctx)
		require.NoError(t, err)
		n, err := restored.NewSelect().Model((*models.AgentState)(nil)).Count(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "the restore procedure drops both expired states")
		require.Empty(t, scanTables(t, restored, []string{"RS-7731", "RP-4402"}))
		cur := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", order, map[string]any{"scope": map[string]any{"kind": "object", "id": "order:shop:Replaced2"}}).JSON(t)
		require.Equal(t, "fresh RF-1150", cur["body"].(map[string]any)["step"], "the state written after the expiry reads under its fresh key")
	})
}
