package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
)

// kbBridgeEnv is two spaces with knowledge on: A (e's space) holds the bases handbook (one
// ready document) and secrets (one ready document), each granted to A's own agents only; B
// has the agents triage and other (knowledge:read). Each space has two security people.
type kbBridgeEnv struct {
	a, b                     govSpace
	secA1, secA2             string
	secB1, secB2             string
	triage, otherAgent, bPer string
	handbook, secrets        string // A's base ids
}

func newKBBridgeEnv(t *testing.T, e *apptest.Env) kbBridgeEnv {
	emb, err := llm.New(llm.Config{Host: llmtest.NewEmbed(t).URL, Model: "unused"})
	require.NoError(t, err)
	e.App.Knowledge.Embedder = emb
	e.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
	bID, bAdmin := e.NewSpace("reader", true)
	e.MustDo(http.StatusOK, "PUT", "/v1/documents/features", bAdmin, map[string]any{"knowledge": map[string]any{"enabled": true}})
	a, b := govSpace{e: e, id: e.SpaceID, admin: e.AdminKey}, govSpace{e: e, id: bID, admin: bAdmin}
	ctx := context.Background()
	admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
	require.NoError(t, err)
	base := func(name, text string) string {
		// lexical_only: a replica without an embedder still answers by full text.
		kb, err := e.App.Knowledge.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: name,
			Settings: knowledge.Settings{EmbedderDown: knowledge.EmbedderDownLexicalOnly, Readers: &knowledge.Readers{Agents: []string{"alice"}}}})
		require.NoError(t, err)
		d, _, err := e.App.Knowledge.Submit(ctx, admin, kb.ID, knowledge.SubmitRequest{Text: text, SourceURI: "kb://" + name})
		require.NoError(t, err)
		_, err = e.App.Knowledge.Ingest(ctx, d.ID)
		require.NoError(t, err)
		return kb.ID
	}
	agent := func(name string) string {
		r := e.MustDo(http.StatusCreated, "POST", "/v1/keys", bAdmin, map[string]any{"kind": "agent", "agent": name, "vendor": "acme", "scopes": []string{"knowledge:read", "knowledge:write"}})
		return r.JSON(t)["key"].(string)
	}
	return kbBridgeEnv{
		a: a, b: b,
		secA1: a.person("Sol", "security"), secA2: a.person("Ana", "security"),
		secB1: b.person("Rui", "security"), secB2: b.person("Eva", "security"),
		triage: agent("triage"), otherAgent: agent("other"), bPer: b.person("Ivy", "admin"),
		handbook: base("handbook", "Refunds to a card take five working days."),
		secrets:  base("secrets", "Refunds above the limit need the finance lead."),
	}
}

// terms is the bridge from A to B letting agents retrieve from handbook.
func (k kbBridgeEnv) terms(id string, agents ...string) map[string]any {
	return map[string]any{"id": id, "from": k.a.id, "to": k.b.id, "agents": agents, "knowledge_bases": []string{"handbook"}}
}

func bridgedRetrieve(e *apptest.Env, key, space string, kbs ...string) apptest.Response {
	return e.Do("POST", "/v1/knowledge/retrieve", key, map[string]any{"query": "refunds", "kbs": kbs, "space": space})
}

// Issue 31, SH-3: a bridge lets B's named agents retrieve from A's listed knowledge bases
// (by name) only once both sides approved the same terms; until then, and for any base or
// agent it does not list, the answer is byte for byte that of a base that does not exist.
// It is read only, receipted in both chains, and ends on the next request on every replica
// when either side removes it.
func TestBridgeKnowledgeRetrieval(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		k := newKBBridgeEnv(t, e)
		absent := e.Do("POST", "/v1/knowledge/retrieve", k.triage, map[string]any{"query": "refunds", "kbs": []string{"kb_nosuchbase"}})
		requireError(t, absent, http.StatusNotFound, "knowledge_base_not_found")
		requireAbsent(t, absent, bridgedRetrieve(e, k.triage, "sp_nosuchspace", "handbook"))
		requireAbsent(t, absent, bridgedRetrieve(e, k.triage, k.a.id, "handbook"))
		requireAbsent(t, absent, bridgedRetrieve(e, k.triage, k.a.id, k.handbook)) // an id is not a name

		// A's side alone, then B's under other terms: no bridge.
		id := approveBridge(t, e, k.secA1, k.secA2, k.terms("", "triage"))
		requireAbsent(t, absent, bridgedRetrieve(e, k.triage, k.a.id, "handbook"))
		approveBridge(t, e, k.secB1, k.secB2, k.terms(id, "triage", "other"))
		requireAbsent(t, absent, bridgedRetrieve(e, k.triage, k.a.id, "handbook"))
		e.MustDo(http.StatusOK, "DELETE", "/v1/bridges/"+id, k.secB1, nil)

		// Both sides, the same terms: triage retrieves handbook, and only what is listed.
		approveBridge(t, e, k.secB1, k.secB2, k.terms(id, "triage"))
		require.Equal(t, "active", bridgeStatus(t, e, k.secA1, id))
		r := bridgedRetrieve(e, k.triage, k.a.id, "handbook", "handbook")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		chunks := r.JSON(t)["chunks"].([]any)
		require.Len(t, chunks, 1, "got %v, want handbook's one chunk", chunks)
		require.Equal(t, k.handbook, chunks[0].(map[string]any)["kb_id"])
		require.Contains(t, chunks[0].(map[string]any)["text"], "five working days")
		requireAbsent(t, absent, bridgedRetrieve(e, k.otherAgent, k.a.id, "handbook"))
		requireAbsent(t, absent, bridgedRetrieve(e, k.triage, k.a.id, "secrets"))
		requireAbsent(t, absent, bridgedRetrieve(e, k.triage, k.a.id, "handbook", "secrets"))
		// B's own retrieval never reaches A's bases, bridge or not.
		requireAbsent(t, absent, e.Do("POST", "/v1/knowledge/retrieve", k.triage, map[string]any{"query": "refunds", "kbs": []string{k.handbook}}))
		// Bad input is the same 400 with or without a bridge (a malformed run included); a
		// person key is refused.
		requireError(t, e.Do("POST", "/v1/knowledge/retrieve", k.triage, map[string]any{"query": " ", "kbs": []string{"handbook"}, "space": k.a.id}), http.StatusBadRequest, "invalid_member")
		requireError(t, e.Do("POST", "/v1/knowledge/retrieve", k.triage, map[string]any{"query": " ", "kbs": []string{"secrets"}, "space": k.a.id}), http.StatusBadRequest, "invalid_member")
		requireError(t, e.Do("POST", "/v1/knowledge/retrieve", k.triage, map[string]any{"query": "refunds", "kbs": []string{"secrets"}, "space": k.a.id, "run": map[string]any{"id": ""}}), http.StatusBadRequest, "invalid_member")
		requireError(t, e.Do("POST", "/v1/knowledge/retrieve", k.bPer, map[string]any{"query": "refunds", "kbs": []string{"handbook"}, "space": k.a.id}), http.StatusForbidden, "role_required")

		// Read only: no route of documents takes a space, and A's base keeps its one document.
		requireError(t, e.Do("POST", "/v1/knowledge/"+k.handbook+"/documents", k.triage, map[string]any{"text": "x", "source_uri": "kb://x", "space": k.a.id}), http.StatusBadRequest, "unknown_member")
		docs := e.MustDo(http.StatusOK, "GET", "/v1/knowledge/"+k.handbook+"/documents", e.AdminKey, nil).JSON(t)["documents"].([]any)
		require.Len(t, docs, 1, "got %v", docs)
		docID := docs[0].(map[string]any)["id"].(string)
		missing := e.Do("DELETE", "/v1/knowledge/"+k.handbook+"/documents/doc_nosuchdoc", k.triage, nil)
		require.Equal(t, http.StatusNotFound, missing.Status, "%s", missing.Body)
		requireAbsent(t, missing, e.Do("DELETE", "/v1/knowledge/"+k.handbook+"/documents/"+docID, k.triage, nil))
		require.Len(t, e.MustDo(http.StatusOK, "GET", "/v1/knowledge/"+k.handbook+"/documents", e.AdminKey, nil).JSON(t)["documents"], 1, "A's document is kept")

		// Receipted in both chains: each side's approval and the retrieval.
		requireKBBridgeReceipts(t, e, k.a.admin, knowledge.ActionRetrieveBridged, id)
		requireKBBridgeReceipts(t, e, k.b.admin, "retrieve", id)

		// Revoked from B's side on one replica: refused on the next request on both.
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		require.Equal(t, http.StatusOK, bridgedRetrieve(replica, k.triage, k.a.id, "handbook").Status)
		replica.MustDo(http.StatusOK, "DELETE", "/v1/bridges/"+id, k.secB2, nil)
		requireAbsent(t, absent, bridgedRetrieve(e, k.triage, k.a.id, "handbook"))
		requireAbsent(t, absent, bridgedRetrieve(replica, k.triage, k.a.id, "handbook"))

		// Approved again by B, then revoked from A's side.
		approveBridge(t, e, k.secB1, k.secB2, k.terms(id, "triage"))
		require.Equal(t, http.StatusOK, bridgedRetrieve(replica, k.triage, k.a.id, "handbook").Status)
		e.MustDo(http.StatusOK, "DELETE", "/v1/bridges/"+id, k.secA2, nil)
		requireAbsent(t, absent, bridgedRetrieve(e, k.triage, k.a.id, "handbook"))
		requireAbsent(t, absent, bridgedRetrieve(replica, k.triage, k.a.id, "handbook"))
	})
}

// Issue 31: a bridged retrieval takes a run of the reader's space as the unbridged one does:
// it draws the tokens it delivers from the run (the answer's run figures, a context cut to
// what is left, nothing delivered once the run is spent), and the reader's receipt names the
// run and its tokens; the source's receipt does not (the run is the reader's own).
func TestBridgeKnowledgeRetrievalInRun(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		k := newKBBridgeEnv(t, e)
		id := approveBridge(t, e, k.secA1, k.secA2, k.terms("", "triage"))
		approveBridge(t, e, k.secB1, k.secB2, k.terms(id, "triage"))
		inRun := func(budget int) map[string]any {
			body := map[string]any{"query": "refunds", "kbs": []string{"handbook"}, "space": k.a.id, "run": map[string]any{"id": "r1", "budget_tokens": budget}}
			return e.MustDo(http.StatusOK, "POST", "/v1/knowledge/retrieve", k.triage, body).JSON(t)
		}
		full := e.MustDo(http.StatusOK, "POST", "/v1/knowledge/retrieve", k.triage, map[string]any{"query": "refunds", "kbs": []string{"handbook"}, "space": k.a.id}).JSON(t)
		tokens := int(num(t, full["context_tokens"]))
		require.Positive(t, tokens)

		budget := tokens + tokens/2
		got := inRun(budget)
		require.Len(t, got["chunks"], 1, "%v", got)
		run := got["run"].(map[string]any)
		require.Equal(t, "r1", run["id"])
		require.Equal(t, int64(tokens), num(t, run["used_tokens"]))
		require.Equal(t, int64(budget-tokens), num(t, run["remaining_tokens"]))
		require.Equal(t, false, run["cut"])

		// What is left no longer holds the chunk: nothing is delivered, the run is untouched.
		spent := inRun(budget)
		require.Empty(t, spent["chunks"], "%v", spent)
		require.Equal(t, true, spent["budget_exhausted"], "%v", spent)
		require.Equal(t, int64(tokens), num(t, spent["run"].(map[string]any)["used_tokens"]))

		// The reader's chain names the run (one delivering retrieval in it); the source's never.
		var named int
		for _, rc := range spaceReceipts(t, e, k.b.admin) {
			if rc.Kind == "knowledge" && rc.Action == "retrieve" && rc.Detail["run_id"] != nil {
				require.Equal(t, "r1", rc.Detail["run_id"])
				require.Equal(t, float64(tokens), rc.Detail["run_tokens"])
				named++
			}
		}
		require.Equal(t, 1, named)
		for _, rc := range spaceReceipts(t, e, k.a.admin) {
			require.Nil(t, rc.Detail["run_id"], "the source's chain never names the reader's run: %v", rc.Detail)
		}
	})
}

// requireKBBridgeReceipts checks the chain key reads has a knowledge receipt of action
// naming bridge id, and verifies.
func requireKBBridgeReceipts(t *testing.T, e *apptest.Env, key, action, id string) {
	t.Helper()
	n := 0
	for _, rc := range spaceReceipts(t, e, key) {
		if rc.Kind == "knowledge" && rc.Action == action {
			if bs, ok := rc.Detail["bridges"].([]any); ok && len(bs) == 1 && bs[0] == id {
				n++
			}
		}
	}
	require.Equal(t, 1, n, "got %d knowledge.%s receipts naming the bridge, want 1", n, action)
	v := e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", key, nil).JSON(t)
	require.Equal(t, true, v["ok"], "verify: %v", v)
}
