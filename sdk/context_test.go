package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
)

// refundDocs are the knowledge documents of the context tests.
var refundDocs = []devserver.Document{
	{SourceURI: "kb://policies/refunds", Title: "Refunds", Version: "2026-01", Format: "markdown",
		Text: "# Refunds\n\nA refund goes back to the original card within five business days. Store credit is issued at once when the customer prefers it."},
	{SourceURI: "kb://policies/shipping", Title: "Shipping", Version: "2026-02", Format: "markdown",
		Text: "# Shipping\n\nStandard parcels arrive in three to seven days. Express delivery arrives the next day when ordered before noon."},
}

// TestContextCall: the context call answers the block (equal to GET block's text for the same
// shape) and the fenced evidence within one budget; it is cached per request body like the
// block: the same body twice is one request, another query another, and after the period a
// 304; a note another client writes shows up after the period.
func TestContextCall(t *testing.T) {
	srv := devserver.Shared(t)
	kb := srv.KnowledgeBase(t, "context-handbook", refundDocs...)
	proxy := srv.Counter(t)
	key := srv.Key(t, "context-bot", devserver.AllScopes...)
	clk := newClock()
	c := cachingClient(t, proxy, key, clk)
	writer := directClient(t, srv, key)
	ctx := context.Background()
	remember(t, writer, "Offer store credit first", "refund")
	req := sdk.ContextRequest{Task: &sdk.ContextTask{ID: "task-1", ObjectTypes: []string{"refund"}}, MaxTokens: 1500,
		Knowledge: &sdk.ContextKnowledge{KBs: []string{kb}, Query: "refund to the card", TopK: 2}}

	a, err := c.Context(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Enabled || !strings.Contains(a.SystemBlock, "Offer store credit first") || !strings.Contains(a.Context, "original card") ||
		len(a.ChunkIDs) == 0 || len(a.NoteIDs) != 1 || a.Tokens.Total == 0 || a.Tokens.Total > 1500 || a.ETag == "" || a.KnowledgeMode == "" {
		t.Fatalf("context %+v", a)
	}
	block, err := directClient(t, srv, key).Block(ctx, sdk.BlockOptions{Tags: []string{"refund"}})
	if err != nil {
		t.Fatal(err)
	}
	if block.Text != a.SystemBlock {
		t.Fatalf("system block %q differs from the block %q", a.SystemBlock, block.Text)
	}
	again, err := c.Context(ctx, req)
	if err != nil || !again.Fresh || !again.NotModified || again.Context != a.Context || again.ETag != a.ETag {
		t.Fatalf("same request inside the period: %+v %v", again, err)
	}
	other := req
	other.Knowledge = &sdk.ContextKnowledge{KBs: []string{kb}, Query: "express delivery", TopK: 2}
	o, err := c.Context(ctx, other)
	if err != nil || o.Fresh || !strings.Contains(o.Context, "Express delivery") {
		t.Fatalf("another query: %+v %v", o, err)
	}
	expectRequests(t, proxy, "POST /v1/context 200", "POST /v1/context 200")

	remember(t, writer, "Refunds above the limit need a supervisor", "refund")
	clk.Advance(30 * time.Second)
	if again, err = c.Context(ctx, req); err != nil || !again.Fresh || strings.Contains(again.SystemBlock, "supervisor") {
		t.Fatalf("inside the period: %+v %v", again, err)
	}
	clk.Advance(31 * time.Second)
	if again, err = c.Context(ctx, req); err != nil || again.Fresh || again.NotModified || !strings.Contains(again.SystemBlock, "supervisor") {
		t.Fatalf("after the period: %+v %v", again, err)
	}
	clk.Advance(61 * time.Second)
	if again, err = c.Context(ctx, req); err != nil || again.Fresh || !again.NotModified || !strings.Contains(again.SystemBlock, "supervisor") {
		t.Fatalf("after another period: %+v %v", again, err)
	}
	expectRequests(t, proxy, "POST /v1/context 200 if-none-match", "POST /v1/context 304 if-none-match")
}

// TestContextRefusals: a refused context call is an *Error naming the member, and it is not
// cached.
func TestContextRefusals(t *testing.T) {
	srv := devserver.Shared(t)
	proxy := srv.Counter(t)
	c := cachingClient(t, proxy, srv.Key(t, "context-refused-bot", devserver.AllScopes...), newClock())
	for range 2 {
		_, err := c.Context(context.Background(), sdk.ContextRequest{IncludeAgentMemory: true})
		var ae *sdk.Error
		if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "invalid_member" || !strings.Contains(ae.Message, "include_agent_memory") {
			t.Fatalf("include_agent_memory without a task: %v", err)
		}
	}
	expectRequests(t, proxy, "POST /v1/context 400", "POST /v1/context 400")
}

// TestSystemPrompt: the spec's order (instructions, block, context), a blank line between
// parts, empty parts skipped, the others byte for byte.
func TestSystemPrompt(t *testing.T) {
	cases := []struct{ instructions, block, context, want string }{
		{"You are Ana.", "<agent_notes>\nn\n</agent_notes>", "<knowledge_context>k</knowledge_context>",
			"You are Ana.\n\n<agent_notes>\nn\n</agent_notes>\n\n<knowledge_context>k</knowledge_context>"},
		{"You are Ana.", "", "ctx", "You are Ana.\n\nctx"},
		{"", "block", "", "block"},
		{"", "", "", ""},
		{"a\n", " b", "", "a\n\n\n b"},
	}
	for _, c := range cases {
		if got := sdk.SystemPrompt(c.instructions, c.block, c.context); got != c.want {
			t.Errorf("SystemPrompt(%q, %q, %q) = %q, want %q", c.instructions, c.block, c.context, got, c.want)
		}
	}
}
