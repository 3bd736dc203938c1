package llm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/hashembed"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
)

// Embed sends one batch to /api/embed with truncation off and returns one vector per text;
// the fake's vectors put similar texts nearer than unrelated ones.
func TestEmbed(t *testing.T) {
	srv := llmtest.NewEmbed(t)
	c, err := llm.New(llm.Config{Host: srv.URL, Model: "distiller"})
	require.NoError(t, err)
	texts := []string{"refund to the original card", "refunds go to the original credit card", "reset your password"}
	vs, err := c.Embed(context.Background(), "nomic-embed-text", texts)
	require.NoError(t, err)
	require.Len(t, vs, 3)
	for i, v := range vs {
		require.Len(t, v, hashembed.Dims)
		require.Equal(t, hashembed.Vector(texts[i]), v)
	}
	dot := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	require.Greater(t, dot(vs[0], vs[1]), dot(vs[0], vs[2]))
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "nomic-embed-text", reqs[0].Model)
	require.Equal(t, texts, reqs[0].Input)
	require.NotNil(t, reqs[0].Truncate)
	require.False(t, *reqs[0].Truncate)

	srv.SetDown(true)
	_, err = c.Embed(context.Background(), "nomic-embed-text", texts)
	require.True(t, errors.Is(err, llm.ErrUnavailable), "%v", err)
	out, err := c.Embed(context.Background(), "m", nil)
	require.NoError(t, err)
	require.Empty(t, out)
}
