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

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/boards"
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
func backupDB(t *testing.T, e *apptest.Env, engine string) string {
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
			triage := seedBoards(e, ana.email)
			needles := []string{ana.email, "98765-4321", "Ana Souza", "ZX-4471", "prefers e-mail", anaTurns[len(anaTurns)-1].Text, "RB-5521", "RB-7730"}

			backup := backupDB(t, e, engine)

			for _, body := range []map[string]any{{"subject": "email:" + ana.email}, {"conversation_id": "c-orphan"}} {
				id := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", comp, body).JSON(t)["erasure_id"].(string)
				waitWorkflow(t, workflows.ErasureWorkflowID(id))
				v := e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+id, comp, nil).JSON(t)
				require.Equal(t, "completed", v["status"])
				for _, st := range v["certificate"].(map[string]any)["stores"].([]any) {
					s := st.(map[string]any)
					switch s["store"] {
					case "turns", "state", "notes", "subjects", "exports", "keys", "boards":
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
			pt, err := auth.Authenticate(ctx, restored, triage)
			require.NoError(t, err)
			readBoards(t, ra, pt, "before the restore procedure")
			steps, err := ra.Restore(ctx)
			require.NoError(t, err)
			t.Logf("restore: %+v", steps)
			readBoards(t, ra, pt, "after the restore procedure")

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

// seedBoards declares the board type cases (a subject field, a free-text summary) and writes
// three boards: case-1 naming the subject of email (twice, so its history holds two versions),
// case-2 naming no one but mentioning her by name and e-mail (the content probe ties it to
// her), case-3 naming someone else. It returns the writing agent's key.
func seedBoards(e *apptest.Env, email string) string {
	types := spaceTypes()
	types["types"] = append(types["types"].([]any), map[string]any{
		"type": "cases", "ownership": "shared",
		"fields": map[string]any{
			"customer": map[string]any{"type": "string", "subject": true},
			"summary":  map[string]any{"type": "text", "conflict": map[string]any{"rule": "ours"}},
		},
	})
	e.PutDocument("object-types", types)
	e.MustDo(http.StatusCreated, "POST", "/v1/boards/cases/grants", e.AdminKey, map[string]any{"agent": "triage", "access": "read_write"})
	triage := e.AgentKey("triage", "acme")
	write := func(id string, version int, body map[string]any) {
		e.MustDo(http.StatusOK, "PUT", "/v1/boards", triage, map[string]any{"type": "cases", "id": id, "if_version": version, "body": body})
	}
	write("case-1", 0, map[string]any{"customer": "email:" + email, "summary": "refund RB-5521 asked"})
	write("case-1", 1, map[string]any{"summary": "refund RB-5521 approved"})
	write("case-2", 0, map[string]any{"summary": "Ana Souza (" + email + ") called about RB-7730"})
	write("case-3", 0, map[string]any{"customer": "email:bruno@example.com", "summary": "parcel QK-9902 delivered"})
	return triage
}

// readBoards reads seedBoards' boards through ra as p: the two erased read as never written
// (version 0, empty body), case-3 as written.
func readBoards(t *testing.T, ra *app.App, p auth.Principal, when string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range []string{"case-1", "case-2"} {
		got, err := ra.Boards.Read(ctx, p, boards.ReadRequest{Type: "cases", ID: id})
		require.NoError(t, err)
		require.Equal(t, int64(0), got.Version, "%s: erased board %s reads as never written", when, id)
		require.JSONEq(t, "{}", string(got.Body), "%s: erased board %s", when, id)
	}
	got, err := ra.Boards.Read(ctx, p, boards.ReadRequest{Type: "cases", ID: "case-3"})
	require.NoError(t, err)
	require.Equal(t, int64(1), got.Version, "%s: a board not erased still reads", when)
	require.Contains(t, string(got.Body), "QK-9902")
}
