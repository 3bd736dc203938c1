package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
	"github.com/agentmemory/agentmemory/workflows"
)

// knowledgeRig is the API over one database with a worker on its own task queue (the
// package's Temporal dev server) and the knowledge store's embedder on a fake /api/embed.
type knowledgeRig struct {
	*apptest.Env
	embed *llmtest.EmbedServer
	kb    string
}

func newKnowledgeRig(t *testing.T, engine string) *knowledgeRig {
	if testing.Short() {
		t.Skip("needs the Temporal dev server")
	}
	tq := fmt.Sprintf("test-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
	r := &knowledgeRig{embed: llmtest.NewEmbed(t)}
	r.Env = apptest.New(t, engine, func(d *api.Deps) { d.Workflows, d.TaskQueue = temporalClient, tq })
	emb, err := llm.New(llm.Config{Host: r.embed.URL, Model: "unused"})
	require.NoError(t, err)
	r.App.Knowledge.Embedder = emb
	w := newWorker(t, r.Env, app.WorkerOptions{TaskQueue: tq, NoReconcile: true})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	r.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
	r.kb = r.MustDo(http.StatusCreated, "POST", "/v1/knowledge", r.AdminKey, map[string]any{"name": "handbook", "settings": map[string]any{"embedding_model": "stand-in", "readers": map[string]any{"space": true}}}).JSON(t)["id"].(string)
	return r
}

// submit posts a document and waits (bounded) until its status is want.
func (r *knowledgeRig) submit(t *testing.T, key string, body map[string]any, want string) map[string]any {
	t.Helper()
	resp := r.MustDo(http.StatusAccepted, "POST", "/v1/knowledge/"+r.kb+"/documents", key, body).JSON(t)
	id := resp["document_id"].(string)
	deadline := time.Now().Add(60 * time.Second)
	for {
		d := r.MustDo(http.StatusOK, "GET", "/v1/knowledge/"+r.kb+"/documents/"+id, key, nil).JSON(t)
		if d["status"] == want {
			return d
		}
		require.Contains(t, []any{knowledge.StatusPending}, d["status"], "document ended %v (%v)", d["status"], d["reason"])
		require.True(t, time.Now().Before(deadline), "document %s still %v", id, d["status"])
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKnowledgeIngestWorkflow: POST /v1/knowledge/{kb}/documents starts IngestWorkflow on the
// dev server; the document becomes ready and retrievable with provenance; a new version
// supersedes it; the workflow's history holds ids, never the document's text.
func TestKnowledgeIngestWorkflow(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			r := newKnowledgeRig(t, engine)
			writer := r.AgentKey("loader-bot", "acme", "knowledge:write")
			reader := r.AgentKey("support-bot", "acme", "knowledge:read")
			v1 := r.submit(t, writer, map[string]any{"text": "Gift cards are mailed to the customer's mailing address within seven days.", "source_uri": "kb://gift-cards", "title": "Gift cards", "version": "v1"}, knowledge.StatusReady)
			require.Equal(t, "stand-in", v1["embedding_model"])
			got := r.MustDo(http.StatusOK, "POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": "when does the gift card arrive", "kbs": []string{r.kb}}).JSON(t)
			require.Equal(t, "hybrid", got["mode"])
			top := got["chunks"].([]any)[0].(map[string]any)
			require.Equal(t, v1["id"], top["document_id"])
			require.Equal(t, "v1", top["version"])
			require.Contains(t, got["context"], `source="kb://gift-cards"`)

			v2 := r.submit(t, writer, map[string]any{"text": "Gift cards are sent by e-mail within one hour.", "source_uri": "kb://gift-cards", "title": "Gift cards", "version": "v2"}, knowledge.StatusReady)
			old := r.MustDo(http.StatusOK, "GET", "/v1/knowledge/"+r.kb+"/documents/"+v1["id"].(string), reader, nil).JSON(t)
			require.Equal(t, knowledge.StatusSuperseded, old["status"])
			got = r.MustDo(http.StatusOK, "POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": "gift card mailing address seven days", "kbs": []string{r.kb}}).JSON(t)
			for _, c := range got["chunks"].([]any) {
				require.Equal(t, v2["id"], c.(map[string]any)["document_id"])
			}

			// The history carries ids and counts only (payloads decoded from protojson's base64).
			ctx := context.Background()
			raw, payloads := ingestHistory(t, v2["id"].(string))
			require.Contains(t, payloads, v2["id"].(string))
			for _, text := range []string{"e-mail within one hour", "Gift cards are", "kb://gift-cards"} {
				require.NotContains(t, payloads, text)
				require.NotContains(t, raw, text)
			}
			if engine == "sqlite" && os.Getenv("AGENTMEMORY_RECORD_INGEST") != "" {
				require.NoError(t, os.WriteFile(filepath.Join("..", "workflows", "testdata", "knowledge_ingest.json"), []byte(raw), 0o644))
			}
			var res knowledge.IngestResult
			require.NoError(t, temporalClient.GetWorkflow(ctx, workflows.IngestWorkflowID(v2["id"].(string)), "").Get(ctx, &res))
			require.Equal(t, knowledge.StatusReady, res.Status)
			require.Equal(t, 256, res.Dims)
		})
	}
}

// ingestHistory is IngestWorkflow's history of document id as protojson, and its payloads
// decoded and joined.
func ingestHistory(t *testing.T, id string) (string, string) {
	t.Helper()
	return workflowHistory(t, workflows.IngestWorkflowID(id))
}

// TestKnowledgeIngestWaitsForTheEmbedder: while the embedder is down the document stays
// pending and the workflow retries; when it answers again the document becomes ready.
func TestKnowledgeIngestWaitsForTheEmbedder(t *testing.T) {
	r := newKnowledgeRig(t, "sqlite")
	r.embed.SetDown(true)
	resp := r.MustDo(http.StatusAccepted, "POST", "/v1/knowledge/"+r.kb+"/documents", r.AdminKey, map[string]any{"text": "Boots are waterproof.", "source_uri": "kb://boots"}).JSON(t)
	id := resp["document_id"].(string)
	require.Eventually(t, func() bool { return len(r.embed.Requests()) >= 2 }, 30*time.Second, 20*time.Millisecond, "the ingest retries")
	d := r.MustDo(http.StatusOK, "GET", "/v1/knowledge/"+r.kb+"/documents/"+id, r.AdminKey, nil).JSON(t)
	require.Equal(t, knowledge.StatusPending, d["status"])
	r.embed.SetDown(false)
	require.Eventually(t, func() bool {
		d := r.MustDo(http.StatusOK, "GET", "/v1/knowledge/"+r.kb+"/documents/"+id, r.AdminKey, nil).JSON(t)
		return d["status"] == knowledge.StatusReady
	}, 60*time.Second, 50*time.Millisecond)
}
