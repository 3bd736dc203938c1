package sdk_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
)

// bridgedKB is a base of another space (knowledge on) that the shared space's agent reader
// (knowledge:read) may retrieve from once Open is called.
type bridgedKB struct {
	srv      *devserver.Server
	from, to devserver.SpaceRef
	name     string
	reader   string // the reader's agent name
	key      string // the reader's key
}

func newBridgedKB(t *testing.T, srv *devserver.Server, reader string) bridgedKB {
	t.Helper()
	from := srv.NewSpace(t, "kb-bridge-from")
	srv.MustDo(t, "PUT", "/v1/documents/features", from.Admin, map[string]any{"knowledge": map[string]any{"enabled": true}}, nil)
	_, name := srv.KnowledgeBaseIn(t, from.Admin, "partner-handbook", devserver.Document{SourceURI: "kb://partner/refunds", Title: "Refunds",
		Format: "markdown", Text: "# Refunds\n\nPartner refunds are settled within ten days."})
	to := srv.SharedSpace(t)
	reader = name + "-" + reader // unique per test run, as the base's name
	var key struct {
		Key string `json:"key"`
	}
	srv.MustDo(t, "POST", "/v1/keys", to.Admin, map[string]any{"kind": "agent", "agent": reader, "vendor": "sdk-vendor", "scopes": []string{"knowledge:read"}}, &key)
	return bridgedKB{srv: srv, from: from, to: to, name: name, reader: reader, key: key.Key}
}

// Open opens the bridge from the other space to the shared one listing the base and reader.
func (b bridgedKB) Open(t *testing.T) {
	t.Helper()
	b.srv.OpenBridgeTerms(t, b.from, b.to, map[string]any{"agents": []string{b.reader}, "knowledge_bases": []string{b.name}})
}

// TestBridgedRetrieve retrieves from another space's base through a bridge both spaces
// approved, against the real binary: before it, Retrieve with Space is 404
// knowledge_base_not_found, as a base that does not exist; after it, the base's chunk, and in
// a run the run's figures (issue 31).
func TestBridgedRetrieve(t *testing.T) {
	srv := devserver.Shared(t)
	ctx := context.Background()
	b := newBridgedKB(t, srv, "kb-bridge-reader")
	c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: b.key})
	if err != nil {
		t.Fatal(err)
	}
	req := sdk.RetrieveRequest{Query: "partner refunds", KBs: []string{b.name}, Space: b.from.ID}
	var apiErr *sdk.Error
	if _, err := c.Retrieve(ctx, req); !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != "knowledge_base_not_found" {
		t.Fatalf("got %v before the bridge, want 404 knowledge_base_not_found", err)
	}
	b.Open(t)
	res, err := c.Retrieve(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Chunks) != 1 || res.Chunks[0].SourceURI != "kb://partner/refunds" || res.ContextTokens == 0 {
		t.Fatalf("got %+v, want the partner base's one chunk", res)
	}
	req.Run = &sdk.Run{ID: "bridged-run", BudgetTokens: 5000}
	res, err = c.Retrieve(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run == nil || res.Run.ID != "bridged-run" || res.Run.UsedTokens != res.ContextTokens || len(res.Chunks) != 1 {
		t.Fatalf("got %+v (run %+v), want the chunk drawn from the run", res, res.Run)
	}
	if _, err := c.Retrieve(ctx, sdk.RetrieveRequest{Query: "partner refunds", KBs: []string{b.name + "-other"}, Space: b.from.ID}); !errors.As(err, &apiErr) || apiErr.Code != "knowledge_base_not_found" {
		t.Fatalf("got %v for a base the bridge does not list, want knowledge_base_not_found", err)
	}
}
