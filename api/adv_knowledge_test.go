package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
)

// TestAdvKnowledgeBadInput (adversarial): malformed retrieval requests are a clear 4xx, never
// a 500.
func TestAdvKnowledgeBadInput(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		emb, err := llm.New(llm.Config{Host: llmtest.NewEmbed(t).URL, Model: "unused"})
		require.NoError(t, err)
		e.App.Knowledge.Embedder = emb
		e.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
		reader := e.AgentKey("support-bot", "acme-ai", "knowledge:read")
		ctx := context.Background()
		admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
		require.NoError(t, err)
		b, err := e.App.Knowledge.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: "handbook", Settings: knowledge.Settings{Readers: &knowledge.Readers{Vendors: []string{"acme-ai"}}}})
		require.NoError(t, err)
		d, _, err := e.App.Knowledge.Submit(ctx, admin, b.ID, knowledge.SubmitRequest{Text: "Gift cards never expire.", SourceURI: "kb://gift", Version: "v1"})
		require.NoError(t, err)
		_, err = e.App.Knowledge.Ingest(ctx, d.ID)
		require.NoError(t, err)

		many := make([]string, 5000)
		for i := range many {
			many[i] = b.ID
		}
		longWord := strings.Repeat("ḁ", 1000)
		cases := []map[string]any{
			{"query": "gift", "kbs": []string{b.ID}, "filters": map[string]any{"document_ids": "x"}},
			{"query": "gift", "kbs": []string{b.ID}, "filters": map[string]any{"document_ids": []any{1, 2}}},
			{"query": "gift", "kbs": []string{b.ID}, "filters": map[string]any{"version": 3}},
			{"query": "gift", "kbs": []string{b.ID}, "filters": "nope"},
			{"query": "gift", "kbs": []string{b.ID}, "filters": map[string]any{"tags": []string{"a"}}},
			{"query": "gift", "kbs": many},
			{"query": "gift", "kbs": []string{""}},
			{"query": "gift", "kbs": []string{strings.Repeat("k", 5000)}},
			{"query": "gift", "kbs": []string{b.ID}, "top_k": -1},
			{"query": "gift", "kbs": []string{b.ID}, "top_k": 1e12},
			{"query": "gift", "kbs": []string{b.ID}, "max_tokens": 99999999999},
			{"query": "gift", "kbs": []string{b.ID}, "min_score": 2},
			{"query": "gift", "kbs": []string{b.ID}, "filters": map[string]any{"document_ids": []string{strings.Repeat("x", 101)}}},
			{"query": "gift", "kbs": []string{b.ID}, "filters": map[string]any{"source_uri_prefix": strings.Repeat("\u00e9", 600)}},
			{"query": "gift", "kbs": []string{b.ID}, "filters": map[string]any{"title": strings.Repeat("t", 100000)}},
			{"query": "gift\x00cards", "kbs": []string{b.ID}},
			{"query": "gift", "kbs": []string{b.ID + "\x00"}},
			{"query": "gift", "kbs": []string{b.ID}, "filters": map[string]any{"document_ids": []string{"a\x00b"}}},
			{"query": "gift", "kbs": []string{b.ID}, "filters": map[string]any{"source_uri_prefix": "kb\x00"}},
		}
		for i, c := range cases {
			r := e.Do("POST", "/v1/knowledge/retrieve", reader, c)
			require.Less(t, r.Status, 500, "case %d: %s", i, r.Body)
			t.Logf("case %d: %d %s", i, r.Status, truncate(string(r.Body)))
		}
		for i, q := range []string{longWord, strings.Repeat("ab ", 333), "!!!", "\"*", "a OR b NEAR(c) AND", "x:* | y & !z"} {
			r := e.Do("POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": q, "kbs": []string{b.ID}})
			require.Less(t, r.Status, 500, "query %d: %s", i, r.Body)
			t.Logf("query %d: %d", i, r.Status)
		}
		for i, path := range []string{
			fmt.Sprintf("/v1/knowledge/%s/documents?status=%s", b.ID, strings.Repeat("s", 3000)),
			fmt.Sprintf("/v1/knowledge/%s/documents/%s", b.ID, strings.Repeat("d", 3000)),
			fmt.Sprintf("/v1/knowledge/%s/documents/%%00", b.ID),
			"/v1/knowledge/%00/documents",
			fmt.Sprintf("/v1/knowledge/%s/documents?status=%%00", b.ID),
		} {
			r := e.Do("GET", path, reader, nil)
			require.Less(t, r.Status, 500, "path %d: %s", i, r.Body)
			t.Logf("path %d: %d", i, r.Status)
		}
	})
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}
