package compliance_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/api/apitest"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/internal/turns/turnstest"
	"github.com/agentmemory/agentmemory/workflows"
)

// backupDB copies e's database as it is now and returns the URL of the copy: SQLite's
// VACUUM INTO a file; PostgreSQL's pg_dump of the test's schema loaded into a new schema.
func backupDB(t *testing.T, e *apitest.Env, engine string) string {
	t.Helper()
	ctx := context.Background()
	if engine == "sqlite" {
		path := filepath.Join(t.TempDir(), "backup.db")
		_, err := e.DB.ExecContext(ctx, "VACUUM INTO ?", path)
		require.NoError(t, err)
		return "sqlite://" + path
	}
	var schema string
	require.NoError(t, e.DB.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema))
	dump, err := exec.CommandContext(ctx, "pg_dump", "--no-owner", "--no-privileges", "-n", schema, dbtest.PostgresURL()).Output()
	require.NoError(t, err)
	copyName := schema + "_bk"
	load := exec.CommandContext(ctx, "psql", "-q", "-v", "ON_ERROR_STOP=1", dbtest.PostgresURL())
	load.Stdin = bytes.NewReader(bytes.ReplaceAll(dump, []byte(schema), []byte(copyName)))
	out, err := load.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() {
		_, _ = e.DB.ExecContext(context.Background(), "DROP SCHEMA "+copyName+" CASCADE") // best effort: a leftover test schema
	})
	return dbtest.PostgresURL() + "&search_path=" + copyName
}

// scanTables returns "table.column" for every value of every column of every table of d (text
// or bytes) that contains one of needles: the auditor's scan of a whole database.
func scanTables(t *testing.T, d *bun.DB, needles []string) []string {
	t.Helper()
	ctx := context.Background()
	q := "SELECT name FROM sqlite_master WHERE type = 'table'"
	if !db.IsSQLite(d) {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
	}
	var tables []string
	require.NoError(t, d.NewRaw(q).Scan(ctx, &tables))
	var found []string
	for _, table := range tables {
		rows, err := d.QueryContext(ctx, "SELECT * FROM "+table)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			for i, v := range vals {
				var b []byte
				switch x := v.(type) {
				case []byte:
					b = x
				case string:
					b = []byte(x)
				default:
					continue
				}
				for _, n := range needles {
					if bytes.Contains(bytes.ToLower(b), bytes.ToLower([]byte(n))) {
						found = append(found, fmt.Sprintf("%s.%s holds %q", table, cols[i], n))
					}
				}
			}
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
	}
	return found
}

// ER-1 (issue 29 §1), as an auditor tests it: copy the database before an erasure, erase a
// subject and an unlinked conversation, restore the old copy with the CURRENT key store, run
// the restore procedure, and find nothing of either through the services, in any table's
// text or bytes, while what was not erased still reads. Both databases.
func TestRestoredBackupForgetsErasedSubjectsAndConversations(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, engine)
			seedSpace(e)
			shop := e.AgentKey("shop-bot", "acme", auth.ScopeAgentState)
			crm := e.AgentKey("crm-bot", "acme", auth.ScopeAgentState)
			integ := e.PersonKey("integrator", auth.RoleIntegration)
			comp := e.PersonKey("dpo", auth.RoleCompliance)
			ana := seedSubject(e, shop, crm, integ, "Ana Souza", "ana.souza@example.com", "+55 11 98765-4321", turnstest.Load(t)[0])
			const orphan, kept = "parcel ZX-4471 never arrived", "parcel QK-9902 arrived"
			e.MustDo(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"turns": []map[string]any{
				{"conversation_id": "c-orphan", "speaker": "customer", "text": orphan}}})
			e.MustDo(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"turns": []map[string]any{
				{"conversation_id": "c-kept", "speaker": "customer", "text": kept}}})
			// Conversation states naming no subject, sealed under the conversation's key (issue 29 §1).
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{
				"scope": map[string]any{"kind": "conversation", "id": "c-orphan"}, "body": map[string]any{"step": "refund ZX-4471 opened"}})
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{
				"scope": map[string]any{"kind": "conversation", "id": "c-kept"}, "body": map[string]any{"step": "QK-9902 delivered"}})
			anaTurns, err := e.Deps.Turns.Recent(ctx, e.SpaceID, "conversation", ana.conv, time.Now().Add(-turns.Window))
			require.NoError(t, err)
			require.NotEmpty(t, anaTurns)
			needles := []string{ana.email, "98765-4321", "Ana Souza", "ZX-4471", "prefers e-mail", anaTurns[len(anaTurns)-1].Text}

			backup := backupDB(t, e, engine)

			for _, body := range []map[string]any{{"subject": "email:" + ana.email}, {"conversation_id": "c-orphan"}} {
				id := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", comp, body).JSON(t)["erasure_id"].(string)
				waitWorkflow(t, workflows.ErasureWorkflowID(id))
				v := e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+id, comp, nil).JSON(t)
				require.Equal(t, "completed", v["status"])
				for _, st := range v["certificate"].(map[string]any)["stores"].([]any) {
					s := st.(map[string]any)
					switch s["store"] {
					case "turns", "state", "notes", "subjects", "exports", "keys":
						require.Equal(t, "shredded", s["backups"], "the %s store's reach on backups (%v)", s["store"], body)
					case "outbox":
						require.Equal(t, "holds_none", s["backups"])
					}
				}
			}

			restored, err := db.Open(ctx, backup, db.Options{})
			require.NoError(t, err)
			defer db.Close(restored)
			orphanRows, err := restored.NewSelect().Table("turns").Where("scope_hash = ?", e.Deps.Turns.ScopeHash(e.SpaceID, "conversation", "c-orphan")).Count(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, orphanRows, "the copy was taken before the erasure: it holds the erased conversation's sealed turn")
			ra, err := app.Build(ctx, e.App.Config, app.Overrides{DB: restored, Keys: e.Keys})
			require.NoError(t, err)
			steps, err := ra.Restore(ctx)
			require.NoError(t, err)
			t.Logf("restore: %+v", steps)

			require.Empty(t, scanTables(t, restored, needles), "a restored table still holds erased data")
			for _, c := range []struct{ kind, id string }{{"conversation", ana.conv}, {"task", ana.task}, {"conversation", "c-orphan"}} {
				got, err := ra.Turns.Recent(ctx, e.SpaceID, c.kind, c.id, time.Now().Add(-turns.Window))
				require.NoError(t, err)
				require.Empty(t, got, "restored turns of %s %s", c.kind, c.id)
			}
			got, err := ra.Turns.Recent(ctx, e.SpaceID, "conversation", "c-kept", time.Now().Add(-turns.Window))
			require.NoError(t, err)
			require.Len(t, got, 1, "a conversation not erased still reads after the restore")
			require.True(t, strings.Contains(got[0].Text, "QK-9902"))
			_, err = ra.Subjects.Get(ctx, e.SpaceID, ana.profileID)
			require.Equal(t, fault.NotFound, fault.As(err).Kind)
			p, err := auth.Authenticate(ctx, restored, crm)
			require.NoError(t, err)
			res, err := ra.State.Read(ctx, p, state.ReadRequest{Scope: &state.Scope{Kind: "subject", ID: "email:" + ana.email}})
			require.NoError(t, err)
			require.Equal(t, int64(0), res.Version)
			ps, err := auth.Authenticate(ctx, restored, shop)
			require.NoError(t, err)
			res, err = ra.State.Read(ctx, ps, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-orphan"}})
			require.NoError(t, err)
			require.Equal(t, int64(0), res.Version, "the erased conversation's state reads as never written")
			res, err = ra.State.Read(ctx, ps, state.ReadRequest{Scope: &state.Scope{Kind: "conversation", ID: "c-kept"}})
			require.NoError(t, err)
			require.NotZero(t, res.Version, "a conversation's state not erased still reads after the restore")

			again, err := ra.Restore(ctx)
			require.NoError(t, err)
			for _, s := range again[:4] {
				require.Zero(t, s.Count, "a second restore has nothing more to seal or drop: %s", s.Name)
			}
		})
	}
}
