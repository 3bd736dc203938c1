package api_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
	"github.com/agentmemory/agentmemory/internal/logs/logstest"
)

// A start warns when knowledge bases exist whose embedder does not answer (issue 27: after a
// plain restart of a space whose bases used `dev --fake-model`, retrieval answered 503
// embedder_unavailable with nothing in the log). No base, or an embedder that answers: no
// line. The line names the models and the count, never a space or base id.
func TestStartWarnsWhenBasesHaveNoEmbedder(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		srv := llmtest.NewEmbed(t)
		emb, err := llm.New(llm.Config{Host: srv.URL, Model: "unused"})
		require.NoError(t, err)
		e.App.Knowledge.Embedder = emb
		warned := func() string {
			var buf logstest.Buffer
			e.App.Log = slog.New(slog.NewJSONHandler(&buf, nil))
			e.App.WarnUnreachableEmbedders(ctx)
			return buf.String()
		}

		srv.SetDown(true)
		require.Empty(t, warned(), "no base exists: nothing to warn about")

		e.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
		admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
		require.NoError(t, err)
		b, err := e.App.Knowledge.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: "handbook"})
		require.NoError(t, err)
		_, err = e.App.Knowledge.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: "faq", Settings: knowledge.Settings{EmbeddingModel: "other-embed"}})
		require.NoError(t, err)

		srv.SetDown(false)
		require.Empty(t, warned(), "the embedder answers: no warning")

		srv.SetDown(true)
		line := warned()
		require.Equal(t, 1, strings.Count(line, "\n"), "one line: %s", line)
		require.Contains(t, line, `"level":"WARN"`)
		require.Contains(t, line, "embedder does not answer")
		require.Contains(t, line, "--fake-model")
		require.Contains(t, line, `"bases":2`)
		require.Contains(t, line, `"models":"nomic-embed-text,other-embed"`)
		require.NotContains(t, line, e.SpaceID)
		require.NotContains(t, line, b.ID)

		e.App.Knowledge.Embedder = nil // OLLAMA_HOST did not even build a client
		require.Contains(t, warned(), "embedder does not answer")
	})
}
