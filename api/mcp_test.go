package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
)

// bearer adds an Authorization header to every request of the MCP client.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// mcpSession connects the SDK's own MCP client over HTTP to the real API with key.
func mcpSession(t *testing.T, url, key string) *mcp.ClientSession {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:             url + "/mcp",
		HTTPClient:           &http.Client{Transport: bearer{key: key, next: http.DefaultTransport}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// serveAPI runs e's API on a loopback httptest server.
func serveAPI(t *testing.T, e *apptest.Env) string {
	t.Helper()
	srv := httptest.NewServer(e.Server)
	t.Cleanup(srv.Close)
	return srv.URL
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	names := []string{}
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// callTool calls a tool and decodes its first text content as JSON.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (bool, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	require.NotEmpty(t, res.Content)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T", res.Content[0])
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(text.Text), &m), "text: %s", text.Text)
	return res.IsError, m
}

func TestMCPToolsFollowKeyAndFeature(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		url := serveAPI(t, e)
		e.PutDocument("object-types", apptest.ShopBotTypes())
		everything := e.AgentKey("shop-bot", "acme-ai", "agent_state", "agent_memory", "agent_memory:write", "context")
		reader := e.AgentKey("reader", "acme-ai", "agent_memory")
		stateOnly := e.AgentKey("stateful", "acme-ai", "agent_state")

		// Feature off: no tool at all, whatever the key.
		require.Equal(t, []string{}, toolNames(t, mcpSession(t, url, everything)))

		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}, "agent_memory": map[string]any{"enabled": true}})
		all := toolNames(t, mcpSession(t, url, everything))
		require.Equal(t, []string{api.ToolGetContext, api.ToolRemember, api.ToolSearch}, all)
		// WM-11: working memory is never a tool, even for a key with agent_state.
		for _, n := range all {
			require.NotContains(t, n, "state", "tool %q looks like working memory", n)
		}
		require.Equal(t, []string{api.ToolGetContext, api.ToolSearch}, toolNames(t, mcpSession(t, url, reader)), "no remember without agent_memory:write")
		require.Equal(t, []string{}, toolNames(t, mcpSession(t, url, stateOnly)))

		res, err := mcpSession(t, url, everything).ListTools(context.Background(), nil)
		require.NoError(t, err)
		for _, tl := range res.Tools {
			switch tl.Name {
			case api.ToolSearch:
				require.Contains(t, tl.Description, "NOTHING about customers")
				require.Contains(t, tl.Description, "customer-history tools")
			case api.ToolRemember:
				require.Contains(t, tl.Description, "NEVER write customer data")
				require.Contains(t, tl.Description, "personal_data_in_agent_memory")
			}
		}
	})
}

func TestMCPRememberAndSearch(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		url := serveAPI(t, e)
		enableNotes(e, nil)
		key := writer(e, "shop-bot", "acme-ai")
		cs := mcpSession(t, url, key)

		isErr, out := callTool(t, cs, api.ToolRemember, map[string]any{
			"kind": "tool_note", "title": "Stock API pagination", "body": "The stock API pages at 50 items; follow next_cursor until it is empty.", "tags": []string{"stock"},
		})
		require.False(t, isErr, "answer: %v", out)
		require.Equal(t, "stored", out["status"])
		id := out["note_id"].(string)

		// The same write path as REST: the note, its admin receipt and its outbox event exist.
		n := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/notes/"+id, key, nil).JSON(t)
		require.Equal(t, "shop-bot", n["source_id"])
		require.Equal(t, "agent", n["origin"])
		require.Equal(t, "source", n["visibility"])
		evs := e.MustDo(http.StatusOK, "GET", "/v1/events", e.AdminKey, nil).JSON(t)["events"].([]any)
		require.Len(t, evs, 1)
		require.Contains(t, fmt.Sprint(evs[0]), id)

		isErr, out = callTool(t, cs, api.ToolSearch, map[string]any{"query": "pagination cursor", "tags": []string{"stock"}})
		require.False(t, isErr, "answer: %v", out)
		require.Equal(t, true, out["enabled"])
		found := out["notes"].([]any)
		require.Len(t, found, 1)
		require.Equal(t, id, found[0].(map[string]any)["id"])

		// Search leaves an agent_memory receipt naming the note delivered.
		rs := e.MustDo(http.StatusOK, "GET", "/v1/receipts", e.AdminKey, nil).JSON(t)["receipts"].([]any)
		var searched, written bool
		for _, r := range rs {
			m := r.(map[string]any)
			ids := fmt.Sprint(m["object_ids"])
			searched = searched || (m["kind"] == "agent_memory" && m["action"] == "search" && strings.Contains(ids, id))
			written = written || (m["kind"] == "admin" && strings.Contains(ids, id))
		}
		require.True(t, searched, "no search receipt naming %s in %v", id, rs)
		require.True(t, written, "no admin receipt naming %s in %v", id, rs)

		// Another vendor's agent does not see it (AM-2).
		other := mcpSession(t, url, writer(e, "other-bot", "other-ai"))
		_, out = callTool(t, other, api.ToolSearch, map[string]any{"query": "pagination"})
		require.Empty(t, out["notes"])

		// Bad input is a tool error, not a stored note.
		isErr, out = callTool(t, cs, api.ToolSearch, map[string]any{"query": ""})
		require.True(t, isErr)
		require.Equal(t, "invalid_member", out["error"].(map[string]any)["code"])
	})
}

func TestMCPRefusesPersonalData(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		url := serveAPI(t, e)
		enableNotes(e, nil)
		key := writer(e, "shop-bot", "acme-ai")
		cs := mcpSession(t, url, key)

		isErr, out := callTool(t, cs, api.ToolRemember, map[string]any{
			"kind": "pitfall", "title": "Refunds", "body": "Ana (ana.souza@example.com, +55 11 98765-4321) wanted a refund.",
		})
		require.True(t, isErr)
		er := out["error"].(map[string]any)
		require.Equal(t, "personal_data_in_agent_memory", er["code"])
		require.ElementsMatch(t, []any{"email", "name", "phone"}, er["kinds"]) // "Ana": the name layer (GATE-2)
		require.NotContains(t, fmt.Sprint(out), "ana.souza")

		list := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/notes", key, nil).JSON(t)["notes"].([]any)
		require.Empty(t, list, "a refused note is not stored")
		evs := e.MustDo(http.StatusOK, "GET", "/v1/events", e.AdminKey, nil).JSON(t)["events"].([]any)
		require.Empty(t, evs)

		// The schema refuses an unknown kind before the service is called.
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: api.ToolRemember, Arguments: map[string]any{"kind": "customer", "title": "x", "body": "y"}})
		require.NoError(t, err)
		require.True(t, res.IsError)
	})
}

func TestMCPRateLimitAndProposals(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		url := serveAPI(t, e)
		enableNotes(e, nil)
		cs := mcpSession(t, url, writer(e, "shop-bot", "acme-ai"))
		for i := range 20 {
			isErr, out := callTool(t, cs, api.ToolRemember, map[string]any{"kind": "procedure", "title": fmt.Sprintf("Step %d", i), "body": "Check the stock before offering a size."})
			require.False(t, isErr, "write %d: %v", i, out)
		}
		isErr, out := callTool(t, cs, api.ToolRemember, map[string]any{"kind": "procedure", "title": "One more", "body": "Check the stock before offering a size."})
		require.True(t, isErr)
		er := out["error"].(map[string]any)
		require.Equal(t, "note_rate_limited", er["code"])
		ra, ok := er["retry_after_seconds"].(float64)
		require.True(t, ok, "retry_after_seconds in %v", er)
		require.Greater(t, ra, 0.0)
		require.LessOrEqual(t, ra, 3600.0)

		// human_only: the write becomes a proposal.
		enableNotes(e, map[string]any{"writes": "human_only"})
		cs2 := mcpSession(t, url, writer(e, "other-bot", "acme-ai"))
		isErr, out = callTool(t, cs2, api.ToolRemember, map[string]any{"kind": "pitfall", "title": "Size charts", "body": "Sizes run small in the kids line."})
		require.False(t, isErr, "answer: %v", out)
		require.Equal(t, "proposed", out["status"])
		pid := out["proposal_id"].(string)
		p := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/proposals/"+pid, e.AdminKey, nil).JSON(t)
		require.Equal(t, pid, p["id"])
	})
}

// rawMCP posts an MCP initialize request with key and host and returns the status and body.
func rawMCP(t *testing.T, url, key, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

func TestMCPRefusesPeopleBadKeysAndRebinding(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		url := serveAPI(t, e)
		enableNotes(e, nil)
		key := writer(e, "shop-bot", "acme-ai")

		status, body := rawMCP(t, url, key, "")
		require.Equal(t, http.StatusOK, status, body)

		status, body = rawMCP(t, url, "", "")
		require.Equal(t, http.StatusUnauthorized, status, body)
		require.Contains(t, body, `"missing_key"`)

		status, body = rawMCP(t, url, "am_not-a-real-key", "")
		require.Equal(t, http.StatusUnauthorized, status, body)

		status, body = rawMCP(t, url, e.PersonKey("integrator", "integration"), "")
		require.Equal(t, http.StatusForbidden, status, body)
		require.Contains(t, body, `"agent_key_required"`)

		// DNS rebinding: a non-localhost Host on a loopback listener is refused.
		status, body = rawMCP(t, url, key, "evil.example:80")
		require.Equal(t, http.StatusForbidden, status, body)

		cl := mcp.NewClient(&mcp.Implementation{Name: "x", Version: "1"}, nil)
		_, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearer{key: "am_wrong", next: http.DefaultTransport}},
			DisableStandaloneSSE: true, MaxRetries: -1,
		}, nil)
		require.Error(t, err, "the SDK client cannot connect with a bad key")
	})
}

// postMCP POSTs body to /mcp with key and the extra headers (name, value pairs).
func postMCP(t *testing.T, url, key, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/mcp", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

// TestMCPArgumentErrorsNeverEchoInput: invalid tool arguments are tool errors in the REST
// shape {"error":{"code","message"}}, naming the member but never repeating the caller's
// values; duplicate keys and NUL characters in arguments are refused; nothing is stored.
func TestMCPArgumentErrorsNeverEchoInput(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		url := serveAPI(t, e)
		enableNotes(e, nil)
		key := writer(e, "shop-bot", "acme-ai")
		cs := mcpSession(t, url, key)
		const secret = "ana.secret@example.com"
		cases := []struct {
			name string
			args map[string]any
			code string
		}{
			{"enum", map[string]any{"kind": secret, "title": "t", "body": "b"}, "invalid_member"},
			{"maxLength", map[string]any{"kind": "tool_note", "title": strings.Repeat(secret, 20), "body": "b"}, "invalid_member"},
			{"maxItems", map[string]any{"kind": "tool_note", "title": "t", "body": "b", "tags": []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}}, "invalid_member"},
			{"additionalProperties", map[string]any{"kind": "tool_note", "title": "t", "body": "b", secret: "x"}, "unknown_member"},
			{"type", map[string]any{"kind": "tool_note", "title": secret, "body": 12}, "invalid_member"},
		}
		for _, tc := range cases {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: api.ToolRemember, Arguments: tc.args})
			require.NoError(t, err, tc.name)
			require.True(t, res.IsError, "%s: got a success, want a tool error", tc.name)
			text := res.Content[0].(*mcp.TextContent).Text
			require.NotContains(t, text, secret, "%s: the error repeats the input: %s", tc.name, text)
			var m map[string]map[string]any
			require.NoError(t, json.Unmarshal([]byte(text), &m), "%s: %s", tc.name, text)
			require.Equal(t, tc.code, m["error"]["code"], "%s: %s", tc.name, text)
			require.NotEmpty(t, m["error"]["message"], tc.name)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: api.ToolSearch, Arguments: map[string]any{"query": "x", "limit": 500}})
		require.NoError(t, err)
		require.True(t, res.IsError, "limit 500 is refused")

		// Duplicate keys and NUL characters, which no SDK client sends: raw JSON-RPC.
		for name, args := range map[string]string{
			"duplicate": `{"kind":"tool_note","title":"t","body":"b","title":"` + secret + `"}`,
			"nul":       `{"kind":"tool_note","title":"t\u0000` + secret + `","body":"b"}`,
		} {
			status, body := postMCP(t, url, key, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"remember","arguments":`+args+`}}`)
			require.Equal(t, http.StatusOK, status, "%s: %s", name, body)
			require.Contains(t, body, `"isError":true`, "%s: %s", name, body)
			require.Contains(t, body, `invalid_json`, "%s: %s", name, body)
			require.NotContains(t, body, secret, "%s: %s", name, body)
		}
		notesList := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/notes", key, nil).JSON(t)
		require.Empty(t, notesList["notes"], "nothing was stored")
	})
}

// TestMCPRefusesBatchesAndBadIdempotencyKey: a JSON-RPC batch is 400 batch_not_supported
// before the MCP handler; an over-long Idempotency-Key is 400 invalid_header as on REST.
func TestMCPRefusesBatchesAndBadIdempotencyKey(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		url := serveAPI(t, e)
		enableNotes(e, nil)
		key := writer(e, "shop-bot", "acme-ai")
		call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{"kind":"tool_note","title":"Stock API","body":"Pages at 50."}}}`

		status, body := postMCP(t, url, key, " \n["+call+","+strings.Replace(call, `"id":1`, `"id":2`, 1)+"]")
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Contains(t, body, `"code":"batch_not_supported"`)

		status, body = postMCP(t, url, key, call, "Idempotency-Key", strings.Repeat("k", 201))
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Contains(t, body, `"code":"invalid_header"`)

		notesList := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/notes", key, nil).JSON(t)
		require.Empty(t, notesList["notes"], "nothing was stored")

		status, body = postMCP(t, url, key, call, "Idempotency-Key", "idem-1")
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, `"status":"stored"`)
	})
}
