package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/quotas"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
)

// recountSpace makes a space with working memory on and two stored conversation states.
func recountSpace(t *testing.T, d *bun.DB) string {
	t.Helper()
	ctx := context.Background()
	spaceID, _, err := spaces.CreateWith(ctx, d, "recount", time.Now(), spaces.CreateOptions{DirectPut: true})
	require.NoError(t, err)
	p := auth.Principal{SpaceID: spaceID, KeyID: "key_test", Kind: auth.KindPerson, Name: "tester",
		Roles: []string{auth.RoleSecurity, auth.RoleAdmin, auth.RoleIntegration}}
	docs := spaces.Documents{DB: d}
	_, _, err = docs.Put(ctx, d, p, spaces.DocFeatures, []byte(`{"agent_state": {"enabled": true}, "quotas": {"states_per_space": 3}}`), time.Now())
	require.NoError(t, err)
	_, _, err = docs.Put(ctx, d, p, spaces.DocObjectTypes, []byte(`{"types": [{"type": "bot", "ownership": "agent",
		"fields": {"step": {"type": "string"}}, "agent_state": {"scope": "conversation", "max_bytes": 4096, "write": "both"}}]}`), time.Now())
	require.NoError(t, err)
	s := &state.Service{DB: d, Docs: docs, Hasher: keyed.New([]byte("recount-test-secret-0123456789abcdef")), Masker: nil, Now: time.Now}
	for i := 1; i <= 2; i++ {
		res, err := s.Write(ctx, p, "", state.WriteRequest{Scope: &state.Scope{Kind: "conversation", ID: fmt.Sprintf("c-%d", i)}, Agent: "bot", Body: json.RawMessage(`{"step": "a"}`)})
		require.NoError(t, err)
		require.True(t, res.Stored, "%+v", res)
	}
	return spaceID
}

// TestRecountRepairsCorruptedCounts (issue 34 §1): with counters deliberately corrupted (a
// space's state count raised, a per-kind count lost, a conversation count with no turns, an
// agent's note count with no notes), `agentmemory recount` puts each back to what the rows
// say, reports each fix with its old and new value, and a second run fixes nothing. On SQLite
// and PostgreSQL.
func TestRecountRepairsCorruptedCounts(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			u := dbtest.URL(t, engine)
			d, err := db.Open(ctx, u, dbtest.Shipped())
			require.NoError(t, err)
			t.Cleanup(func() { db.Close(d) })
			_, err = db.Migrate(ctx, d)
			require.NoError(t, err)
			spaceID := recountSpace(t, d)
			for _, q := range []string{
				`UPDATE quota_usage SET used = 99 WHERE space_id = ? AND quota = 'states_per_space'`,
				`DELETE FROM quota_usage WHERE space_id = ? AND quota = 'states_per_scope_kind'`,
				`INSERT INTO quota_usage (space_id, quota, scope_key, used) VALUES (?, 'turns_per_conversation', 'gone', 4)`,
				`INSERT INTO note_source_counts (space_id, source_id, active) VALUES (?, 'src_ghost', 7)`,
			} {
				_, err := d.ExecContext(ctx, q, spaceID)
				require.NoError(t, err)
			}
			recount := func() quotas.Report {
				var out bytes.Buffer
				require.NoError(t, run(ctx, []string{"recount"}, env(map[string]string{"DATABASE_URL": u}), &out, io.Discard))
				var rep quotas.Report
				require.NoError(t, json.Unmarshal(out.Bytes(), &rep), "stdout: %s", out.String())
				return rep
			}
			rep := recount()
			got := map[string][2]int64{}
			for _, f := range rep.Fixed {
				require.Equal(t, spaceID, f.SpaceID)
				got[f.Table+"/"+f.Counter+"/"+f.Key] = [2]int64{f.Was, f.Now}
			}
			require.Equal(t, map[string][2]int64{
				"quota_usage/states_per_space/":                       {99, 2},
				"quota_usage/states_per_scope_kind/conversation":      {0, 2},
				"quota_usage/turns_per_conversation/(a conversation)": {4, 0},
				"note_source_counts/active_notes/src_ghost":           {7, 0},
			}, got)
			for q, want := range map[string]int64{quotas.StatesPerSpace: 2, quotas.TurnsPerConversation: 0} {
				key := ""
				if q == quotas.TurnsPerConversation {
					key = "gone"
				}
				n, err := quotas.Used(ctx, d, spaceID, q, key)
				require.NoError(t, err)
				require.Equal(t, want, n, q)
			}
			var active int64
			require.NoError(t, d.NewRaw(`SELECT active FROM note_source_counts WHERE space_id = ? AND source_id = 'src_ghost'`, spaceID).Scan(ctx, &active))
			require.Equal(t, int64(0), active)
			again := recount()
			require.Empty(t, again.Fixed, "a second recount fixes nothing")
			require.Equal(t, rep.Checked, again.Checked+1, "the conversation counter with no turns is gone")
		})
	}
}
