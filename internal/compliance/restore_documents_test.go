package compliance_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
)

// docProbe is what the auditor looks for of one document: its id, base, chunk ids, and the
// query that embeds exactly as its first chunk (title + "\n\n" + text: the stand-in embedder
// is deterministic, so that query's vector IS the chunk's stored embedding).
type docProbe struct {
	id, kb  string
	chunks  []string
	nnQuery string
	vector  []byte
}

// ER-1, KN-3 (issue 29 §1), as an auditor tests it, for knowledge: copy the database AND the
// key store before; delete a document through the API and erase a subject named by an
// allow_with_subject document; restore the old database copy with the CURRENT key store and
// run the restore procedure. Then nothing of the deleted document or of the subject comes
// back: not through retrieve, the context call or MCP search_knowledge, not in any table's
// text or bytes, not in a full-text MATCH, and not to a nearest-neighbour probe whose query
// vector is the gone chunk's own embedding. The control: the copied (old) key store still
// opens the copy's rows, and a document neither deleted nor erased reads before and after.
// Both databases (SQLite by VACUUM INTO, PostgreSQL by pg_dump into another schema).
func TestRestoredBackupForgetsDeletedDocumentsAndErasedSubjects(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, engine)
			emb, err := llm.New(llm.Config{Host: llmtest.NewEmbed(t).URL, Model: "unused"})
			require.NoError(t, err)
			e.App.Knowledge.Embedder = emb
			e.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
			integ := e.PersonKey("integrator", auth.RoleIntegration)
			comp := e.PersonKey("dpo", auth.RoleCompliance)
			reader := e.AgentKey("support-bot", "acme", auth.ScopeKnowledgeRead, auth.ScopeContext)
			e.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{"name": "Ana Souza", "handles": []string{"email:ana.souza@example.com"}})
			handbook := createBase(t, e, "handbook", nil)
			cases := createBase(t, e, "cases", map[string]any{"personal_data": "allow_with_subject"})

			gone := ingestDoc(t, e, handbook, map[string]any{"text": "Returns of the quetzal lamp take nine days at the depot.", "source_uri": "kb://returns", "title": "Lamp returns"})
			ana := ingestDoc(t, e, cases, map[string]any{"text": "Ana Souza (ana.souza@example.com) disputed the ocelot invoice twice.", "source_uri": "crm://case/1",
				"title": "Case of Ana Souza", "subject": "email:ana.souza@example.com"})
			kept := ingestDoc(t, e, handbook, map[string]any{"text": "Exchanges of the marmot kettle are free for members.", "source_uri": "kb://exchanges", "title": "Kettle exchanges"})
			needles := []string{"quetzal", "Lamp returns", "ocelot", "Ana Souza", "ana.souza@example.com"}
			gone.vector, ana.vector = storedVector(t, e.DB, gone.chunks[0]), storedVector(t, e.DB, ana.chunks[0])
			for _, d := range []docProbe{gone, ana} {
				require.Contains(t, retrievedDocs(t, e, reader, d.nnQuery, handbook, cases), d.id, "the live store retrieves it before (the probe can find it)")
			}

			keyCopy := copyKeyFile(t, e)
			backup := backupDB(t, e, engine)

			e.MustDo(http.StatusOK, "DELETE", "/v1/knowledge/"+handbook+"/documents/"+gone.id, e.AdminKey, nil)
			view, _ := erase(t, e, comp, "email:ana.souza@example.com")
			require.Equal(t, "completed", string(view.Status), "reason: %s", view.Reason)
			for _, st := range view.Certificate.Stores {
				if st.Store == "knowledge" {
					require.Equal(t, "shredded", st.Backups, "the knowledge store's reach on backups")
				}
			}
			for _, d := range []docProbe{gone, ana} {
				ok, err := e.Keys.Exists(ctx, knowledge.DocumentKeyID(d.id))
				require.NoError(t, err)
				require.False(t, ok, "the document's key is destroyed")
			}

			restored, err := db.Open(ctx, backup, db.Options{})
			require.NoError(t, err)
			defer db.Close(restored)
			require.NotEmpty(t, scanTables(t, restored, needles), "the copy was taken before: it holds the derived entries in clear")
			oldKeys, err := keystore.OpenFile(keyCopy, e.Hasher.Key("subject-keys"))
			require.NoError(t, err)
			old, err := app.Build(ctx, e.App.Config, app.Overrides{DB: restored, Keys: oldKeys})
			require.NoError(t, err)
			defer old.Close()
			texts := chunkTexts(t, old, restored, gone.chunks[0], ana.chunks[0])
			require.Contains(t, texts[0], "quetzal", "with the old key store the copy's sealed chunk opens (the control)")
			require.Contains(t, texts[1], "ocelot")

			ra, err := app.Build(ctx, e.App.Config, app.Overrides{DB: restored, Keys: e.Keys})
			require.NoError(t, err)
			defer ra.Close()
			ra.Knowledge.Embedder = emb
			require.Equal(t, []string{"", ""}, chunkTexts(t, ra, restored, gone.chunks[0], ana.chunks[0]), "with the current key store nothing opens, even before the restore")
			steps, err := ra.Restore(ctx)
			require.NoError(t, err)
			t.Logf("restore: %+v", steps)

			re := &apptest.Env{T: t, Engine: engine, App: ra, DB: restored, Deps: ra.APIDeps(nil), Hasher: e.Hasher, Keys: e.Keys, SpaceID: e.SpaceID, AdminKey: e.AdminKey}
			re.Server = api.NewServer(re.Deps)
			require.Empty(t, scanTables(t, restored, needles), "a restored table still holds the deleted document or the erased subject")
			requireForgotten(t, re, reader, []docProbe{gone, ana}, handbook, cases)
			require.Contains(t, retrievedDocs(t, re, reader, kept.nnQuery, handbook, cases), kept.id, "a document neither deleted nor erased still retrieves")
			tomb := re.MustDo(http.StatusOK, "GET", "/v1/knowledge/"+handbook+"/documents/"+gone.id, e.AdminKey, nil).JSON(t)
			require.Equal(t, knowledge.StatusDeleted, tomb["status"], "the deleted document is the tombstone the live store keeps")
			require.Equal(t, "", tomb["title"])
			re.MustDo(http.StatusNotFound, "GET", "/v1/knowledge/"+cases+"/documents/"+ana.id, e.AdminKey, nil)

			again, err := ra.Restore(ctx)
			require.NoError(t, err)
			for _, s := range again {
				if s.Name == "knowledge_sealed" || s.Name == "knowledge_unreadable_removed" {
					require.Zero(t, s.Count, "a second restore has nothing more to seal or drop: %s", s.Name)
				}
			}
		})
	}
}

// requireForgotten checks, on the restored env re, that no API, full-text index or vector
// probe returns anything of docs.
func requireForgotten(t *testing.T, re *apptest.Env, reader string, docs []docProbe, kbs ...string) {
	t.Helper()
	ctx := context.Background()
	srv := httptest.NewServer(re.Server)
	defer srv.Close()
	cs := mcpClient(t, srv.URL, reader)
	for _, d := range docs {
		require.NotContains(t, retrievedDocs(t, re, reader, d.nnQuery, kbs...), d.id, "retrieve (its own embedding as the query vector)")
		ctxAnswer := re.MustDo(http.StatusOK, "POST", "/v1/context", reader, map[string]any{"knowledge": map[string]any{"kbs": kbs, "query": d.nnQuery, "top_k": 50}}).JSON(t)
		for _, c := range d.chunks {
			require.NotContains(t, ctxAnswer["chunk_ids"], c, "the context call")
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: api.ToolSearchKnowledge, Arguments: map[string]any{"query": d.nnQuery, "kbs": kbs, "top_k": 50}})
		require.NoError(t, err)
		require.False(t, res.IsError)
		var out struct {
			Chunks []struct {
				DocumentID string `json:"document_id"`
			} `json:"chunks"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out))
		for _, c := range out.Chunks {
			require.NotEqual(t, d.id, c.DocumentID, "MCP search_knowledge")
		}
		require.Zero(t, nearestIndexed(t, re.DB, d.vector, d.chunks), "a nearest-neighbour probe of the vector index")
	}
	for _, word := range []string{"quetzal", "ocelot", "souza"} {
		require.Zero(t, fullTextMatches(t, re.DB, word), "full-text MATCH %q", word)
	}
}

func createBase(t *testing.T, e *apptest.Env, name string, settings map[string]any) string {
	t.Helper()
	if settings == nil {
		settings = map[string]any{}
	}
	settings["readers"] = map[string]any{"space": true}
	return e.MustDo(http.StatusCreated, "POST", "/v1/knowledge", e.AdminKey, map[string]any{"name": name, "settings": settings}).JSON(t)["id"].(string)
}

// ingestDoc submits a document through the store (apptest's Deps have no workflow engine) and
// indexes it as IngestWorkflow's activity does.
func ingestDoc(t *testing.T, e *apptest.Env, kb string, body map[string]any) docProbe {
	t.Helper()
	ctx := context.Background()
	admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
	require.NoError(t, err)
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	var req knowledge.SubmitRequest
	require.NoError(t, json.Unmarshal(raw, &req))
	d, _, err := e.App.Knowledge.Submit(ctx, admin, kb, req)
	require.NoError(t, err)
	res, err := e.App.Knowledge.Ingest(ctx, d.ID)
	require.NoError(t, err)
	require.Equal(t, knowledge.StatusReady, res.Status)
	p := docProbe{id: d.ID, kb: kb, nnQuery: req.Title + "\n\n" + req.Text}
	require.NoError(t, e.DB.NewRaw("SELECT id FROM knowledge_chunks WHERE document_id = ? ORDER BY ord", d.ID).Scan(ctx, &p.chunks))
	require.Len(t, p.chunks, 1, "one short document, one chunk (the whole text)")
	return p
}

// retrievedDocs returns the document ids POST /v1/knowledge/retrieve answers for query.
func retrievedDocs(t *testing.T, e *apptest.Env, key, query string, kbs ...string) []string {
	t.Helper()
	got := e.MustDo(http.StatusOK, "POST", "/v1/knowledge/retrieve", key, map[string]any{"query": query, "kbs": kbs, "top_k": 50}).JSON(t)
	var ids []string
	for _, c := range got["chunks"].([]any) {
		ids = append(ids, c.(map[string]any)["document_id"].(string))
	}
	return ids
}

func storedVector(t *testing.T, d *bun.DB, chunkID string) []byte {
	t.Helper()
	var v []byte
	require.NoError(t, d.NewRaw("SELECT embedding FROM knowledge_chunks WHERE id = ?", chunkID).Scan(context.Background(), &v))
	require.NotEmpty(t, v)
	return v
}

// chunkTexts returns the texts a's key store opens of chunk ids in d ("" for one that does
// not open or is gone), through the store's own reading.
func chunkTexts(t *testing.T, a *app.App, d *bun.DB, ids ...string) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		var row struct {
			Key    string `bun:"sealed_key"`
			Sealed []byte `bun:"sealed_text"`
		}
		require.NoError(t, d.NewRaw("SELECT sealed_key, sealed_text FROM knowledge_chunks WHERE id = ?", id).Scan(context.Background(), &row))
		require.NotEmpty(t, row.Key, "the chunk is sealed")
		key, err := a.Keys.DataKey(context.Background(), row.Key, false)
		if err != nil {
			require.ErrorIs(t, err, keystore.ErrNoKey)
			continue
		}
		plain, err := keystore.Open(key, row.Sealed, []byte("knowledge_chunks.text\x00"+id))
		require.NoError(t, err)
		out[i] = string(plain)
	}
	return out
}

// copyKeyFile copies e's key store file (keys.json in the data dir) and returns the copy's path.
func copyKeyFile(t *testing.T, e *apptest.Env) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.App.Config.DataDir, "keys.json"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "keys-before.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// nearestIndexed asks the vector index itself, with no space, base or status filter, for the
// chunks nearest to vector, and counts those of ids among them; it also counts chunk rows
// whose stored (derived) embedding is vector byte for byte, the exact scan's index. On SQLite
// that is every sqlite-vec table; on PostgreSQL the pgvector tables when the server has
// them.
func nearestIndexed(t *testing.T, d *bun.DB, vector []byte, ids []string) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	require.NoError(t, d.NewRaw("SELECT count(*) FROM knowledge_chunks WHERE embedding = ? OR id IN (?)", vector, bun.In(ids)).Scan(ctx, &n))
	var tables []string
	q := "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'knowledge_vec_%' AND sql LIKE 'CREATE VIRTUAL TABLE%'"
	if !db.IsSQLite(d) {
		q = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename ~ '^knowledge_vec_[0-9]+$'"
	}
	require.NoError(t, d.NewRaw(q).Scan(ctx, &tables))
	for _, table := range tables {
		var near []string
		var err error
		if db.IsSQLite(d) {
			err = d.NewRaw("SELECT chunk_id FROM "+table+" WHERE embedding MATCH ? AND k = 50", vector).Scan(ctx, &near)
		} else {
			err = d.NewRaw("SELECT chunk_id FROM "+table+" ORDER BY embedding <=> CAST(? AS vector) LIMIT 50", vectorLiteral(vector)).Scan(ctx, &near)
		}
		if err != nil && bytes.Contains([]byte(err.Error()), []byte("dimension")) {
			continue // a table of another vector length
		}
		require.NoError(t, err)
		for _, id := range near {
			for _, want := range ids {
				if id == want {
					n++
				}
			}
		}
	}
	return n
}

// fullTextMatches counts the full-text entries matching word: an FTS5 MATCH on SQLite, a
// tsquery over the search column on PostgreSQL.
func fullTextMatches(t *testing.T, d *bun.DB, word string) int {
	t.Helper()
	n := 0
	q := "SELECT count(*) FROM knowledge_chunks_fts WHERE knowledge_chunks_fts MATCH ?"
	arg := `"` + word + `"`
	if !db.IsSQLite(d) {
		q, arg = "SELECT count(*) FROM knowledge_chunks WHERE search @@ to_tsquery('simple', ?) OR heading_search @@ to_tsquery('simple', ?)", word
		require.NoError(t, d.NewRaw(q, arg, arg).Scan(context.Background(), &n))
		return n
	}
	require.NoError(t, d.NewRaw(q, arg).Scan(context.Background(), &n))
	return n
}

// mcpClient connects the MCP SDK's client to url with key.
func mcpClient(t *testing.T, url, key string) *mcp.ClientSession {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "auditor", Version: "1"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:             url + "/mcp",
		HTTPClient:           &http.Client{Transport: bearerKey{key: key}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() }) // the test is over; a close error changes nothing
	return cs
}

// bearerKey adds the key's Authorization header to every request.
type bearerKey struct{ key string }

func (b bearerKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// vectorLiteral is a little-endian float32 blob as pgvector's text form "[x,y,...]".
func vectorLiteral(b []byte) string {
	parts := make([]string, 0, len(b)/4)
	for i := 0; i+4 <= len(b); i += 4 {
		parts = append(parts, strconv.FormatFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))), 'g', -1, 32))
	}
	return "[" + strings.Join(parts, ",") + "]"
}
