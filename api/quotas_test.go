package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
	"github.com/agentmemory/agentmemory/internal/quotas"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// quotaFeatures puts a features document with working memory and knowledge on and quotas q.
func quotaFeatures(e *apptest.Env, q map[string]any) {
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}, "knowledge": map[string]any{"enabled": true}, "quotas": q})
}

// usedOf reads a quota's count straight from the database.
func usedOf(t *testing.T, e *apptest.Env, quota, key string) int64 {
	t.Helper()
	n, err := quotas.Used(context.Background(), e.DB, e.SpaceID, quota, key)
	require.NoError(t, err)
	return n
}

// requireQuotaExceeded checks a 409 quota_exceeded answer naming quota and limit.
func requireQuotaExceeded(t *testing.T, r apptest.Response, quota string, limit int) {
	t.Helper()
	require.Equal(t, http.StatusConflict, r.Status, "got %d, want 409: %s", r.Status, r.Body)
	e := r.JSON(t)["error"].(map[string]any)
	require.Equal(t, quotas.CodeExceeded, e["code"])
	require.Equal(t, quota, e["quota"])
	require.Equal(t, fmt.Sprint(limit), fmt.Sprint(e["limit"]))
}

func turnsCount(t *testing.T, e *apptest.Env) int64 {
	t.Helper()
	var n int64
	require.NoError(t, e.DB.NewRaw(`SELECT count(*) FROM turns WHERE space_id = ?`, e.SpaceID).Scan(context.Background(), &n))
	return n
}

// TestTurnQuotasAtTheBoundary (issue 34 §1): a conversation takes turns up to
// turns_per_conversation and the space up to turns_per_space; the turn past either answers
// 409 quota_exceeded naming it, and a batch crossing the limit stores none of its turns.
func TestTurnQuotasAtTheBoundary(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		quotaFeatures(e, map[string]any{"turns_per_conversation": 3, "turns_per_space": 5})
		bot := e.AgentKey("shop-bot", "acme", "context")
		turn := func(conv, text string) map[string]any {
			return map[string]any{"conversation_id": conv, "speaker": "customer", "text": text}
		}
		e.MustDo(http.StatusCreated, "POST", "/v1/turns", bot, map[string]any{"turns": []any{turn("c-1", "a"), turn("c-1", "b")}})
		// A batch of two from 2 to 4 crosses the limit of 3: neither is stored.
		r := e.Do("POST", "/v1/turns", bot, map[string]any{"turns": []any{turn("c-1", "c"), turn("c-1", "d")}})
		requireQuotaExceeded(t, r, quotas.TurnsPerConversation, 3)
		require.Equal(t, int64(2), turnsCount(t, e), "a refused batch stores nothing")
		e.MustDo(http.StatusCreated, "POST", "/v1/turns", bot, turn("c-1", "c")) // exactly the limit
		requireQuotaExceeded(t, e.Do("POST", "/v1/turns", bot, turn("c-1", "d")), quotas.TurnsPerConversation, 3)
		// Another conversation has its own count; the space's limit of 5 still binds.
		e.MustDo(http.StatusCreated, "POST", "/v1/turns", bot, map[string]any{"turns": []any{turn("c-2", "a"), turn("c-2", "b")}})
		requireQuotaExceeded(t, e.Do("POST", "/v1/turns", bot, turn("c-3", "a")), quotas.TurnsPerSpace, 5)
		require.Equal(t, int64(5), turnsCount(t, e))
		require.Equal(t, int64(5), usedOf(t, e, quotas.TurnsPerSpace, ""))
	})
}

// TestTurnQuotaExactAcrossReplicas (issue 34 §1): 20 turns of one conversation sent at once
// through two replicas under turns_per_conversation 7 store exactly 7; the count equals the rows.
func TestTurnQuotaExactAcrossReplicas(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		quotaFeatures(e, map[string]any{"turns_per_conversation": 7})
		replica := &apptest.Env{T: t, Server: newReplica(e)}
		bot := e.AgentKey("shop-bot", "acme", "context")
		got := make([]int, 20)
		var wg sync.WaitGroup
		for i := range got {
			srv := e
			if i%2 == 1 {
				srv = replica
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = srv.Do("POST", "/v1/turns", bot, map[string]any{"conversation_id": "c-1", "speaker": "agent", "text": fmt.Sprintf("turn %d", i)}).Status
			}()
		}
		wg.Wait()
		counts := map[int]int{}
		for _, s := range got {
			counts[s]++
		}
		require.Equal(t, map[int]int{http.StatusCreated: 7, http.StatusConflict: 13}, counts)
		require.Equal(t, int64(7), turnsCount(t, e))
		require.Equal(t, int64(7), usedOf(t, e, quotas.TurnsPerSpace, ""))
	})
}

// TestStateOverQuotaAnswer (issue 34 §1, WM-8's rule over HTTP): a working-memory write past
// a quota answers 200 stored:false reason over_quota with the quota and its limit.
func TestStateOverQuotaAnswer(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		quotaFeatures(e, map[string]any{"states_per_space": 1})
		e.PutDocument("object-types", apptest.ShopBotTypes())
		bot := e.AgentKey("shop-bot", "acme", "agent_state")
		put := func(conv string) apptest.Response {
			return e.Do("PUT", "/v1/agent-state", bot, map[string]any{"scope": map[string]any{"kind": "conversation", "id": conv}, "body": map[string]any{"step": "cart"}})
		}
		require.Equal(t, true, put("c-1").JSON(t)["stored"])
		r := put("c-2")
		require.Equal(t, http.StatusOK, r.Status)
		m := r.JSON(t)
		require.Equal(t, false, m["stored"])
		require.Equal(t, "over_quota", m["reason"])
		require.Equal(t, quotas.StatesPerSpace, m["quota"])
		require.Equal(t, "1", fmt.Sprint(m["limit"]))
	})
}

// TestDocumentQuotaAtTheBoundary (issue 34 §1): a base takes documents up to
// documents_per_base (pending or ready); the next is refused with quota_exceeded (409) naming
// the quota; deleting one frees its place. Chunks past chunks_per_base fail the document's
// ingest with the quota as its reason and store no chunk. (Through the service, as the other
// knowledge tests: the HTTP route also starts the ingest workflow.)
func TestDocumentQuotaAtTheBoundary(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = anyWorkflows{} })
			documentQuota(t, e)
		})
	}
}

func documentQuota(t *testing.T, e *apptest.Env) {
	{
		ctx := context.Background()
		emb, err := llm.New(llm.Config{Host: llmtest.NewEmbed(t).URL, Model: "unused"})
		require.NoError(t, err)
		e.App.Knowledge.Embedder = emb
		quotaFeatures(e, map[string]any{"documents_per_base": 2, "chunks_per_base": 3})
		admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
		require.NoError(t, err)
		b, err := e.App.Knowledge.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: "handbook"})
		require.NoError(t, err)
		submit := func(uri, text string) (knowledge.Document, error) {
			d, _, err := e.App.Knowledge.Submit(ctx, admin, b.ID, knowledge.SubmitRequest{Text: text, Format: "markdown", SourceURI: uri, Title: "T", Version: "v1"})
			return d, err
		}
		small, err := submit("kb://a", "# Refunds\n\nRefunds go to the original card.")
		require.NoError(t, err)
		_, err = submit("kb://b", "# Sizes\n\nSizes run small.")
		require.NoError(t, err)
		_, err = submit("kb://c", "# Returns\n\nThirty days.")
		fe := fault.As(err)
		require.NotNil(t, fe, "got %v, want quota_exceeded", err)
		require.Equal(t, fault.Conflict, fe.Kind)
		require.Equal(t, quotas.CodeExceeded, fe.Code)
		require.Equal(t, quotas.DocumentsPerBase, fe.Details["quota"])
		require.Equal(t, int64(2), fe.Details["limit"])
		require.Equal(t, int64(2), usedOf(t, e, quotas.DocumentsPerBase, b.ID))

		_, err = e.App.Knowledge.DeleteDocument(ctx, admin, b.ID, small.ID)
		require.NoError(t, err)
		require.Equal(t, int64(1), usedOf(t, e, quotas.DocumentsPerBase, b.ID))
		big, err := submit("kb://big", "# Long\n\n"+strings.Repeat("Many words about refunds and returns and sizes. ", 400))
		require.NoError(t, err)
		res, err := e.App.Knowledge.Ingest(ctx, big.ID)
		require.NoError(t, err)
		require.Equal(t, "failed", res.Status, "got %+v", res)
		require.Equal(t, int64(0), usedOf(t, e, quotas.ChunksPerBase, b.ID))
		doc, err := e.App.Knowledge.GetDocument(ctx, admin, b.ID, big.ID)
		require.NoError(t, err)
		require.NotNil(t, doc.Reason)
		require.Equal(t, "quota_exceeded:chunks_per_base", *doc.Reason)
	}
}

// TestDocumentQuotasExactAcrossReplicas (issue 34 §1): two replicas (two servers, each with its
// own pool and services, over one database) take documents and index chunks at once into one
// base, and the counts stay exact: twelve submissions at once (eleven sources, one of them
// sent to both replicas) under documents_per_base 4 store exactly four documents, the twin
// answering the same document as a duplicate; then each stored document is ingested by both
// replicas at once under chunks_per_base 2k+1 (k chunks a document): exactly two are indexed,
// the other two fail with the quota as their reason, and each document has exactly one
// terminal receipt whatever the interleaving. Every count equals its rows, and a recount
// finds nothing to fix.
func TestDocumentQuotasExactAcrossReplicas(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			stub := func(d *api.Deps) { d.Workflows = anyWorkflows{} }
			e := apptest.New(t, engine, stub)
			srv, ra := newReplicaApp(e, stub)
			replica := &apptest.Env{T: t, Server: srv}
			emb, err := llm.New(llm.Config{Host: llmtest.NewEmbed(t).URL, Model: "unused"})
			require.NoError(t, err)
			e.App.Knowledge.Embedder, ra.Knowledge.Embedder = emb, emb
			body := "# Refunds\n\n" + strings.Repeat("Refunds go back to the card the customer paid with, within five days. ", 40)
			chunks, err := knowledge.ChunkText("kd_x", "v1", body, 200, 40)
			require.NoError(t, err)
			k := len(chunks)
			require.Greater(t, k, 1, "a document of several chunks")
			quotaFeatures(e, map[string]any{"documents_per_base": 4, "chunks_per_base": 2*k + 1})
			kb := e.MustDo(http.StatusCreated, "POST", "/v1/knowledge", e.AdminKey, map[string]any{"name": "handbook"}).JSON(t)["id"].(string)

			ids := submitAtOnce(t, e, replica, kb, body)
			require.Len(t, ids, 4, "exactly documents_per_base documents are stored")
			requireCountsExact(t, e, kb, 4)

			statuses := ingestAtOnce(t, ids, e.App.Knowledge, ra.Knowledge)
			ready := 0
			for _, id := range ids {
				doc, err := e.App.Knowledge.GetDocument(context.Background(), adminPrincipal(t, e), kb, id)
				require.NoError(t, err)
				require.Equal(t, doc.Status, statuses[id][0], "both ingests of %s answer its final status", id)
				require.Equal(t, doc.Status, statuses[id][1], "both ingests of %s answer its final status", id)
				switch doc.Status {
				case knowledge.StatusReady:
					ready++
				case knowledge.StatusFailed:
					require.Equal(t, "quota_exceeded:"+quotas.ChunksPerBase, *doc.Reason)
				default:
					t.Fatalf("document %s: got status %s, want ready or failed", id, doc.Status)
				}
			}
			require.Equal(t, 2, ready, "chunks_per_base 2k+1 takes exactly two documents of k chunks")
			require.Equal(t, int64(2*k), usedOf(t, e, quotas.ChunksPerBase, kb))
			requireCountsExact(t, e, kb, 2) // a failed document leaves documents_per_base
			requireOneEnding(t, e, ids)
		})
	}
}

// adminPrincipal authenticates e's admin key.
func adminPrincipal(t *testing.T, e *apptest.Env) auth.Principal {
	t.Helper()
	p, err := auth.Authenticate(context.Background(), e.DB, e.AdminKey)
	require.NoError(t, err)
	return p
}

// submitAtOnce posts twelve documents to base kb at once, alternating between a and b: eleven
// sources, the first of them twice (once through each replica). It checks that each answer is
// 202 or 409 quota_exceeded, that a duplicate names the document its twin stored, and returns
// the ids of the documents stored.
func submitAtOnce(t *testing.T, a, b *apptest.Env, kb, body string) []string {
	t.Helper()
	got := make([]apptest.Response, 40)
	var wg sync.WaitGroup
	for i := range got {
		srv, src := a, i
		if i%2 == 1 {
			srv = b
		}
		if i == len(got)-1 {
			src = 0 // the twin of submission 0, through the other replica
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = srv.Do("POST", "/v1/knowledge/"+kb+"/documents", a.AdminKey, map[string]any{
				"text": body, "format": "markdown", "source_uri": fmt.Sprintf("kb://doc-%d", src), "title": "Refunds", "version": "v1"})
		}()
	}
	wg.Wait()
	stored := map[string]bool{}
	var dupes []string
	for i, r := range got {
		if r.Status == http.StatusConflict {
			requireQuotaExceeded(t, r, quotas.DocumentsPerBase, 4)
			continue
		}
		require.Equal(t, http.StatusAccepted, r.Status, "submission %d: got %d, want 202 or 409: %s", i, r.Status, r.Body)
		m := r.JSON(t)
		if m["duplicate"] == true {
			dupes = append(dupes, m["document_id"].(string))
			continue
		}
		require.False(t, stored[m["document_id"].(string)])
		stored[m["document_id"].(string)] = true
	}
	if s0, s11 := got[0].Status, got[len(got)-1].Status; s0 == http.StatusAccepted && s11 == http.StatusAccepted {
		require.Len(t, dupes, 1, "of the twins one stores, the other answers it as a duplicate")
	} else {
		require.Empty(t, dupes)
	}
	for _, d := range dupes {
		require.True(t, stored[d], "a duplicate answers the document its twin stored")
	}
	ids := make([]string, 0, len(stored))
	for id := range stored {
		ids = append(ids, id)
	}
	return ids
}

// ingestAtOnce ingests each document of ids twice at once, once through each service (two
// replicas' workers running the same activity), and returns the two statuses of each.
func ingestAtOnce(t *testing.T, ids []string, a, b *knowledge.Service) map[string][2]string {
	t.Helper()
	type answer struct {
		id, status string
		i          int
		err        error
	}
	out := make(chan answer, 2*len(ids))
	var wg sync.WaitGroup
	for _, id := range ids {
		for i, svc := range []*knowledge.Service{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := svc.Ingest(context.Background(), id)
				out <- answer{id: id, status: res.Status, i: i, err: err}
			}()
		}
	}
	wg.Wait()
	close(out)
	statuses := map[string][2]string{}
	for r := range out {
		require.NoError(t, r.err, "ingest of %s", r.id)
		s := statuses[r.id]
		s[r.i] = r.status
		statuses[r.id] = s
	}
	return statuses
}

// requireCountsExact checks base kb's document and chunk counters against the rows (docs
// documents pending or ready), and that a recount finds nothing to fix in e's space.
func requireCountsExact(t *testing.T, e *apptest.Env, kb string, docs int64) {
	t.Helper()
	ctx := context.Background()
	var rowsDocs, rowsChunks int64
	require.NoError(t, e.DB.NewRaw(`SELECT count(*) FROM knowledge_documents WHERE kb_id = ? AND status IN ('pending', 'ready')`, kb).Scan(ctx, &rowsDocs))
	require.NoError(t, e.DB.NewRaw(`SELECT count(*) FROM knowledge_chunks WHERE kb_id = ?`, kb).Scan(ctx, &rowsChunks))
	require.Equal(t, docs, rowsDocs)
	require.Equal(t, rowsDocs, usedOf(t, e, quotas.DocumentsPerBase, kb), "documents_per_base counts the rows")
	require.Equal(t, rowsChunks, usedOf(t, e, quotas.ChunksPerBase, kb), "chunks_per_base counts the rows")
	rep, err := quotas.Recount(ctx, e.DB)
	require.NoError(t, err)
	for _, f := range rep.Fixed {
		require.NotEqual(t, e.SpaceID, f.SpaceID, "a recount fixed %+v: the counter had drifted", f)
	}
}

// requireOneEnding checks that each document of ids has exactly one terminal receipt
// (document.index naming it, or document.failed / document.refused), however many ingests ran.
func requireOneEnding(t *testing.T, e *apptest.Env, ids []string) {
	t.Helper()
	rs, err := receipts.List(context.Background(), e.DB, e.SpaceID, 0, 10000)
	require.NoError(t, err)
	endings := map[string]int{}
	for _, r := range rs {
		switch r.Action {
		case "document.index":
			endings[fmt.Sprint(r.Detail["document_id"])]++
		case "document.failed", "document.refused":
			for _, id := range r.ObjectIDs {
				endings[id]++
			}
		}
	}
	for _, id := range ids {
		require.Equal(t, 1, endings[id], "document %s: got %d terminal receipts, want 1", id, endings[id])
	}
}
