package openaitools_test

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
	"github.com/agentmemory/agentmemory/sdk/tools"
	"github.com/agentmemory/agentmemory/sdk/tools/openaitools"
)

// TestMain stops the real binary the package's tests share.
func TestMain(m *testing.M) { os.Exit(devserver.Main(m)) }

func toJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// setup returns a kit offering all three tools on the real binary, its key and the base id.
func setup(t *testing.T, agent string) (*devserver.Server, *tools.Kit, string, string) {
	t.Helper()
	srv := devserver.Shared(t)
	kb := srv.KnowledgeBase(t, agent+"-handbook", devserver.Document{SourceURI: "kb://policies/refunds", Title: "Refunds", Version: "2026-01",
		Format: "markdown", Text: "# Refunds\n\nA refund goes back to the original card within five business days."})
	key := srv.Key(t, agent, devserver.AllScopes...)
	c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	kit, err := tools.New(context.Background(), c, tools.Options{WriteAgentMemory: true, Knowledge: tools.KnowledgeTool, KnowledgeBases: []string{kb}})
	if err != nil {
		t.Fatal(err)
	}
	return srv, kit, key, kb
}

// TestToolsShape: the params marshal to Chat Completions' function tools, their parameters
// equal to the MCP server's input schemas.
func TestToolsShape(t *testing.T) {
	srv, kit, key, _ := setup(t, "openai-shape-bot")
	listed := map[string]devserver.MCPTool{}
	for _, l := range srv.MCPTools(t, key) {
		listed[l.Name] = l
	}
	got, _ := toJSON(t, openaitools.Tools(kit)).([]any)
	if len(got) != 3 {
		t.Fatalf("tools %v", got)
	}
	for i, name := range []string{tools.SearchAgentMemory, tools.Remember, tools.SearchKnowledge} {
		var schema any
		if err := json.Unmarshal(listed[name].InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"type": "function", "function": map[string]any{"name": name, "description": listed[name].Description, "parameters": schema}}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("tool %d:\n got %v\nwant %v", i, got[i], want)
		}
	}
}

// scripted is a Chat Completions answer as the API sends it: the model calls remember twice
// (the second with a phone number) and search_knowledge.
const scripted = `{"id":"chatcmpl-1","object":"chat.completion","created":1764750000,"model":"gpt-test",
 "choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,"message":{"role":"assistant","content":null,"refusal":null,
  "tool_calls":[
   {"id":"call_1","type":"function","function":{"name":"remember","arguments":"{\"kind\":\"procedure\",\"title\":\"Refund to a gift card\",\"body\":\"Ask for the order date, then use Record Reason.\",\"tags\":[\"refund\"]}"}},
   {"id":"call_2","type":"function","function":{"name":"remember","arguments":"{\"kind\":\"pitfall\",\"title\":\"Call back\",\"body\":\"ligar para suporte(11)91234-5678\"}"}},
   {"id":"call_3","type":"function","function":{"name":"search_knowledge","arguments":"{\"query\":\"refund to the original card\"}"}}]}}],
 "usage":{"prompt_tokens":10,"completion_tokens":10,"total_tokens":20}}`

// TestToolCallRoundTrip: a scripted ChatCompletion unmarshalled into the SDK's type goes
// through HandleAll to the real binary: remember stores a note (read back), the refused one
// comes back as content with the code and kinds, search_knowledge returns evidence; the tool
// messages marshal to {"role": "tool", "tool_call_id", "content"}.
func TestToolCallRoundTrip(t *testing.T) {
	srv, kit, key, _ := setup(t, "openai-call-bot")
	var done openai.ChatCompletion
	if err := json.Unmarshal([]byte(scripted), &done); err != nil {
		t.Fatal(err)
	}
	answers, err := openaitools.HandleAll(context.Background(), kit, done.Choices[0].Message)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := toJSON(t, answers).([]any)
	if len(msgs) != 3 {
		t.Fatalf("tool messages %v", msgs)
	}
	results := make([]map[string]any, 3)
	for i, m := range msgs {
		mm := m.(map[string]any)
		if mm["role"] != "tool" || mm["tool_call_id"] != done.Choices[0].Message.ToolCalls[i].ID {
			t.Fatalf("message %d: %v", i, mm)
		}
		content, _ := mm["content"].(string)
		if err := json.Unmarshal([]byte(content), &results[i]); err != nil {
			t.Fatalf("content %q: %v", content, err)
		}
	}
	id, _ := results[0]["note_id"].(string)
	if results[0]["status"] != "stored" || srv.ReadNote(t, key, id).Title != "Refund to a gift card" {
		t.Fatalf("remember: %v", results[0])
	}
	refusal, _ := results[1]["error"].(map[string]any)
	if refusal["code"] != "personal_data_in_agent_memory" || !reflect.DeepEqual(refusal["kinds"], []any{"phone"}) {
		t.Fatalf("refused remember: %v", results[1])
	}
	if ctx, _ := results[2]["context"].(string); !strings.Contains(ctx, "original card") {
		t.Fatalf("search_knowledge: %v", results[2])
	}
}

// TestPromptShape: Prompt gives a system message holding the instructions then the block,
// and the kit's tools.
func TestPromptShape(t *testing.T) {
	_, kit, _, _ := setup(t, "openai-prompt-bot")
	if _, err := kit.Dispatch(context.Background(), tools.Remember, `{"kind":"pitfall","title":"Never promise a date","body":"Carriers slip; give the range."}`); err != nil {
		t.Fatal(err)
	}
	p, err := openaitools.Prompt(context.Background(), kit, tools.Turn{Instructions: "You are the store's assistant."})
	if err != nil {
		t.Fatal(err)
	}
	sys, _ := toJSON(t, p.System).(map[string]any)
	content, _ := sys["content"].(string)
	if sys["role"] != "system" || content != p.Text || !strings.HasPrefix(content, "You are the store's assistant.\n\n<agent_notes>") ||
		!strings.Contains(content, "Never promise a date") || len(p.Tools) != 3 || p.Context == nil {
		t.Fatalf("prompt %v (%d tools)", sys, len(p.Tools))
	}
}
