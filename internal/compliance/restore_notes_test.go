package compliance_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/notes"
)

// ftsHits counts the notes d's full-text index finds for word: SQLite's notes_fts MATCH,
// PostgreSQL's search column @@.
func ftsHits(t *testing.T, d *bun.DB, word string) int {
	t.Helper()
	q := "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?"
	if !db.IsSQLite(d) {
		q = "SELECT count(*) FROM notes WHERE search @@ to_tsquery('simple', ?)"
	}
	var n int
	require.NoError(t, d.QueryRowContext(context.Background(), q, word).Scan(&n))
	return n
}

// ER-1 (issue 29 §1) for agent notes, as an auditor tests it: copy the database and the key
// store before an agent's notes are erased (DELETE ?source_id=, every version and proposal)
// and one note of another agent is hard-deleted (every version); restore the old database copy
// with the CURRENT key store; run the restore procedure; find nothing of them in any table or
// column, the full-text index or the search and read APIs, while the note not deleted still
// reads and is found. Both databases.
func TestRestoredBackupForgetsErasedAgentNotes(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, engine)
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
			botA := e.AgentKey("bot-a", "acme", "agent_memory", "agent_memory:write")
			botB := e.AgentKey("bot-b", "acme", "agent_memory", "agent_memory:write")
			note := func(key, title, body string, headers ...string) string {
				return e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", key,
					map[string]any{"kind": "procedure", "title": title, "body": body, "tags": []string{"refund"}}, headers...).JSON(t)["id"].(string)
			}
			// Idempotent writes remember their answer (note_requests), which names the note or
			// the proposal: restore must drop the answers naming what it drops.
			a1 := note(botA, "Zorblaxia refunds", "Check the zorblaxia ledger first.", "Idempotency-Key", "k-a1")
			e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes/"+a1+"/versions", botA,
				map[string]any{"body": "Check the zorblaxia ledger, then refund."})
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true, "writes": "human_only"}})
			pa := e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/notes", botA,
				map[string]any{"kind": "pitfall", "title": "Plonkwise pitfall", "body": "Never skip the plonkwise check."},
				"Idempotency-Key", "k-pa").JSON(t)["proposal_id"].(string)
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
			b1 := note(botB, "Quintessor returns", "Quintessor parcels go back by courier.")
			b1v2 := e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes/"+b1+"/versions", botB,
				map[string]any{"body": "Quintessor parcels go back by courier, tracked."}).JSON(t)["id"].(string)
			kept := note(botB, "Mirthwell exchanges", "Mirthwell items are exchanged in store.", "Idempotency-Key", "k-kept")
			for _, id := range []string{a1, pa, kept} {
				require.Equal(t, 1, rememberedAnswers(t, e.DB, id), "the idempotent write of %s remembered its answer", id)
			}
			// A sealed remembered answer replays as the first answer.
			replay := e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", botB, map[string]any{"kind": "procedure",
				"title": "Mirthwell exchanges", "body": "Mirthwell items are exchanged in store.", "tags": []string{"refund"}}, "Idempotency-Key", "k-kept").JSON(t)
			require.Equal(t, kept, replay["id"])
			require.Equal(t, "Mirthwell items are exchanged in store.", replay["body"])
			needles := []string{"zorblaxia", "plonkwise", "quintessor"}
			require.Equal(t, 2, ftsHits(t, e.DB, "quintessor"), "the live index finds both versions before the delete")
			for _, hit := range scanTables(t, e.DB, []string{"Check the zorblaxia ledger", "Never skip the plonkwise", "go back by courier"}) {
				// An idempotent write's remembered answer (note_requests.response) is sealed under
				// the note's lineage key too (issue 29 §1): only the derived full-text entries hold
				// the text in clear.
				require.True(t, strings.HasPrefix(hit, "notes_fts"),
					"note text is sealed in the rows and the remembered answers, only the derived full-text entries hold it: %s", hit)
			}

			// The auditor's copies, before the erasure and the delete: the database and the key store.
			backup := backupDB(t, e, engine)
			keysCopy := filepath.Join(t.TempDir(), "keys.json")
			raw, err := os.ReadFile(filepath.Join(e.App.Config.DataDir, "keys.json"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(keysCopy, raw, 0o600))

			r := e.MustDo(http.StatusAccepted, "DELETE", "/v1/agent-memory/notes?source_id=bot-a", e.AdminKey, nil).JSON(t)
			waitWorkflow(t, r["workflow_id"].(string))
			del := e.MustDo(http.StatusOK, "DELETE", "/v1/agent-memory/notes/"+b1v2, e.AdminKey, nil).JSON(t)
			require.Len(t, del["note_ids"], 2)
			for _, id := range []string{notes.NoteKeyID(a1), noterows.ProposalKeyID(pa), notes.NoteKeyID(b1)} {
				ok, err := e.Keys.Exists(ctx, id)
				require.NoError(t, err)
				require.False(t, ok, "key %s destroyed", id)
			}
			// The old key store copy still holds them: a restore with it would bring the notes
			// back, which is why the procedure takes the current one.
			old, err := keystore.OpenFile(keysCopy, e.Hasher.Key("subject-keys"))
			require.NoError(t, err)
			ok, err := old.Exists(ctx, notes.NoteKeyID(b1))
			require.NoError(t, err)
			require.True(t, ok, "the key store copy predates the delete")

			restored, err := db.Open(ctx, backup, db.Options{})
			require.NoError(t, err)
			defer db.Close(restored)
			require.Equal(t, 2, ftsHits(t, restored, "quintessor"), "the copy holds the deleted note's index entry before the restore")
			for _, id := range []string{a1, pa} {
				require.Equal(t, 1, rememberedAnswers(t, restored, id), "the copy holds the remembered answer naming %s before the restore", id)
			}
			for _, hit := range scanTables(t, restored, append(needles, "Check the zorblaxia ledger")) {
				require.False(t, strings.HasPrefix(hit, "note_requests."), "the copy's remembered answer holds erased note text: %s", hit)
			}
			ra, err := app.Build(ctx, e.App.Config, app.Overrides{DB: restored, Keys: e.Keys})
			require.NoError(t, err)
			steps, err := ra.Restore(ctx)
			require.NoError(t, err)
			t.Logf("restore: %+v", steps)

			require.Empty(t, scanTables(t, restored, needles), "a restored table still holds erased or deleted note text")
			for _, id := range []string{a1, pa} {
				require.Zero(t, rememberedAnswers(t, restored, id), "restore dropped the remembered answer naming %s (note_requests)", id)
			}
			require.Equal(t, 1, rememberedAnswers(t, restored, kept), "the answer naming the note not deleted is kept")
			for _, w := range needles {
				require.Zero(t, ftsHits(t, restored, w), "the restored full-text index still finds %q", w)
			}
			require.Equal(t, 1, ftsHits(t, restored, "mirthwell"), "the index is rebuilt for the note not deleted")

			p, err := auth.Authenticate(ctx, restored, e.AdminKey)
			require.NoError(t, err)
			for _, src := range []string{"bot-a", "bot-b"} {
				for _, w := range append(needles, "refunds", "returns", "courier") {
					res, err := ra.Notes.Search(ctx, p, notes.SearchRequest{Q: w, Limit: 50, SourceID: src})
					require.NoError(t, err)
					for _, n := range res.Notes {
						require.Equal(t, kept, n.ID, "search %q found a note erased or deleted after the copy", w)
					}
				}
			}
			found, err := ra.Notes.Search(ctx, p, notes.SearchRequest{Q: "mirthwell", Limit: 50, SourceID: "bot-b"})
			require.NoError(t, err)
			require.Len(t, found.Notes, 1)
			for _, id := range []string{a1, b1, b1v2} {
				_, err := ra.Notes.Get(ctx, p, id)
				require.Equal(t, fault.NotFound, fault.As(err).Kind, "note %s", id)
			}
			got, err := ra.Notes.Get(ctx, p, kept)
			require.NoError(t, err)
			require.Equal(t, "Mirthwell items are exchanged in store.", got.Body)
			_, err = ra.Proposals.Get(ctx, p, pa)
			require.Equal(t, fault.NotFound, fault.As(err).Kind)
			exp, err := ra.Proposals.Export(ctx, p)
			require.NoError(t, err)
			require.Len(t, exp.Notes, 1, "the export holds only the note not deleted")
			require.Empty(t, exp.Proposals)

			again, err := ra.Restore(ctx)
			require.NoError(t, err)
			for _, s := range again {
				if s.Name == "notes_resealed" || s.Name == "notes_unreadable_removed" {
					require.Zero(t, s.Count, "a second restore has nothing more to seal or drop: %s", s.Name)
				}
			}
		})
	}
}

// rememberedAnswers counts the idempotent writes' remembered answers (note_requests) that name
// id (a note or a proposal id).
func rememberedAnswers(t *testing.T, d *bun.DB, id string) int {
	t.Helper()
	n, err := d.NewSelect().Table("note_requests").Where("response LIKE ?", "%\""+id+"\"%").Count(context.Background())
	require.NoError(t, err)
	return int(n)
}
