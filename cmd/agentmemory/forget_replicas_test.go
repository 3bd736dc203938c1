package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/workflows"
)

// forgetOnB is issue 29 §2 on TestReplicasAsProcesses's two `serve` processes (a = A, b = B):
// A writes and serves (and caches) a working state, a subject's state, a note in its prompt
// block and a knowledge document; each is then deleted or erased through B, and A's very next
// request answers without it: the state at version 0 (and a write after it lands above every
// version the deleted state had, so A's remembered row is never applied), the block a 200
// without the note (not a 304 of A's cached block), the note 404, the document's chunks out
// of retrieval.
func forgetOnB(t *testing.T, a, b client2, tc client.Client, admin string,
	mint func(string) (string, string), person func(string, ...string) string,
	sdkClient func(string, string) *sdk.Client, features map[string]any) {
	ctx := context.Background()
	features["knowledge"] = map[string]any{"enabled": true}
	a.must(http.StatusOK, "PUT", "/v1/documents/features", admin, features)
	_, key := mint("replica-bot")
	scope := map[string]any{"kind": "conversation", "id": "c-forget"}
	readA := func(scope map[string]any) map[string]any {
		return a.must(http.StatusOK, "POST", "/v1/agent-state/read", key, map[string]any{"scope": scope})
	}

	// A working state deleted by its agent through B.
	var last int64
	for _, step := range []string{"greet", "sizes", "checkout"} {
		m := a.must(http.StatusOK, "PUT", "/v1/agent-state", key, map[string]any{"scope": scope, "body": map[string]any{"step": step}})
		last = number(t, m["version"])
	}
	require.Equal(t, "checkout", readA(scope)["body"].(map[string]any)["step"])
	del := b.must(http.StatusOK, "POST", "/v1/agent-state/delete", key, map[string]any{"scope": scope})
	require.Equal(t, json.Number("1"), del["deleted"])
	got := readA(scope)
	require.Equal(t, json.Number("0"), got["version"], "A still serves a state deleted on B: %v", got)
	require.Empty(t, got["body"])
	again := a.must(http.StatusOK, "PUT", "/v1/agent-state", key, map[string]any{"scope": scope, "body": map[string]any{"step": "greet"}})
	require.Greater(t, number(t, again["version"]), last, "a write on A after the delete restarted the version")
	status, _, err := a.do("PUT", "/v1/agent-state", key, map[string]any{"scope": scope, "mode": "cas", "if_version": last, "body": map[string]any{"step": "done"}})
	require.NoError(t, err)
	require.Equal(t, http.StatusPreconditionFailed, status, "a CAS holding the deleted state's version matched the new one")

	// A customer's state erased through B.
	const handle = "email:bruno.lima@example.com"
	integ, dpo := person("integrator", "integration"), person("dpo", "compliance")
	a.must(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{"name": "Bruno Lima", "handles": []string{handle}})
	subjScope := map[string]any{"kind": "conversation", "id": "c-bruno"}
	a.must(http.StatusOK, "PUT", "/v1/agent-state", key, map[string]any{"scope": subjScope, "subject": handle, "body": map[string]any{"tier": "gold"}})
	require.Equal(t, "gold", readA(subjScope)["body"].(map[string]any)["tier"])
	erasureID := b.must(http.StatusAccepted, "POST", "/v1/erasures", dpo, map[string]any{"subject": handle})["erasure_id"].(string)
	waitWorkflow(t, tc, workflows.ErasureWorkflowID(erasureID))
	require.Equal(t, "completed", b.must(http.StatusOK, "GET", "/v1/erasures/"+erasureID, dpo, nil)["status"])
	require.Equal(t, json.Number("0"), readA(subjScope)["version"], "A still serves a state erased through B")

	// A note in A's cached prompt block, hard-deleted through B.
	_, notesKey := mint("forget-notes")
	onA := sdkClient(a.base, notesKey)
	kept, err := onA.Remember(ctx, sdk.Note{Kind: "procedure", Title: "Greeting", Body: "Greet the customer by the store's name.", Tags: []string{"forget"}}, "")
	require.NoError(t, err)
	gone, err := onA.Remember(ctx, sdk.Note{Kind: "procedure", Title: "Wombatflex returns", Body: "Wombatflex items return within 30 days.", Tags: []string{"forget"}}, "")
	require.NoError(t, err)
	block, err := onA.Block(ctx, sdk.BlockOptions{Tags: []string{"forget"}})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{kept.Note.ID, gone.Note.ID}, block.NoteIDs)
	cached, err := onA.Block(ctx, sdk.BlockOptions{Tags: []string{"forget"}})
	require.NoError(t, err)
	require.True(t, cached.NotModified, "A's second read of an unchanged block is a 304 from its memory")
	b.must(http.StatusOK, "DELETE", "/v1/agent-memory/notes/"+gone.Note.ID, admin, nil)
	after, err := onA.Block(ctx, sdk.BlockOptions{Tags: []string{"forget"}})
	require.NoError(t, err)
	require.False(t, after.NotModified, "A answered 304 for a block holding a note deleted on B")
	require.Equal(t, []string{kept.Note.ID}, after.NoteIDs)
	require.NotContains(t, after.Text, "Wombatflex")
	a.must(http.StatusNotFound, "GET", "/v1/agent-memory/notes/"+gone.Note.ID, notesKey, nil)
	found := a.must(http.StatusOK, "GET", "/v1/agent-memory/search?q=wombatflex", notesKey, nil)
	require.Empty(t, found["notes"], "A's search still finds a note deleted on B")

	// A knowledge document retrieved on A, deleted through B.
	kb := a.must(http.StatusCreated, "POST", "/v1/knowledge", admin, map[string]any{"name": "forget-handbook",
		"settings": map[string]any{"embedding_model": "nomic-embed-text", "readers": map[string]any{"agents": []string{"kb-reader"}}}})["id"].(string)
	keyWith := func(agent, scope string) string {
		return a.must(http.StatusCreated, "POST", "/v1/keys", admin, map[string]any{"kind": "agent", "agent": agent, "vendor": "acme", "scopes": []string{scope}})["key"].(string)
	}
	writer, reader := keyWith("kb-writer", "knowledge:write"), keyWith("kb-reader", "knowledge:read")
	docID := a.must(http.StatusAccepted, "POST", "/v1/knowledge/"+kb+"/documents", writer, map[string]any{
		"source_uri": "kb://numbats", "title": "Numbat policy", "text": "Numbatcare orders ship within two days of payment."})["document_id"].(string)
	waitFor(t, time.Minute, "the document is indexed", func() bool {
		return a.must(http.StatusOK, "GET", "/v1/knowledge/"+kb+"/documents/"+docID, writer, nil)["status"] == "ready"
	})
	retrieveA := func() []string {
		r := a.must(http.StatusOK, "POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": "numbatcare orders ship", "kbs": []string{kb}})
		var docs []string
		for _, c := range r["chunks"].([]any) {
			docs = append(docs, c.(map[string]any)["document_id"].(string))
		}
		return docs
	}
	require.Contains(t, retrieveA(), docID)
	require.Equal(t, "deleted", b.must(http.StatusOK, "DELETE", "/v1/knowledge/"+kb+"/documents/"+docID, writer, nil)["status"])
	require.NotContains(t, retrieveA(), docID, "A still retrieves a document deleted on B")
}

// number returns a JSON number member as an int64.
func number(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	require.True(t, ok, "%v is not a number", v)
	i, err := n.Int64()
	require.NoError(t, err)
	return i
}

// waitFor polls cond every 50 ms until it holds, failing after limit (a hang guard, not a
// timing assertion).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "%s: not within %s", what, limit)
		time.Sleep(50 * time.Millisecond)
	}
}
