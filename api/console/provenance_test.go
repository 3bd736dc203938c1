package console_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// MS-5, QT-2 (issue 34 §2): the note and proposal pages show the writing key and the
// Agent-Version the agent sent.
func TestConsoleShowsProvenance(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		bot := e.AgentKey("shop-bot", "acme", "agent_memory", "agent_memory:write")
		botID := e.MustDo(http.StatusOK, http.MethodGet, "/v1/keys/self", bot, nil).JSON(t)["key_id"].(string)
		n := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/agent-memory/notes", bot, map[string]any{
			"kind": "procedure", "title": "Sizes", "body": "Ask for the size chart first.", "tags": []string{"sizes"}},
			"Agent-Version", "shop-bot/1.4.2").JSON(t)
		b := signIn(t, e, e.PersonKey("Ada", "admin"))
		pg := b.get("/console/notes/" + n["id"].(string))
		require.Equal(t, http.StatusOK, pg.Status)
		require.Contains(t, pg.Body, `<dd class="provenance-key"><code>`+botID+`</code></dd>`)
		require.Contains(t, pg.Body, `<dd class="provenance-version"><code>shop-bot/1.4.2</code></dd>`)

		enableNotes(e, map[string]any{"writes": "human_only"})
		pid := e.MustDo(http.StatusAccepted, http.MethodPost, "/v1/agent-memory/notes", bot, map[string]any{
			"kind": "procedure", "title": "Gifts", "body": "Gift wrap is free.", "tags": []string{"sizes"}}).JSON(t)["proposal_id"].(string)
		pg = b.get("/console/proposals/" + pid)
		require.Equal(t, http.StatusOK, pg.Status)
		require.Contains(t, pg.Body, `Proposed by key <code>`+botID+`</code> · agent version not sent`)
	})
}
