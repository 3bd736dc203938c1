package anthropictools_test

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
	"github.com/agentmemory/agentmemory/sdk/tools"
	"github.com/agentmemory/agentmemory/sdk/tools/anthropictools"
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

// setup returns a kit offering all three tools on the real binary and its key.
func setup(t *testing.T, agent string) (*devserver.Server, *tools.Kit, string) {
	t.Helper()
	srv := devserver.Shared(t)
	kb := srv.KnowledgeBase(t, agent+"-handbook", devserver.Document{SourceURI: "kb://policies/shipping", Title: "Shipping", Version: "2026-02",
		Format: "markdown", Text: "# Shipping\n\nExpress delivery arrives the next day when ordered before noon."})
	key := srv.Key(t, agent, devserver.AllScopes...)
	c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	kit, err := tools.New(context.Background(), c, tools.Options{WriteAgentMemory: true, Knowledge: tools.KnowledgeTool, KnowledgeBases: []string{kb}})
	if err != nil {
		t.Fatal(err)
	}
	return srv, kit, key
}

// TestToolsShape: the params marshal to Messages tools {name, description, input_schema},
// input_schema equal to the MCP server's input schema.
func TestToolsShape(t *testing.T) {
	srv, kit, key := setup(t, "anthropic-shape-bot")
	listed := map[string]devserver.MCPTool{}
	for _, l := range srv.MCPTools(t, key) {
		listed[l.Name] = l
	}
	got, _ := toJSON(t, anthropictools.Tools(kit)).([]any)
	if len(got) != 3 {
		t.Fatalf("tools %v", got)
	}
	for i, name := range []string{tools.SearchAgentMemory, tools.Remember, tools.SearchKnowledge} {
		var schema any
		if err := json.Unmarshal(listed[name].InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"name": name, "description": listed[name].Description, "input_schema": schema}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("tool %d:\n got %v\nwant %v", i, got[i], want)
		}
	}
}

// scripted is a Messages answer as the API sends it: text, then tool_use blocks for
// remember (twice, the second with a phone number) and search_knowledge.
const scripted = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"tool_use","stop_sequence":null,
 "content":[
  {"type":"text","text":"Let me note that."},
  {"type":"tool_use","id":"toolu_1","name":"remember","input":{"kind":"tool_note","title":"Express cut-off","body":"Express orders placed before noon ship the same day.","tags":["shipping"]}},
  {"type":"tool_use","id":"toolu_2","name":"remember","input":{"kind":"pitfall","title":"Call back","body":"ligar para suporte(11)91234-5678"}},
  {"type":"tool_use","id":"toolu_3","name":"search_knowledge","input":{"query":"express delivery next day"}}],
 "usage":{"input_tokens":10,"output_tokens":10}}`

// TestToolUseRoundTrip: a scripted Message unmarshalled into the SDK's type goes through
// HandleAll to the real binary: one user message of tool_result blocks, in order; remember
// stored a note (read back), the refused one is is_error with the code and kinds,
// search_knowledge returned evidence.
func TestToolUseRoundTrip(t *testing.T) {
	srv, kit, key := setup(t, "anthropic-call-bot")
	var msg anthropic.Message
	if err := json.Unmarshal([]byte(scripted), &msg); err != nil {
		t.Fatal(err)
	}
	answer, ok, err := anthropictools.HandleAll(context.Background(), kit, msg)
	if err != nil || !ok {
		t.Fatalf("HandleAll: %v %v", ok, err)
	}
	m, _ := toJSON(t, answer).(map[string]any)
	blocks, _ := m["content"].([]any)
	if m["role"] != "user" || len(blocks) != 3 {
		t.Fatalf("answer %v", m)
	}
	results := make([]map[string]any, 3)
	for i, b := range blocks {
		bm := b.(map[string]any)
		parts, _ := bm["content"].([]any)
		if bm["type"] != "tool_result" || bm["tool_use_id"] != []string{"toolu_1", "toolu_2", "toolu_3"}[i] || len(parts) != 1 {
			t.Fatalf("block %d: %v", i, bm)
		}
		if bm["is_error"] != (i == 1) {
			t.Errorf("block %d: is_error %v", i, bm["is_error"])
		}
		text, _ := parts[0].(map[string]any)["text"].(string)
		if err := json.Unmarshal([]byte(text), &results[i]); err != nil {
			t.Fatalf("text %q: %v", text, err)
		}
	}
	id, _ := results[0]["note_id"].(string)
	if results[0]["status"] != "stored" || srv.ReadNote(t, key, id).Title != "Express cut-off" {
		t.Fatalf("remember: %v", results[0])
	}
	refusal, _ := results[1]["error"].(map[string]any)
	if refusal["code"] != "personal_data_in_agent_memory" || !reflect.DeepEqual(refusal["kinds"], []any{"phone"}) {
		t.Fatalf("refused remember: %v", results[1])
	}
	if ctx, _ := results[2]["context"].(string); !strings.Contains(ctx, "Express delivery") {
		t.Fatalf("search_knowledge: %v", results[2])
	}
	var none anthropic.Message
	if err := json.Unmarshal([]byte(`{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"Done."}]}`), &none); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := anthropictools.HandleAll(context.Background(), kit, none); ok || err != nil {
		t.Fatalf("no tool_use: %v %v", ok, err)
	}
}

// TestPromptShape: Prompt gives the system prompt as one text block (instructions, then the
// block) and the kit's tools.
func TestPromptShape(t *testing.T) {
	_, kit, _ := setup(t, "anthropic-prompt-bot")
	if _, err := kit.Dispatch(context.Background(), tools.Remember, `{"kind":"pitfall","title":"Never promise a date","body":"Carriers slip; give the range."}`); err != nil {
		t.Fatal(err)
	}
	p, err := anthropictools.Prompt(context.Background(), kit, tools.Turn{Instructions: "You are the store's assistant."})
	if err != nil {
		t.Fatal(err)
	}
	sys, _ := toJSON(t, p.System).([]any)
	if len(sys) != 1 || len(p.Tools) != 3 {
		t.Fatalf("system %v, %d tools", sys, len(p.Tools))
	}
	block := sys[0].(map[string]any)
	text, _ := block["text"].(string)
	if block["type"] != "text" || text != p.Text || !strings.HasPrefix(text, "You are the store's assistant.\n\n<agent_notes>") || !strings.Contains(text, "Never promise a date") {
		t.Fatalf("system block %v", block)
	}
}
