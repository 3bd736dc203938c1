package knowledge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/knowledge/knowledgetest"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// rig is the real API and store (apptest's app.Build graph) with knowledge on and the
// store's embedder pointed at a fake /api/embed server. Documents are ingested by calling
// the store's Ingest directly (the workflow's activity); worker/knowledge_integration_test.go
// runs the same through IngestWorkflow on a Temporal dev server.
type rig struct {
	*apptest.Env
	embed *llmtest.EmbedServer
	admin auth.Principal
	ks    *knowledge.Service
	// path is the store's vector path (knowledge.PathSQLiteVec, PathPgvector or PathExact).
	path string
}

// newRig builds a rig on engine ("sqlite", "postgres": pgvector when the server has it, or
// "postgres-exact": PostgreSQL with the exact-scan fallback forced, as on a server without
// pgvector).
func newRig(t *testing.T, engine string) *rig {
	pg, forceExact := strings.CutSuffix(engine, "-exact")
	r := &rig{Env: apptest.New(t, pg), embed: llmtest.NewEmbed(t)}
	c, err := llm.New(llm.Config{Host: r.embed.URL, Model: "unused"})
	require.NoError(t, err)
	r.ks = r.App.Knowledge
	if forceExact {
		r.ks.ForceExactScan()
	}
	vp, err := r.ks.VectorPath(context.Background())
	require.NoError(t, err)
	r.path = vp.Name
	r.ks.Embedder = c
	r.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
	r.admin, err = auth.Authenticate(context.Background(), r.DB, r.AdminKey)
	require.NoError(t, err)
	return r
}

// each runs fn on a fresh rig per database engine and vector path: SQLite (sqlite-vec),
// PostgreSQL as the server offers it (pgvector here when installed, else the exact scan) and
// PostgreSQL with the exact-scan fallback forced.
func each(t *testing.T, fn func(t *testing.T, r *rig)) {
	for _, engine := range []string{"sqlite", "postgres", "postgres-exact"} {
		t.Run(engine, func(t *testing.T) { fn(t, newRig(t, engine)) })
	}
}

// base creates a base; settings without "readers" grant the whole space (the tests of read
// grants set them).
func (r *rig) base(t *testing.T, name string, settings map[string]any) string {
	if settings == nil {
		settings = map[string]any{}
	}
	if _, ok := settings["readers"]; !ok {
		settings["readers"] = map[string]any{"space": true}
	}
	resp := r.MustDo(http.StatusCreated, "POST", "/v1/knowledge", r.AdminKey, map[string]any{"name": name, "settings": settings})
	return resp.JSON(t)["id"].(string)
}

// ingest submits and indexes a document, returning it after ingest.
func (r *rig) ingest(t *testing.T, kb string, req knowledge.SubmitRequest) knowledge.Document {
	t.Helper()
	ctx := context.Background()
	d, _, err := r.ks.Submit(ctx, r.admin, kb, req)
	require.NoError(t, err)
	_, err = r.ks.Ingest(ctx, d.ID)
	require.NoError(t, err)
	d, err = r.ks.GetDocument(ctx, r.admin, kb, d.ID)
	require.NoError(t, err)
	return d
}

func (r *rig) retrieve(t *testing.T, key string, body map[string]any) map[string]any {
	t.Helper()
	return r.MustDo(http.StatusOK, "POST", "/v1/knowledge/retrieve", key, body).JSON(t)
}

func chunksOf(res map[string]any) []map[string]any {
	var out []map[string]any
	for _, c := range res["chunks"].([]any) {
		out = append(out, c.(map[string]any))
	}
	return out
}

func lastReceipt(t *testing.T, r *rig) receipts.Receipt {
	t.Helper()
	all, err := receipts.List(context.Background(), r.DB, r.SpaceID, 0, 100000)
	require.NoError(t, err)
	require.NotEmpty(t, all)
	return all[len(all)-1]
}

// TestABCDProcedures ingests the 55 written ABCD procedures and asks customer questions:
// the procedure that answers each is among the top 5 chunks (hybrid: stand-in hashed
// embeddings fused with full text). The answer carries provenance, a fenced context within
// the budget, and a receipt names the chunks delivered.
func TestABCDProcedures(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres", "postgres-exact"} {
		t.Run(engine, func(t *testing.T) {
			r := newRig(t, engine)
			kb := r.base(t, "procedures", map[string]any{"embedding_model": "stand-in", "chunk_tokens": 200, "chunk_overlap": 30})
			procs := knowledgetest.Procedures(t)
			require.Len(t, procs, 55)
			for _, p := range procs {
				d := r.ingest(t, kb, knowledge.SubmitRequest{Text: p.Text, Format: "markdown", SourceURI: p.URI, Title: p.Title, Version: "2020-abcd"})
				require.Equal(t, knowledge.StatusReady, d.Status, p.Title)
				require.Positive(t, d.Chunks)
				require.Equal(t, "stand-in", d.EmbedModel)
				require.Equal(t, 256, d.Dims)
			}
			for _, req := range r.embed.Requests() {
				require.NotNil(t, req.Truncate)
				require.False(t, *req.Truncate, "no silent truncation")
				require.LessOrEqual(t, len(req.Input), knowledge.EmbedBatch)
			}
			reader := r.AgentKey("support-bot", "acme", "knowledge:read")
			questions := knowledgetest.Questions
			misses := 0
			for _, qa := range questions {
				res := r.retrieve(t, reader, map[string]any{"query": qa.Query, "kbs": []string{kb}, "top_k": 5, "max_tokens": 1500})
				require.Equal(t, knowledge.ModeHybrid, res["mode"])
				var titles []string
				for _, c := range chunksOf(res) {
					titles = append(titles, c["title"].(string))
				}
				if !knowledgetest.Hit(titles, qa.Want) {
					misses++
					t.Logf("miss: %q: want %q, top 5 %v", qa.Query, qa.Want, titles)
				}
			}

			// Measured: 7 of 8 on SQLite (bm25), 8 of 8 on PostgreSQL (ts_rank). The SQLite miss is "shipping status": that procedure's text is about an
			// order looking wrong (the Oracle), not about where a package is; only its title says
			// shipping status, and procedures that talk about shipping rank first.
			t.Logf("recall@5: %d/%d questions (stand-in hashed embedder + full text)", len(questions)-misses, len(questions))
			require.LessOrEqual(t, misses, 1, "recall@5 fell below 7/8")

			// Provenance, the fenced context and its budget, the receipt.
			res := r.retrieve(t, reader, map[string]any{"query": questions[0].Query, "kbs": []string{kb}, "top_k": 3, "max_tokens": 600})
			cs := chunksOf(res)
			require.Len(t, cs, 3)
			ctxText := res["context"].(string)
			require.True(t, strings.HasPrefix(ctxText, knowledge.ContextOpen+"\n"+knowledge.ContextHeader+"\n"))
			require.True(t, strings.HasSuffix(ctxText, knowledge.ContextClose))
			n, err := res["context_tokens"].(json.Number).Int64()
			require.NoError(t, err)
			require.LessOrEqual(t, n, int64(600))
			var ids []string
			for _, c := range cs {
				require.NotEmpty(t, c["document_id"])
				require.Equal(t, "2020-abcd", c["version"])
				require.True(t, strings.HasPrefix(c["source_uri"].(string), "abcd://guidelines/"))
				start, _ := c["start_byte"].(json.Number).Int64()
				end, _ := c["end_byte"].(json.Number).Int64()
				require.Less(t, start, end)
				if c["in_context"].(bool) {
					require.Contains(t, ctxText, fmt.Sprintf(`version="2020-abcd" document="%s" chunk="%s" bytes="%d-%d">`, c["document_id"], c["chunk_id"], start, end))
				}
				ids = append(ids, c["chunk_id"].(string))
			}
			last := lastReceipt(t, r)
			require.Equal(t, "knowledge", last.Kind)
			require.Equal(t, "retrieve", last.Action)
			require.Empty(t, last.ObjectIDs, "the chunk set is named by its manifest (issue 32)")
			require.NotNil(t, last.Manifest)
			require.Equal(t, receipts.ManifestChunks, last.Manifest.Kind)
			require.Equal(t, ids, last.Manifest.IDs())
			require.NotContains(t, fmt.Sprint(last.Detail), "password", "a receipt never holds the query")
		})
	}
}

func receiptsOf(r *rig) ([]receipts.Receipt, error) {
	return receipts.List(context.Background(), r.DB, r.SpaceID, 0, 100000)
}
