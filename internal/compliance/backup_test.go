package compliance_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/internal/turns/turnstest"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/workflows"
)

// MS-4: a backup of the database taken before an erasure, restored after it, cannot bring
// the subject back: the rows come back, but their key is gone from the key store.
func TestRestoredBackupCannotBeDecrypted(t *testing.T) {
	e := newEnv(t, "sqlite")
	seedSpace(e)
	shop := e.AgentKey("shop-bot", "acme", auth.ScopeAgentState)
	crm := e.AgentKey("crm-bot", "acme", auth.ScopeAgentState)
	integ := e.PersonKey("integrator", auth.RoleIntegration)
	comp := e.PersonKey("dpo", auth.RoleCompliance)
	ana := seedSubject(e, shop, crm, integ, "Ana Souza", "ana.souza@example.com", "+55 11 98765-4321", turnstest.Load(t)[0])
	require.Contains(t, reads(e, shop, crm, ana)[1], `"version":2`)

	ctx := context.Background()
	backup := filepath.Join(t.TempDir(), "backup.db")
	_, err := e.DB.ExecContext(ctx, "VACUUM INTO ?", backup)
	require.NoError(t, err)

	id := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", comp, map[string]any{"subject": "email:" + ana.email}).JSON(t)["erasure_id"].(string)
	waitWorkflow(t, workflows.ErasureWorkflowID(id))

	// Restore the copy and run the services on it with the (current) key store.
	raw, err := os.ReadFile(backup)
	require.NoError(t, err)
	require.False(t, bytes.Contains(raw, []byte(ana.email)), "the backup holds the address in clear")
	restored, err := db.Open(ctx, "sqlite://"+backup, db.Options{})
	require.NoError(t, err)
	defer db.Close(restored)
	var rows []models.AgentState
	require.NoError(t, restored.NewSelect().Model(&rows).Where("subject_hash != ''").Scan(ctx))
	require.Len(t, rows, 2, "the backup still has ana's sealed states")
	// The services over the restored copy, wired as the binary wires them, with the
	// (current) key store.
	ra, err := app.Build(ctx, e.App.Config, app.Overrides{DB: restored, Keys: e.Keys})
	require.NoError(t, err)
	subj, st := ra.Subjects, ra.State
	for i := range rows {
		_, err := e.Keys.DataKey(ctx, state.SubjectKeyID(rows[i].SubjectHash), false)
		require.ErrorIs(t, err, keystore.ErrNoKey)
		ok, err := st.Unseal(ctx, &rows[i])
		require.NoError(t, err)
		require.False(t, ok, "a restored state opened after erasure")
	}
	_, err = subj.Get(ctx, e.SpaceID, ana.profileID)
	require.Equal(t, fault.NotFound, fault.As(err).Kind, "the restored profile must not open: %v", err)
	// The restored turns are still there, sealed, and no longer open.
	var turnRows []models.Turn
	require.NoError(t, restored.NewSelect().Model(&turnRows).Where("profile_id = ?", ana.profileID).Scan(ctx))
	require.Len(t, turnRows, ana.turns, "the backup still has ana's sealed turns")
	ts := ra.Turns
	got, err := ts.Recent(ctx, e.SpaceID, "conversation", ana.conv, time.Now().Add(-turns.Window))
	require.NoError(t, err)
	require.Empty(t, got, "a restored turn opened after erasure")
	p, err := auth.Authenticate(ctx, restored, crm)
	require.NoError(t, err)
	res, err := st.Read(ctx, p, state.ReadRequest{Scope: &state.Scope{Kind: "subject", ID: "email:" + ana.email}})
	require.NoError(t, err)
	require.Equal(t, int64(0), res.Version)
	require.JSONEq(t, `{}`, string(res.Body))
}
