package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

const contextPath = "/v1/context"

// contextEnv is a space with agent memory and knowledge on, a views document, notes of
// shop-bot (vendor acme-ai) and a base granted to the vendor holding ingested documents.
type contextEnv struct {
	e                        *apptest.Env
	kb                       string
	refund, order, plain     string
	bot                      string // shop-bot's key with scope context
	writerKey                string
	refundDoc, unrelatedDocs []string
}

func newContextEnv(t *testing.T, e *apptest.Env) contextEnv {
	emb, err := llm.New(llm.Config{Host: llmtest.NewEmbed(t).URL, Model: "unused"})
	require.NoError(t, err)
	e.App.Knowledge.Embedder = emb
	e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}, "knowledge": map[string]any{"enabled": true}})
	e.PutDocument("views", viewsDoc("voice", []string{"refund"}))
	c := contextEnv{e: e, writerKey: e.AgentKey("shop-bot", "acme-ai", "agent_memory", "agent_memory:write"), bot: e.AgentKey("shop-bot", "acme-ai", "context")}
	c.plain = create(e, c.writerKey, note("Greeting", "Greet once, then get to the point."))
	c.order = create(e, c.writerKey, note("Order lookup", "Look the order up by its number before anything else.", "tags", []string{"order"}))
	c.refund = create(e, c.writerKey, note("Refunds", "Refunds go back to the original payment method.", "tags", []string{"refund", "order"}))

	ctx := context.Background()
	admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
	require.NoError(t, err)
	b, err := e.App.Knowledge.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: "handbook", Settings: knowledge.Settings{Readers: &knowledge.Readers{Vendors: []string{"acme-ai"}}}})
	require.NoError(t, err)
	c.kb = b.ID
	ingest := func(text, uri string) string {
		d, _, err := e.App.Knowledge.Submit(ctx, admin, b.ID, knowledge.SubmitRequest{Text: text, SourceURI: uri, Version: "v1"})
		require.NoError(t, err)
		_, err = e.App.Knowledge.Ingest(ctx, d.ID)
		require.NoError(t, err)
		return d.ID
	}
	c.refundDoc = append(c.refundDoc, ingest("Refunds of card payments reach the card within five business days.", "kb://refund-card"))
	c.refundDoc = append(c.refundDoc, ingest("Refunds of boleto payments are paid by bank transfer after the return is checked.", "kb://refund-boleto"))
	for i := range 6 {
		c.unrelatedDocs = append(c.unrelatedDocs, ingest(fmt.Sprintf("Refund policy appendix %d: the warehouse checks each returned parcel, logs its state and photographs the label before any refund is approved by the finance team.", i), fmt.Sprintf("kb://appendix-%d", i)))
	}
	return c
}

// contextReceipts returns the space's context.read receipts.
func contextReceipts(t *testing.T, e *apptest.Env) []receipts.Receipt {
	var out []receipts.Receipt
	for _, r := range spaceReceipts(t, e, e.AdminKey) {
		if r.Action == "context.read" {
			out = append(out, r)
		}
	}
	return out
}

func countActions(t *testing.T, e *apptest.Env, action string) int {
	n := 0
	for _, r := range spaceReceipts(t, e, e.AdminKey) {
		if r.Action == action {
			n++
		}
	}
	return n
}

// CTX-2: the context call answers the block (byte-identical to GET block for the same notes,
// view, tags and budget), the fenced knowledge evidence, then the task section (notes tagged
// with the task's object types) at the end; token counts are the real tokenizer's and the
// total stays within max_tokens; one receipt names every note and chunk delivered (and no
// separate block or retrieval receipt); the same call gives the same bytes and ETag, and
// If-None-Match answers 304 with a receipt saying so.
func TestContextCall(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := newContextEnv(t, e)
		req := map[string]any{"view": "voice", "task": map[string]any{"id": "task-77", "object_types": []string{"order"}},
			"max_tokens": 1500, "include_agent_memory": true, "knowledge": map[string]any{"kbs": []string{c.kb}, "query": "refund card payments"}}
		blocksBefore, retrievesBefore := countActions(t, e, "block.read"), countActions(t, e, "retrieve")
		r := e.MustDo(http.StatusOK, "POST", contextPath, c.bot, req)
		a := r.JSON(t)

		block := e.MustDo(http.StatusOK, "GET", blockPath+"?view=voice&tags=order&max_tokens=300", c.writerKey, nil).JSON(t)
		require.Equal(t, block["text"], a["system_block"], "the system block is the block of the same view, tags and budget")
		require.Equal(t, strs(block["note_ids"]), strs(a["note_ids"]))
		require.Equal(t, []string{c.refund, c.order, c.plain}, strs(a["note_ids"]), "view tag first, then the task's object types, then the rest")

		ctxText := a["context"].(string)
		require.True(t, strings.HasPrefix(ctxText, knowledge.ContextOpen+"\n"+knowledge.ContextHeader), "%q", ctxText)
		require.True(t, strings.HasSuffix(ctxText, notes.BlockClose), "the task section ends the context: %q", ctxText)
		taskStart := strings.LastIndex(ctxText, notes.BlockOpen)
		require.Greater(t, taskStart, strings.Index(ctxText, knowledge.ContextClose), "evidence first, then the task section")
		require.ElementsMatch(t, []string{c.refund, c.order}, strs(a["task_note_ids"]), "only notes tagged with the task's object types")
		require.NotContains(t, ctxText[taskStart:], "Greet once")
		chunks := strs(a["chunk_ids"])
		require.NotEmpty(t, chunks)
		require.Contains(t, ctxText, "within five business days")

		tok := a["tokens"].(map[string]any)
		sys, err := notes.CountTokens(a["system_block"].(string))
		require.NoError(t, err)
		whole, err := notes.CountTokens(ctxText)
		require.NoError(t, err)
		task, err := notes.CountTokens(ctxText[taskStart:])
		require.NoError(t, err)
		require.Equal(t, sys, mustInt(t, tok["system_block"]))
		require.Equal(t, task, mustInt(t, tok["task_notes"]))
		require.LessOrEqual(t, mustInt(t, tok["task_notes"]), notes.TaskSectionTokens)
		require.Positive(t, mustInt(t, tok["knowledge"]))
		require.Equal(t, sys+whole, mustInt(t, tok["total"]), "total counts what is delivered")
		require.LessOrEqual(t, mustInt(t, tok["total"]), 1500)

		// One receipt naming every note and chunk; the call leaves no block or retrieval receipt.
		rc := contextReceipts(t, e)
		require.Len(t, rc, 1)
		require.Equal(t, receipts.KindAgentMemory, rc[0].Kind)
		want := append([]string{c.refund, c.order, c.plain}, chunks...)
		require.ElementsMatch(t, want, rc[0].ObjectIDs, "got %v, want %v", rc[0].ObjectIDs, want)
		require.Equal(t, "task-77", rc[0].Detail["task_id"])
		require.Equal(t, blocksBefore+1, countActions(t, e, "block.read"), "only the GET block above")
		require.Equal(t, retrievesBefore, countActions(t, e, "retrieve"))
		require.NotContains(t, fmt.Sprint(rc[0].Detail), "refund card payments", "the query is never recorded")

		again := e.MustDo(http.StatusOK, "POST", contextPath, c.bot, req)
		require.Equal(t, r.Body, again.Body, "the same notes, documents and request give the same bytes")
		etag := r.Header.Get("ETag")
		require.Equal(t, a["etag"], etag)
		nm := e.Do("POST", contextPath, c.bot, req, "If-None-Match", etag)
		require.Equal(t, http.StatusNotModified, nm.Status)
		require.Empty(t, nm.Body)
		rc = contextReceipts(t, e)
		require.Len(t, rc, 3)
		notModified := 0
		for _, x := range rc {
			if x.Detail["not_modified"] == true {
				notModified++
			}
		}
		require.Equal(t, 1, notModified)

		require.Equal(t, true, e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).JSON(t)["ok"], "the receipt chain verifies")

		// A new note tagged order changes the answer and its ETag.
		create(e, c.writerKey, note("Order states", "An order is open, paid, shipped or closed.", "tags", []string{"order"}))
		changed := e.MustDo(http.StatusOK, "POST", contextPath, c.bot, req)
		require.NotEqual(t, etag, changed.Header.Get("ETag"))
	})
}

// CTX-2: one budget. For every max_tokens the total (system block plus the context as
// delivered) stays within it, the block first, then the task section, then the evidence in
// what is left; the task section never passes 200 tokens.
func TestContextOneBudget(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := newContextEnv(t, e)
		for i := range 8 {
			create(e, c.writerKey, note(fmt.Sprintf("Order rule %d", i), strings.Repeat(fmt.Sprintf("Check the order's state and history before promising anything (rule %d). ", i), 3), "tags", []string{"order"}))
		}
		for _, max := range []int{50, 80, 150, 300, 450, 700, 1200, 4000} {
			a := e.MustDo(http.StatusOK, "POST", contextPath, c.bot, map[string]any{
				"task": map[string]any{"object_types": []string{"order"}}, "max_tokens": max, "block_max_tokens": min(max, 250), "include_agent_memory": true,
				"knowledge": map[string]any{"kbs": []string{c.kb}, "query": "refund parcel warehouse", "top_k": 10},
			}).JSON(t)
			tok := a["tokens"].(map[string]any)
			sys, err := notes.CountTokens(a["system_block"].(string))
			require.NoError(t, err)
			whole, err := notes.CountTokens(a["context"].(string))
			require.NoError(t, err)
			total := mustInt(t, tok["total"])
			require.Equal(t, sys+whole, total, "max %d", max)
			require.LessOrEqual(t, total, max, "max %d: got total %d", max, total)
			require.LessOrEqual(t, mustInt(t, tok["system_block"]), min(max, 250))
			require.LessOrEqual(t, mustInt(t, tok["task_notes"]), notes.TaskSectionTokens, "max %d", max)
			if max >= 1200 {
				require.Greater(t, mustInt(t, tok["task_notes"]), 100, "max %d: the section fills toward 200", max)
				require.NotEmpty(t, strs(a["chunk_ids"]), "max %d", max)
			}
			if max == 4000 {
				ranked := e.MustDo(http.StatusOK, "POST", "/v1/knowledge/retrieve", e.AdminKey, map[string]any{"kbs": []string{c.kb}, "query": "refund parcel warehouse", "top_k": 10, "max_tokens": 8000}).JSON(t)
				require.Len(t, strs(a["chunk_ids"]), len(ranked["chunks"].([]any)), "every ranked chunk fits a large budget")
				for _, id := range strs(a["chunk_ids"]) {
					require.Contains(t, a["context"], id)
				}
			}
			if max <= 80 {
				require.Empty(t, strs(a["chunk_ids"]), "max %d: nothing is left for evidence", max)
			}
		}
	})
}

// CTX-2, AM-10, KN-1: scopes and bad input. Scope context reads all; agent_memory alone
// reads the notes but not knowledge; knowledge:read alone is refused; agent_memory plus
// knowledge:read reads all. Bad input is 400 naming the member and leaves no receipt.
func TestContextScopesAndInput(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := newContextEnv(t, e)
		withKnowledge := map[string]any{"knowledge": map[string]any{"kbs": []string{c.kb}, "query": "refund"}}
		notesOnly := e.AgentKey("shop-bot", "acme-ai", "agent_memory")
		kbOnly := e.AgentKey("shop-bot", "acme-ai", "knowledge:read")
		both := e.AgentKey("shop-bot", "acme-ai", "agent_memory", "knowledge:read")
		e.MustDo(http.StatusOK, "POST", contextPath, notesOnly, map[string]any{})
		requireError(t, e.Do("POST", contextPath, notesOnly, withKnowledge), http.StatusForbidden, "scope_required")
		requireError(t, e.Do("POST", contextPath, kbOnly, withKnowledge), http.StatusForbidden, "scope_required")
		require.NotEmpty(t, strs(e.MustDo(http.StatusOK, "POST", contextPath, both, withKnowledge).JSON(t)["chunk_ids"]))
		before := len(contextReceipts(t, e))

		for _, x := range []struct {
			member string
			body   map[string]any
		}{
			{"view", map[string]any{"view": "nope"}},
			{"max_tokens", map[string]any{"max_tokens": 20000}},
			{"max_tokens", map[string]any{"max_tokens": 10}},
			{"block_max_tokens", map[string]any{"max_tokens": 100, "block_max_tokens": 200}},
			{"include_agent_memory", map[string]any{"include_agent_memory": true}},
			{"task.object_types", map[string]any{"task": map[string]any{"object_types": []string{"Order"}}}},
			{"task.id", map[string]any{"task": map[string]any{"id": strings.Repeat("x", 201)}}},
			{"query", map[string]any{"knowledge": map[string]any{"kbs": []string{c.kb}, "query": ""}}},
		} {
			m := requireError(t, e.Do("POST", contextPath, c.bot, x.body), http.StatusBadRequest, "invalid_member")
			require.Equal(t, x.member, m["member"], "%v: got %v", x.body, m)
		}
		requireError(t, e.Do("POST", contextPath, c.bot, map[string]any{"budget": 1}), http.StatusBadRequest, "unknown_member")
		requireError(t, e.Do("POST", contextPath, c.bot, map[string]any{"knowledge": map[string]any{"kbs": []string{"kb_nope"}, "query": "x"}}), http.StatusNotFound, knowledge.CodeBaseNotFound)
		require.Len(t, contextReceipts(t, e), before, "refused calls leave no receipt")

		// A person reads as an agent with role integration and source_id.
		person := e.PersonKey("Ivo", "integration")
		requireError(t, e.Do("POST", contextPath, person, map[string]any{}), http.StatusBadRequest, "invalid_member")
		p := e.MustDo(http.StatusOK, "POST", contextPath, person, map[string]any{"source_id": "shop-bot"}).JSON(t)
		require.Len(t, strs(p["note_ids"]), 3)

		// Agent memory off: an empty block, enabled false, knowledge still delivered.
		e.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
		off := e.MustDo(http.StatusOK, "POST", contextPath, c.bot, withKnowledge).JSON(t)
		require.Equal(t, false, off["enabled"])
		require.Equal(t, "", off["system_block"])
		require.NotEmpty(t, strs(off["chunk_ids"]))
		require.True(t, slices.Equal([]string{}, strs(off["note_ids"])))
	})
}
