package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// The agent scope kind (issue 31): one state for the agent instance, shared by all its runs.
// A run of the instance (here a second key of the same agent, as a restarted process holds)
// reads and extends what another run wrote; another instance has a state of its own.
func TestAgentScopeSharedAcrossRuns(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		e.PutDocument("object-types", map[string]any{"types": []any{map[string]any{
			"type": "planner", "ownership": "agent",
			"fields":      map[string]any{"plan": map[string]any{"type": "string"}, "steps_done": map[string]any{"type": "integer"}},
			"agent_state": map[string]any{"scope": "agent"},
		}}})
		run1, run2 := e.AgentKey("planner", "acme", "agent_state"), e.AgentKey("planner", "acme", "agent_state")
		scope := map[string]any{"kind": "agent", "id": "planner-instance-1"}
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", run1, map[string]any{"scope": scope, "body": map[string]any{"plan": "migrate db", "steps_done": 1}})
		r := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", run2, map[string]any{"scope": scope}).JSON(t)
		require.Equal(t, "migrate db", r["body"].(map[string]any)["plan"], "the second run reads the first run's state")
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", run2, map[string]any{"scope": scope, "mode": "cas", "if_version": 1, "body": map[string]any{"plan": "migrate db", "steps_done": 2}})
		r = e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", run1, map[string]any{"scope": scope}).JSON(t)
		require.Equal(t, jsonNumber("2"), r["version"])

		other := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", run1, map[string]any{"scope": map[string]any{"kind": "agent", "id": "planner-instance-2"}}).JSON(t)
		require.Equal(t, jsonNumber("0"), other["version"], "another instance has its own state")
		requireError(t, e.Do("PUT", "/v1/agent-state", run1, map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c"}, "body": map[string]any{"plan": "x"}}),
			http.StatusBadRequest, "invalid_member")
	})
}
