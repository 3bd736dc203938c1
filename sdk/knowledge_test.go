package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/agentmemory/agentmemory/sdk"
)

// TestRetrieveSendsAndDecodes: Retrieve posts the request's members (filters passed through
// as an object, zero members left out) and decodes the ranked chunks with their provenance.
func TestRetrieveSendsAndDecodes(t *testing.T) {
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v1/knowledge/retrieve" || r.Header.Get("Authorization") != "Bearer k" {
			t.Errorf("got %s %s (%q), want POST /v1/knowledge/retrieve with the key", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			t.Errorf("body %s: %v", data, err)
		}
		got = append(got, body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"mode":"hybrid","context":"<knowledge_context>x</knowledge_context>","context_tokens":42,"chunks":[
			{"chunk_id":"kc_1","document_id":"kd_1","kb_id":"kb_1","source_uri":"kb://refunds","title":"Refunds","version":"v2",
			 "start_byte":0,"end_byte":57,"score":0.032787,"vector_score":0.81,"vector_rank":1,"lexical_rank":null,"text":"Refunds go to store credit.","in_context":true}]}`))
	}))
	defer srv.Close()
	c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := c.Retrieve(ctx, sdk.RetrieveRequest{Query: "refund to card?", KBs: []string{"kb_1"}, TopK: 3, MaxTokens: 500, MinScore: 0.2,
		Filters: map[string]any{"source_uri": []string{"kb://refunds"}, "tags": map[string]any{"any": []string{"orders"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Retrieve(ctx, sdk.RetrieveRequest{Query: "refund", KBs: []string{"kb_1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Retrieve(ctx, sdk.RetrieveRequest{Query: "refund", KBs: []string{"refunds"}, Space: "sp_other"}); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"query": "refund to card?", "kbs": []any{"kb_1"}, "top_k": 3.0, "max_tokens": 500.0, "min_score": 0.2,
			"filters": map[string]any{"source_uri": []any{"kb://refunds"}, "tags": map[string]any{"any": []any{"orders"}}}},
		{"query": "refund", "kbs": []any{"kb_1"}},
		{"query": "refund", "kbs": []any{"refunds"}, "space": "sp_other"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("requests\n got %v\nwant %v", got, want)
	}
	if res.Mode != "hybrid" || res.ContextTokens != 42 || res.Context != "<knowledge_context>x</knowledge_context>" || len(res.Chunks) != 1 {
		t.Fatalf("got %+v", res)
	}
	ch := res.Chunks[0]
	if ch.DocumentID != "kd_1" || ch.SourceURI != "kb://refunds" || ch.Version != "v2" || ch.EndByte != 57 || !ch.InContext ||
		ch.VectorScore == nil || *ch.VectorScore != 0.81 || ch.VectorRank == nil || *ch.VectorRank != 1 || ch.LexicalRank != nil {
		t.Fatalf("chunk %+v", ch)
	}
}

// TestRetrieveErrors: the service's refusals are *Error with their code; 503
// embedder_unavailable is ErrUnavailable.
func TestRetrieveErrors(t *testing.T) {
	answers := map[string]struct {
		status int
		body   string
	}{
		"scope":    {http.StatusForbidden, `{"error":{"code":"scope_required","message":"this key lacks scope knowledge:read"}}`},
		"embedder": {http.StatusServiceUnavailable, `{"error":{"code":"embedder_unavailable","message":"the embedding model did not answer; retry later"}}`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Query string `json:"query"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		a := answers[body.Query]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	defer srv.Close()
	c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: "k", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Retrieve(context.Background(), sdk.RetrieveRequest{Query: "scope", KBs: []string{"kb_1"}})
	var ae *sdk.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || ae.Code != "scope_required" {
		t.Fatalf("got %v, want 403 scope_required", err)
	}
	_, err = c.Retrieve(context.Background(), sdk.RetrieveRequest{Query: "embedder", KBs: []string{"kb_1"}})
	if !errors.Is(err, sdk.ErrUnavailable) || !errors.As(err, &ae) || ae.Code != "embedder_unavailable" {
		t.Fatalf("got %v, want ErrUnavailable embedder_unavailable", err)
	}
}
