package sdktest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
	"github.com/agentmemory/agentmemory/sdk"
)

// TestRetrieve: the SDK's Retrieve against the real API on both databases: ranked chunks with
// their provenance and the fenced context; with the embedder down, a lexical_only base
// answers by full text (Mode says so) and a fail base is ErrUnavailable embedder_unavailable;
// a reader's key cannot be used without knowledge:read.
func TestRetrieve(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		embed := llmtest.NewEmbed(t)
		emb, err := llm.New(llm.Config{Host: embed.URL, Model: "unused"})
		require.NoError(t, err)
		e.App.Knowledge.Embedder = emb
		e.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
		admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
		require.NoError(t, err)
		newBase := func(name string, settings map[string]any) string {
			settings["readers"] = map[string]any{"space": true} // every agent key of the space reads it
			return e.MustDo(http.StatusCreated, "POST", "/v1/knowledge", e.AdminKey, map[string]any{"name": name, "settings": settings}).JSON(t)["id"].(string)
		}
		failing := newBase("handbook", map[string]any{})
		lexical := newBase("handbook-lexical", map[string]any{"embedder_down": "lexical_only"})
		for _, kb := range []string{failing, lexical} {
			for _, req := range []knowledge.SubmitRequest{
				{Text: "Refunds go back to the original card within five business days.", SourceURI: "kb://refunds", Title: "Refunds", Version: "2026-01"},
				{Text: "Express parcels arrive the next day when ordered before noon.", SourceURI: "kb://shipping", Title: "Shipping", Version: "2026-02"},
			} {
				d, _, err := e.App.Knowledge.Submit(ctx, admin, kb, req)
				require.NoError(t, err)
				res, err := e.App.Knowledge.Ingest(ctx, d.ID)
				require.NoError(t, err)
				require.Equal(t, knowledge.StatusReady, res.Status)
			}
		}
		srv := startServer(t, e.Deps)
		reader, err := sdk.New(sdk.Options{BaseURL: srv.url(), Key: e.AgentKey("support-bot", "acme", "knowledge:read"), MaxRetries: -1})
		require.NoError(t, err)

		got, err := reader.Retrieve(ctx, sdk.RetrieveRequest{Query: "refund to my card", KBs: []string{failing}, TopK: 1, MaxTokens: 400})
		require.NoError(t, err)
		require.Equal(t, "hybrid", got.Mode)
		require.Len(t, got.Chunks, 1)
		c := got.Chunks[0]
		require.Equal(t, "Refunds", c.Title)
		require.Equal(t, "kb://refunds", c.SourceURI)
		require.Equal(t, "2026-01", c.Version)
		require.Equal(t, failing, c.KBID)
		require.Equal(t, 0, c.StartByte)
		require.Equal(t, len("Refunds go back to the original card within five business days."), c.EndByte)
		require.NotNil(t, c.VectorScore)
		require.NotNil(t, c.LexicalRank)
		require.True(t, c.InContext)
		require.True(t, strings.HasPrefix(got.Context, knowledge.ContextOpen+"\n"+knowledge.ContextHeader))
		require.Contains(t, got.Context, `source="kb://refunds"`)
		require.LessOrEqual(t, got.ContextTokens, 400)

		embed.SetDown(true)
		got, err = reader.Retrieve(ctx, sdk.RetrieveRequest{Query: "express parcels", KBs: []string{lexical}})
		require.NoError(t, err)
		require.Equal(t, "lexical_only", got.Mode)
		require.NotEmpty(t, got.Chunks)
		require.Equal(t, "Shipping", got.Chunks[0].Title)
		require.Nil(t, got.Chunks[0].VectorScore)
		_, err = reader.Retrieve(ctx, sdk.RetrieveRequest{Query: "express parcels", KBs: []string{failing}})
		var ae *sdk.Error
		require.True(t, errors.Is(err, sdk.ErrUnavailable), "got %v, want ErrUnavailable", err)
		require.True(t, errors.As(err, &ae))
		require.Equal(t, knowledge.CodeEmbedderDown, ae.Code)

		writer, err := sdk.New(sdk.Options{BaseURL: srv.url(), Key: e.AgentKey("loader-bot", "acme", "knowledge:write")})
		require.NoError(t, err)
		_, err = writer.Retrieve(ctx, sdk.RetrieveRequest{Query: "refund", KBs: []string{lexical}})
		require.True(t, errors.As(err, &ae))
		require.Equal(t, http.StatusForbidden, ae.Status)
		require.Equal(t, "scope_required", ae.Code)
	})
}
