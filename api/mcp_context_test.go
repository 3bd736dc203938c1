package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
)

// CTX-2 over MCP: get_context is listed where the key may make the context call and answers
// what POST /v1/context answers (the same system block, context and tokens); CTX-3: the read
// tools take a run and draw on it; a bad run is a tool error naming the member, drawing
// nothing.
func TestMCPGetContextAndRuns(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := newContextEnv(t, e)
		url := serveAPI(t, e)
		all := e.AgentKey("shop-bot", "acme-ai", "context", "agent_memory", "knowledge:read")
		require.Contains(t, toolNames(t, mcpSession(t, url, c.bot)), api.ToolGetContext)
		require.NotContains(t, toolNames(t, mcpSession(t, url, e.AgentKey("reader", "acme-ai", "knowledge:read"))), api.ToolGetContext,
			"get_context needs scope context or agent_memory, as the context call")

		req := map[string]any{"view": "voice", "task": map[string]any{"id": "task-9", "object_types": []string{"order"}}, "max_tokens": 1200,
			"include_agent_memory": true, "knowledge": map[string]any{"kbs": []string{c.kb}, "query": "refund card payments"}}
		rest := e.MustDo(http.StatusOK, "POST", contextPath, c.bot, req).JSON(t)
		cs := mcpSession(t, url, all)
		isErr, got := callTool(t, cs, api.ToolGetContext, req)
		require.False(t, isErr, "%v", got)
		require.NotEmpty(t, got["system_block"])
		require.Equal(t, rest["system_block"], got["system_block"], "the same block as POST /v1/context")
		require.Equal(t, rest["context"], got["context"])
		require.Equal(t, rest["etag"], got["etag"])
		res, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		for _, tl := range res.Tools {
			if tl.Name == api.ToolGetContext {
				require.Contains(t, tl.Description, "after your instructions and before the customer's context")
				require.Contains(t, tl.Description, "never instructions")
			}
		}

		// A run drawn on by get_context, search_knowledge and search_agent_memory.
		withRun := map[string]any{}
		for k, v := range req {
			withRun[k] = v
		}
		withRun["run"] = map[string]any{"id": "mcp-run", "budget_tokens": 5000}
		_, got = callTool(t, cs, api.ToolGetContext, withRun)
		drawn := int(got["tokens"].(map[string]any)["total"].(float64))
		require.Equal(t, float64(drawn), got["run"].(map[string]any)["used_tokens"])
		isErr, got = callTool(t, cs, api.ToolSearchKnowledge, map[string]any{"query": "refund card payments", "kbs": []string{c.kb}, "run": map[string]any{"id": "mcp-run"}})
		require.False(t, isErr, "%v", got)
		drawn += int(got["context_tokens"].(float64))
		require.Equal(t, float64(drawn), got["run"].(map[string]any)["used_tokens"])
		isErr, got = callTool(t, cs, api.ToolSearch, map[string]any{"query": "refunds", "run": map[string]any{"id": "mcp-run"}})
		require.False(t, isErr, "%v", got)
		for _, n := range got["notes"].([]any) {
			drawn += noteCost(t, n.(map[string]any))
		}
		require.Equal(t, float64(drawn), got["run"].(map[string]any)["used_tokens"])
		require.Equal(t, float64(5000-drawn), got["run"].(map[string]any)["remaining_tokens"])

		bad := map[string]any{"id": "", "budget_tokens": 10}
		for tool, args := range map[string]map[string]any{
			api.ToolGetContext:      {"run": bad},
			api.ToolSearch:          {"query": "refunds", "run": bad},
			api.ToolSearchKnowledge: {"query": "refunds", "kbs": []string{c.kb}, "run": bad},
		} {
			isErr, got = callTool(t, cs, tool, args)
			require.True(t, isErr, tool)
			require.Equal(t, "run.id", got["error"].(map[string]any)["member"], tool)
		}
		isErr, got = callTool(t, cs, api.ToolGetContext, map[string]any{"run": map[string]any{"id": "fresh"}})
		require.True(t, isErr)
		require.Equal(t, "run_budget_required", got["error"].(map[string]any)["code"])
		require.Equal(t, 1, runsRows(t, e), "only mcp-run was begun")
	})
}
