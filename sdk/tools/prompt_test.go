package tools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
	"github.com/agentmemory/agentmemory/sdk/tools"
)

// inOrder fails t unless each part occurs in s after the previous one.
func inOrder(t *testing.T, s string, parts ...string) {
	t.Helper()
	at := 0
	for _, p := range parts {
		i := strings.Index(s[at:], p)
		if i < 0 {
			t.Fatalf("prompt lacks %q after position %d:\n%s", p, at, s)
		}
		at += i + len(p)
	}
}

// TestPromptPlacesMemory: the system prompt is the instructions, the notes block, the
// knowledge evidence of the latest user message (before_call) and the customer's context, in
// that order, from one context call that the client's cache answers again without a request.
func TestPromptPlacesMemory(t *testing.T) {
	srv := devserver.Shared(t)
	kb := srv.KnowledgeBase(t, "prompt-handbook", docs...)
	proxy := srv.Counter(t)
	key := srv.Key(t, "prompt-bot", devserver.AllScopes...)
	c := counted(t, proxy, key)
	ctx := context.Background()
	if _, err := client(t, srv.URL, key).Remember(ctx, sdk.Note{Kind: "procedure", Title: "Offer store credit first", Body: "Store credit settles at once; a card refund takes days.", Tags: []string{"refund"}}, ""); err != nil {
		t.Fatal(err)
	}
	kit := newKit(t, c, tools.Options{Knowledge: tools.KnowledgeBeforeCall, KnowledgeBases: []string{kb}, MaxTokens: 1200})
	proxy.Take()
	turn := tools.Turn{Instructions: "You are the store's assistant.", UserMessage: "Can the refund go back to my card?", CustomerContext: "customer: tier gold"}
	p, err := kit.Prompt(ctx, turn)
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, p.System, "You are the store's assistant.\n\n<agent_notes>", "Offer store credit first", "</agent_notes>\n\ncustomer: tier gold\n\n", "original card")
	if p.Context == nil || len(p.Context.ChunkIDs) == 0 || p.Context.Tokens.Total > 1200 {
		t.Fatalf("context %+v", p.Context)
	}
	if again, err := kit.Prompt(ctx, turn); err != nil || again.System != p.System || !again.Context.Fresh {
		t.Fatalf("the same turn again: %+v %v", again, err)
	}
	if reqs := proxy.Take(); len(reqs) != 1 || reqs[0].Path != "/v1/context" {
		t.Fatalf("requests %+v, want one context call", reqs)
	}
	p, err = kit.Prompt(ctx, tools.Turn{Instructions: "You are the store's assistant."})
	if err != nil || strings.Contains(p.System, "<knowledge_context>") || !strings.Contains(p.System, "Offer store credit first") {
		t.Fatalf("no user message, no knowledge: %q %v", p.System, err)
	}
}

// TestPromptWithoutAgentMemory: AgentMemory off fetches no notes: before_call retrieves the
// evidence alone; with knowledge off no request is sent at all.
func TestPromptWithoutAgentMemory(t *testing.T) {
	srv := devserver.Shared(t)
	kb := srv.KnowledgeBase(t, "prompt-nomemory-handbook", docs...)
	proxy := srv.Counter(t)
	key := srv.Key(t, "prompt-nomemory-bot", devserver.AllScopes...)
	c := counted(t, proxy, key)
	ctx := context.Background()
	if _, err := c.Remember(ctx, sdk.Note{Kind: "pitfall", Title: "Never promise a date", Body: "Carriers slip; give the range."}, ""); err != nil {
		t.Fatal(err)
	}
	kit := newKit(t, c, tools.Options{AgentMemory: new(false), Knowledge: tools.KnowledgeBeforeCall, KnowledgeBases: []string{kb}})
	proxy.Take()
	p, err := kit.Prompt(ctx, tools.Turn{Instructions: "Be brief.", UserMessage: "When does express delivery arrive?"})
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, p.System, "Be brief.\n\n<knowledge_context>", "Express delivery")
	if strings.Contains(p.System, "Never promise a date") || p.Context != nil {
		t.Fatalf("agent memory off: %q", p.System)
	}
	if reqs := proxy.Take(); len(reqs) != 1 || reqs[0].Path != "/v1/knowledge/retrieve" {
		t.Fatalf("requests %+v, want one retrieval", reqs)
	}
	off := newKit(t, c, tools.Options{AgentMemory: new(false)})
	if p, err := off.Prompt(ctx, tools.Turn{Instructions: "Be brief.", UserMessage: "hi"}); err != nil || p.System != "Be brief." {
		t.Fatalf("everything off: %q %v", p.System, err)
	}
	if reqs := proxy.Take(); len(reqs) != 0 {
		t.Fatalf("everything off sent %+v", reqs)
	}
}
