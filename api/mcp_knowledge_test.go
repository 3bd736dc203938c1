package api_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
)

// search_knowledge is listed only with the feature on and scope knowledge:read, answers
// ranked chunks with a fenced context, and cannot reach another space's base.
func TestMCPSearchKnowledge(t *testing.T) {
	e := apptest.New(t, "sqlite")
	url := serveAPI(t, e)
	emb, err := llm.New(llm.Config{Host: llmtest.NewEmbed(t).URL, Model: "unused"})
	require.NoError(t, err)
	e.App.Knowledge.Embedder = emb
	reader := e.AgentKey("support-bot", "acme-ai", "knowledge:read")
	writer := e.AgentKey("loader", "acme-ai", "knowledge:write")
	require.Equal(t, []string{}, toolNames(t, mcpSession(t, url, reader)), "feature off")

	e.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
	require.Equal(t, []string{api.ToolSearchKnowledge}, toolNames(t, mcpSession(t, url, reader)))
	require.Equal(t, []string{}, toolNames(t, mcpSession(t, url, writer)), "writing is not reading")

	ctx := context.Background()
	admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
	require.NoError(t, err)
	b, err := e.App.Knowledge.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: "handbook", Settings: knowledge.Settings{Readers: &knowledge.Readers{Vendors: []string{"acme-ai"}}}})
	require.NoError(t, err)
	// A base granted to no agent: search_knowledge neither searches it by default nor when named.
	private, err := e.App.Knowledge.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: "board"})
	require.NoError(t, err)
	pd, _, err := e.App.Knowledge.Submit(ctx, admin, private.ID, knowledge.SubmitRequest{Text: "Gift cards budget for the board only.", SourceURI: "kb://board"})
	require.NoError(t, err)
	_, err = e.App.Knowledge.Ingest(ctx, pd.ID)
	require.NoError(t, err)
	d, _, err := e.App.Knowledge.Submit(ctx, admin, b.ID, knowledge.SubmitRequest{Text: "Gift cards never expire.", SourceURI: "kb://gift", Version: "v1"})
	require.NoError(t, err)
	_, err = e.App.Knowledge.Ingest(ctx, d.ID)
	require.NoError(t, err)

	cs := mcpSession(t, url, reader)
	isErr, out := callTool(t, cs, api.ToolSearchKnowledge, map[string]any{"query": "do gift cards expire"})
	require.False(t, isErr, "%v", out)
	chunks := out["chunks"].([]any)
	require.Len(t, chunks, 1)
	require.Equal(t, d.ID, chunks[0].(map[string]any)["document_id"])
	require.Contains(t, out["context"], knowledge.ContextHeader)
	isErr, out = callTool(t, cs, api.ToolSearchKnowledge, map[string]any{"query": "do gift cards expire", "filters": map[string]any{"version": "v2"}})
	require.False(t, isErr, "%v", out)
	require.Empty(t, out["chunks"], "filters narrow the search")
	isErr, out = callTool(t, cs, api.ToolSearchKnowledge, map[string]any{"query": "do gift cards expire", "filters": map[string]any{"document_ids": []string{d.ID, pd.ID}}})
	require.False(t, isErr, "%v", out)
	require.Len(t, out["chunks"], 1, "filters never reach a base not granted")
	isErr, out = callTool(t, cs, api.ToolSearchKnowledge, map[string]any{"query": "gift", "kbs": []string{private.ID}})
	require.True(t, isErr)
	require.Equal(t, knowledge.CodeBaseNotFound, out["error"].(map[string]any)["code"])

	_, otherAdmin := e.NewSpace("other", true)
	e.MustDo(200, "PUT", "/v1/documents/features", otherAdmin, map[string]any{"knowledge": map[string]any{"enabled": true}})
	theirs := e.MustDo(201, "POST", "/v1/knowledge", otherAdmin, map[string]any{"name": "secret"}).JSON(t)["id"].(string)
	isErr, out = callTool(t, cs, api.ToolSearchKnowledge, map[string]any{"query": "gift", "kbs": []string{theirs}})
	require.True(t, isErr)
	require.Equal(t, knowledge.CodeBaseNotFound, out["error"].(map[string]any)["code"])
}

// Issue 31: search_knowledge takes space (another space's id) and retrieves through a bridge as
// POST /v1/knowledge/retrieve does: without an active bridge the answer is a base that does not
// exist; with one, the bridged base's chunks, in a run when one is named; with space, kbs has
// no default (the REST 400 naming kbs).
func TestMCPSearchKnowledgeBridged(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		k := newKBBridgeEnv(t, e)
		cs := mcpSession(t, serveAPI(t, e), k.triage)
		args := map[string]any{"query": "refunds", "kbs": []string{"handbook"}, "space": k.a.id}
		isErr, out := callTool(t, cs, api.ToolSearchKnowledge, args)
		require.True(t, isErr, "%v", out)
		require.Equal(t, knowledge.CodeBaseNotFound, out["error"].(map[string]any)["code"], "no bridge yet")

		id := approveBridge(t, e, k.secA1, k.secA2, k.terms("", "triage"))
		approveBridge(t, e, k.secB1, k.secB2, k.terms(id, "triage"))
		isErr, out = callTool(t, cs, api.ToolSearchKnowledge, args)
		require.False(t, isErr, "%v", out)
		chunks := out["chunks"].([]any)
		require.Len(t, chunks, 1, "%v", out)
		require.Equal(t, k.handbook, chunks[0].(map[string]any)["kb_id"])

		args["run"] = map[string]any{"id": "mcp-run", "budget_tokens": 5000}
		isErr, out = callTool(t, cs, api.ToolSearchKnowledge, args)
		require.False(t, isErr, "%v", out)
		require.Equal(t, "mcp-run", out["run"].(map[string]any)["id"], "%v", out)

		isErr, out = callTool(t, cs, api.ToolSearchKnowledge, map[string]any{"query": "refunds", "space": k.a.id})
		require.True(t, isErr, "%v", out)
		require.Equal(t, "invalid_member", out["error"].(map[string]any)["code"], "%v", out)
		isErr, out = callTool(t, cs, api.ToolSearchKnowledge, map[string]any{"query": "refunds", "kbs": []string{"secrets"}, "space": k.a.id})
		require.True(t, isErr)
		require.Equal(t, knowledge.CodeBaseNotFound, out["error"].(map[string]any)["code"], "a base the bridge does not list")
	})
}
