package compliance_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api/apitest"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
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
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ctx := context.Background()
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		step := map[string]any{"step": map[string]any{"type": "string"}}
		e.PutDocument("object-types", map[string]any{"types": []any{
			map[string]any{"type": "order-bot", "ownership": "agent", "fields": step, "agent_state": map[string]any{"scope": "object"}},
			map[string]any{"type": "helper-bot", "ownership": "agent", "fields": step, "agent_state": map[string]any{"scope": "agent"}},
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
		require.Empty(t, scanTables(t, e.DB, []string{"RB-8841", "QK-5510", "AX-3390"}), "states naming no customer are sealed")

		backup := backupDB(t, e, e.Engine)
		e.MustDo(http.StatusOK, "POST", "/v1/agent-state/delete", order, map[string]any{"scope": gone})

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
		check := func(when string) {
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
		require.Empty(t, scanTables(t, restored, []string{"RB-8841", "locker 17"}))

		// A state stored in clear before these keys: it reads, and its next write seals it.
		_, err = e.DB.NewUpdate().Model((*models.AgentState)(nil)).Set("body = ?", []byte(`{"step":"legacy ZQ-1204"}`)).
			Set("field_times = '{}'").Where("agent = 'helper-bot'").Exec(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, scanTables(t, e.DB, []string{"ZQ-1204"}), "the control: a clear row is seen by the scan")
		got := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", helper, map[string]any{"scope": inst}).JSON(t)
		require.Equal(t, "legacy ZQ-1204", got["body"].(map[string]any)["step"])
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", helper, map[string]any{"scope": inst, "mode": "merge_by_key", "body": map[string]any{"step": "legacy ZQ-1204 seen"}})
		require.Empty(t, scanTables(t, e.DB, []string{"ZQ-1204"}), "the next write sealed the legacy clear state")
	})
}
