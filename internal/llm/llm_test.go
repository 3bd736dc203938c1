package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
)

func client(t *testing.T, srv *llmtest.Server) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{Host: srv.URL, Model: "distiller", DetectorModel: "detector"})
	require.NoError(t, err)
	return c
}

var turns = []llm.Turn{
	{Speaker: "customer", Text: "I need to return an item, my e-mail is <email>"},
	{Speaker: "agent", Text: "Was the purchase made in the last 90 days?"},
}

func TestDistillGoodAnswer(t *testing.T) {
	srv := llmtest.New(t, llmtest.Note("procedure", "Returns after 90 days", "Check the purchase date first; past 90 days offer to escalate to a manager.", "returns", "orders"))
	p, ok, err := client(t, srv).Distill(context.Background(), turns)
	require.NoError(t, err)
	require.True(t, ok, "got none, want a proposal")
	require.Equal(t, llm.Proposal{Kind: "procedure", Title: "Returns after 90 days",
		Body: "Check the purchase date first; past 90 days offer to escalate to a manager.", Tags: []string{"returns", "orders"}}, p)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	req := reqs[0]
	require.Equal(t, "distiller", req.Model)
	require.NotNil(t, req.Stream)
	require.False(t, *req.Stream, "want a non-streaming request")
	var schema map[string]any
	require.NoError(t, json.Unmarshal(req.Format, &schema), "format must be a JSON schema, got %s", req.Format)
	require.Equal(t, "object", schema["type"])
	props := schema["properties"].(map[string]any)
	for _, k := range []string{"kind", "title", "body", "tags", "none"} {
		require.Contains(t, props, k)
	}
	require.Len(t, req.Messages, 2)
	require.Contains(t, req.Messages[0].Content, "NEVER include customer data")
	require.Contains(t, req.Messages[0].Content, "reusable")
	require.Contains(t, req.Messages[1].Content, "customer: I need to return an item, my e-mail is <email>")
}

func TestDistillNone(t *testing.T) {
	srv := llmtest.New(t, llmtest.None)
	_, ok, err := client(t, srv).Distill(context.Background(), turns)
	require.NoError(t, err)
	require.False(t, ok, "got a proposal, want none")
}

func TestDistillBadAnswers(t *testing.T) {
	cases := []struct {
		name string
		ans  llmtest.Answer
	}{
		{"empty", llmtest.Answer{Content: ""}},
		{"blank", llmtest.Answer{Content: "  \n"}},
		{"empty object", llmtest.Answer{Content: "{}"}},
		{"truncated json", llmtest.Answer{Content: `{"kind": "procedure", "title": "Ret`}},
		{"cut at length", llmtest.Answer{Content: `{"none": true}`, DoneReason: "length"}},
		{"not json", llmtest.Answer{Content: "Sure! Here is a note."}},
		{"unknown member", llmtest.Answer{Content: `{"kind":"procedure","title":"t","body":"b","tags":[],"customer":"x"}`}},
		{"unknown kind", llmtest.Note("recipe", "t", "b")},
		{"missing body", llmtest.Answer{Content: `{"kind":"procedure","title":"t"}`}},
		{"title too long", llmtest.Note("procedure", strings.Repeat("t", 121), "b")},
		{"body too long", llmtest.Note("procedure", "t", strings.Repeat("b", 2001))},
		{"upper-case tag", llmtest.Note("procedure", "t", "b", "Returns")},
		{"nine tags", llmtest.Note("procedure", "t", "b", "a", "b", "c", "d", "e", "f", "g", "h", "i")},
		{"none and a note", llmtest.Answer{Content: `{"none":true,"kind":"procedure","title":"t","body":"b"}`}},
		{"wrong type", llmtest.Answer{Content: `{"kind":"procedure","title":7,"body":"b"}`}},
		{"array", llmtest.Answer{Content: `[]`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, tc.ans)
			_, ok, err := client(t, srv).Distill(context.Background(), turns)
			require.False(t, ok)
			require.ErrorIs(t, err, llm.ErrBadAnswer, "got %v, want ErrBadAnswer", err)
			require.NotContains(t, err.Error(), "Ret", "the error must not carry the answer's text")
		})
	}
}

// TestDistillRefusesDeepAnswers: an answer nested beyond strictjson.MaxBodyDepth is refused by
// the linear depth scan before any parse (issue 11 §1), with no text of the answer.
func TestDistillRefusesDeepAnswers(t *testing.T) {
	deep := `{"kind":"procedure","title":"Ret","body":"b","tags":` + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + `}`
	srv := llmtest.New(t, llmtest.Answer{Content: deep})
	_, ok, err := client(t, srv).Distill(context.Background(), turns)
	require.False(t, ok)
	require.ErrorIs(t, err, llm.ErrBadAnswer)
	require.Contains(t, err.Error(), "deeper than 64 levels")
	require.NotContains(t, err.Error(), "Ret")
}

func TestDistillUnavailable(t *testing.T) {
	srv := llmtest.New(t, llmtest.Answer{Status: http.StatusServiceUnavailable})
	_, _, err := client(t, srv).Distill(context.Background(), turns)
	require.ErrorIs(t, err, llm.ErrUnavailable)

	srv.Close()
	_, _, err = client(t, srv).Distill(context.Background(), turns)
	require.ErrorIs(t, err, llm.ErrUnavailable, "got %v for a closed server", err)
	require.False(t, errors.Is(err, llm.ErrBadAnswer))
}

func TestDetectKinds(t *testing.T) {
	srv := llmtest.New(t, llmtest.Answer{Content: `{"kinds": ["phone", "email", "email"]}`})
	kinds, err := client(t, srv).DetectKinds(context.Background(), "write to a@b.co or call 555")
	require.NoError(t, err)
	require.Equal(t, []string{"email", "phone"}, kinds)
	req := srv.Requests()[0]
	require.Equal(t, "detector", req.Model)
	require.Equal(t, "write to a@b.co or call 555", req.Messages[1].Content)

	srv.Script(llmtest.Answer{Content: `{"kinds": []}`})
	kinds, err = client(t, srv).DetectKinds(context.Background(), "Acme Corp in Lisbon")
	require.NoError(t, err)
	require.Empty(t, kinds)

	for _, bad := range []string{"{}", `{"kinds": ["secret"]}`, `{"kinds": "email"}`, `{"kinds": [`} {
		srv.Script(llmtest.Answer{Content: bad})
		_, err = client(t, srv).DetectKinds(context.Background(), "x")
		require.ErrorIs(t, err, llm.ErrBadAnswer, "answer %s: got %v", bad, err)
	}
}

func TestNewRefusesBadHost(t *testing.T) {
	_, err := llm.New(llm.Config{Host: "127.0.0.1:11434", Model: "m"})
	require.Error(t, err)
	_, err = llm.New(llm.Config{Host: "http://127.0.0.1:11434"})
	require.Error(t, err)
}
