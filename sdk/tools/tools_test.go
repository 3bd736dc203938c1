package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
	"github.com/agentmemory/agentmemory/sdk/tools"
)

var docs = []devserver.Document{
	{SourceURI: "kb://policies/refunds", Title: "Refunds", Version: "2026-01", Format: "markdown",
		Text: "# Refunds\n\nA refund goes back to the original card within five business days. Store credit is issued at once when the customer prefers it."},
	{SourceURI: "kb://policies/shipping", Title: "Shipping", Version: "2026-02", Format: "markdown",
		Text: "# Shipping\n\nStandard parcels arrive in three to seven days. Express delivery arrives the next day when ordered before noon."},
}

func client(t *testing.T, url, key string) *sdk.Client {
	t.Helper()
	c, err := sdk.New(sdk.Options{BaseURL: url, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// counted is a client of key whose requests proxy counts.
func counted(t *testing.T, proxy *devserver.Counter, key string) *sdk.Client {
	t.Helper()
	c, err := sdk.New(sdk.Options{BaseURL: proxy.URL, HTTPClient: proxy.Client, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newKit(t *testing.T, c *sdk.Client, opt tools.Options) *tools.Kit {
	t.Helper()
	kit, err := tools.New(context.Background(), c, opt)
	if err != nil {
		t.Fatal(err)
	}
	return kit
}

func decode(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return v
}

// TestDefinitionsEqualMCP: the three definitions' names, descriptions and input schemas equal
// what the real binary's MCP server lists (api/mcp.go is their source of truth).
func TestDefinitionsEqualMCP(t *testing.T) {
	srv := devserver.Shared(t)
	srv.KnowledgeBase(t, "defs-handbook") // search_knowledge is listed where a base may exist
	listed := srv.MCPTools(t, srv.Key(t, "defs-bot", devserver.AllScopes...))
	var names []string
	for _, l := range listed {
		names = append(names, l.Name)
		if l.Name == "get_context" {
			continue // the context call as a tool is the server's only: the kit has Prompt instead
		}
		d := tools.Lookup(l.Name)
		if d.Name != l.Name {
			t.Errorf("the MCP server lists %s, the kit has no definition of it", l.Name)
			continue
		}
		if d.Description != l.Description {
			t.Errorf("%s: description\n kit %q\n mcp %q", l.Name, d.Description, l.Description)
		}
		if got, want := decode(t, d.InputSchema), decode(t, l.InputSchema); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: input schema\n kit %s\n mcp %s", l.Name, d.InputSchema, l.InputSchema)
		}
		if !reflect.DeepEqual(d.Schema(), decode(t, l.InputSchema)) {
			t.Errorf("%s: Schema() differs from the listed schema", l.Name)
		}
	}
	slices.Sort(names)
	if !reflect.DeepEqual(names, []string{"get_context", tools.Remember, tools.SearchAgentMemory, tools.SearchKnowledge}) {
		t.Fatalf("the MCP server lists %v", names)
	}
	if len(tools.Definitions()) != 3 || !strings.Contains(tools.Lookup(tools.Remember).Description, "NEVER write customer data") {
		t.Fatalf("definitions %v", tools.Definitions())
	}
}

// TestDiscovery: the kit offers what the options ask for and the key may use, as the MCP
// server lists it; options asking for no tool send no request; bad options are ErrOptions.
func TestDiscovery(t *testing.T) {
	srv := devserver.Shared(t)
	proxy := srv.Counter(t)
	all := counted(t, proxy, srv.Key(t, "discovery-bot", devserver.AllScopes...))
	reader := counted(t, proxy, srv.Key(t, "discovery-bot", "agent_memory"))
	everything := tools.Options{WriteAgentMemory: true, Knowledge: tools.KnowledgeTool}
	cases := []struct {
		name string
		c    *sdk.Client
		opt  tools.Options
		want []string
	}{
		{"defaults", all, tools.Options{}, []string{tools.SearchAgentMemory}},
		{"everything", all, everything, []string{tools.SearchAgentMemory, tools.Remember, tools.SearchKnowledge}},
		{"a reader key", reader, everything, []string{tools.SearchAgentMemory}},
		{"knowledge only", all, tools.Options{AgentMemory: new(false), Knowledge: tools.KnowledgeTool}, []string{tools.SearchKnowledge}},
		{"before_call offers no tool", all, tools.Options{Knowledge: tools.KnowledgeBeforeCall, KnowledgeBases: []string{"kb_x"}}, []string{tools.SearchAgentMemory}},
	}
	for _, c := range cases {
		if got := newKit(t, c.c, c.opt).Names(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	proxy.Take()
	if kit := newKit(t, all, tools.Options{AgentMemory: new(false)}); len(kit.Names()) != 0 || len(proxy.Take()) != 0 {
		t.Fatalf("no tool asked for: %v, and no request wanted", kit.Names())
	}
	for _, bad := range []tools.Options{{Knowledge: "sometimes"}, {Knowledge: tools.KnowledgeBeforeCall}} {
		if _, err := tools.New(context.Background(), all, bad); !errors.Is(err, tools.ErrOptions) {
			t.Errorf("%+v: %v, want ErrOptions", bad, err)
		}
	}
}

// result decodes a Dispatch result.
func result(t *testing.T, kit *tools.Kit, name, args string) map[string]any {
	t.Helper()
	out, err := kit.Dispatch(context.Background(), name, args)
	if err != nil {
		t.Fatalf("%s(%s): %v", name, args, err)
	}
	m, ok := decode(t, []byte(out)).(map[string]any)
	if !ok {
		t.Fatalf("%s: result %s is not an object", name, out)
	}
	return m
}

func errorCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// TestDispatch: remember stores a note (read back), a refused one is a result with the code
// and kinds, search finds it, search_knowledge returns fenced evidence (through REST with
// bases, through the MCP server without), and the model's mistakes are results too.
func TestDispatch(t *testing.T) {
	srv := devserver.Shared(t)
	// "a-" sorts first: the MCP server searches the first 10 readable bases by name when the
	// model names none, and every "a-dispatch-handbook" (one per run) holds the documents.
	kb := srv.KnowledgeBase(t, "a-dispatch-handbook", docs...)
	key := srv.Key(t, "dispatch-bot", devserver.AllScopes...)
	c := client(t, srv.URL, key)
	kit := newKit(t, c, tools.Options{WriteAgentMemory: true, Knowledge: tools.KnowledgeTool, KnowledgeBases: []string{kb},
		Evidence: &sdk.Evidence{ConversationID: "c-dispatch"}})

	stored := result(t, kit, tools.Remember, `{"kind":"tool_note","title":"Invoice export","body":"The invoice export runs hourly; wait for it before you check totals.","tags":["invoice"]}`)
	id, _ := stored["note_id"].(string)
	if stored["status"] != "stored" || id == "" {
		t.Fatalf("remember: %v", stored)
	}
	if n := srv.ReadNote(t, key, id); n.Title != "Invoice export" || n.Kind != "tool_note" || !reflect.DeepEqual(n.Tags, []string{"invoice"}) {
		t.Fatalf("note read back: %+v", n)
	}
	refused := result(t, kit, tools.Remember, `{"kind":"pitfall","title":"Call back","body":"ligar para suporte(11)91234-5678"}`)
	if errorCode(refused) != "personal_data_in_agent_memory" || !reflect.DeepEqual(refused["error"].(map[string]any)["kinds"], []any{"phone"}) {
		t.Fatalf("refused remember: %v", refused)
	}
	if out, _ := kit.Dispatch(context.Background(), tools.Remember, `{"kind":"pitfall","title":"Call back","body":"ligar para suporte(11)91234-5678"}`); !tools.IsError(out) || strings.Contains(out, "91234") {
		t.Fatalf("refusal %s: IsError and no value echoed", out)
	}
	found := result(t, kit, tools.SearchAgentMemory, `{"query":"invoice export"}`)
	if notes, _ := found["notes"].([]any); found["enabled"] != true || len(notes) != 1 || notes[0].(map[string]any)["id"] != id {
		t.Fatalf("search: %v", found)
	}
	evidence := result(t, kit, tools.SearchKnowledge, `{"query":"refund to the original card","top_k":2}`)
	if ctx, _ := evidence["context"].(string); !strings.Contains(ctx, "original card") || !strings.Contains(ctx, "kb://policies/refunds") {
		t.Fatalf("search_knowledge: %v", evidence)
	}
	anyBase := newKit(t, c, tools.Options{Knowledge: tools.KnowledgeTool})
	evidence = result(t, anyBase, tools.SearchKnowledge, `{"query":"express delivery next day"}`)
	if ctx, _ := evidence["context"].(string); !strings.Contains(ctx, "Express delivery") {
		t.Fatalf("search_knowledge over every readable base: %v", evidence)
	}
	mistakes := []struct{ name, args, code string }{
		{"delete_everything", `{}`, "unknown_tool"},
		{tools.Remember, `{"kind":"pitfall","title":"x"}`, "invalid_arguments"},
		{tools.Remember, `{"kind":"pitfall","title":"x","body":"y","visibility":"space"}`, "invalid_arguments"},
		{tools.SearchAgentMemory, `{"query":"x","limit":"ten"}`, "invalid_arguments"},
		{tools.SearchAgentMemory, `{"query":null}`, "invalid_arguments"},
		{tools.SearchAgentMemory, `[1]`, "invalid_arguments"},
		{tools.SearchAgentMemory, `{"query":"x","limit":500}`, "invalid_query"},
		{tools.SearchKnowledge, `{"query":"x","kbs":["kb_missing"]}`, "knowledge_base_not_found"},
	}
	for _, m := range mistakes {
		if got := result(t, kit, m.name, m.args); errorCode(got) != m.code {
			t.Errorf("%s(%s): %v, want %s", m.name, m.args, got, m.code)
		}
	}
	if n := srv.ReadNote(t, key, id); n.Title != "Invoice export" {
		t.Fatalf("the refusals changed the note: %+v", n)
	}
}

// TestDispatchBridged: search_knowledge with space retrieves another space's base named in
// kbs through a bridge both spaces approved (issue 31), never the kit's own KnowledgeBases;
// before the bridge the result is knowledge_base_not_found, as a base that does not exist.
func TestDispatchBridged(t *testing.T) {
	srv := devserver.Shared(t)
	from := srv.NewSpace(t, "dispatch-bridge-from")
	srv.MustDo(t, "PUT", "/v1/documents/features", from.Admin, map[string]any{"knowledge": map[string]any{"enabled": true}}, nil)
	_, name := srv.KnowledgeBaseIn(t, from.Admin, "dispatch-partner", devserver.Document{SourceURI: "kb://partner/returns", Title: "Returns",
		Format: "markdown", Text: "# Returns\n\nPartner returns are collected by courier within two days."})
	to := srv.SharedSpace(t)
	agent := name + "-bot"
	var key struct {
		Key string `json:"key"`
	}
	srv.MustDo(t, "POST", "/v1/keys", to.Admin, map[string]any{"kind": "agent", "agent": agent, "vendor": "sdk-vendor", "scopes": []string{"knowledge:read"}}, &key)
	own := srv.KnowledgeBase(t, "dispatch-own", docs...)
	kit := newKit(t, client(t, srv.URL, key.Key), tools.Options{Knowledge: tools.KnowledgeTool, KnowledgeBases: []string{own}})
	args := `{"query":"partner returns courier","kbs":["` + name + `"],"space":"` + from.ID + `"}`
	if got := result(t, kit, tools.SearchKnowledge, args); errorCode(got) != "knowledge_base_not_found" {
		t.Fatalf("before the bridge: %v, want knowledge_base_not_found", got)
	}
	srv.OpenBridgeTerms(t, from, to, map[string]any{"agents": []string{agent}, "knowledge_bases": []string{name}})
	evidence := result(t, kit, tools.SearchKnowledge, args)
	if ctx, _ := evidence["context"].(string); !strings.Contains(ctx, "collected by courier") || strings.Contains(ctx, "original card") {
		t.Fatalf("search_knowledge through the bridge: %v", evidence)
	}
	if got := result(t, kit, tools.SearchKnowledge, `{"query":"partner returns","space":"`+from.ID+`"}`); errorCode(got) != "invalid_member" {
		t.Fatalf("space without kbs: %v, want invalid_member (the kit's own bases never cross)", got)
	}
}

// TestDispatchUnreachable: when the service cannot be reached the run cannot go on: an error,
// not a result. (A stand-in MCP server lists the tool, then goes away.)
func TestDispatchUnreachable(t *testing.T) {
	stand := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search_agent_memory","description":"d","inputSchema":{"type":"object"}}]}}`))
	}))
	kit := newKit(t, client(t, stand.URL, "am_none"), tools.Options{})
	stand.Close()
	if _, err := kit.Dispatch(context.Background(), tools.SearchAgentMemory, `{"query":"x"}`); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("unreachable service: %v", err)
	}
}
