package console_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// Issue 27: a notes search with the default "All agents" was refused and the page then said
// "No notes match … write the first note" while notes existed. It searches across agents,
// and a refusal shows the error, never an empty-state message.
func TestConsoleNotesSearchAcrossAgents(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		shop := e.AgentKey("shop-bot", "acme", "agent_memory", "agent_memory:write")
		desk := e.AgentKey("desk-bot", "globex", "agent_memory", "agent_memory:write")
		for key, title := range map[string]string{shop: "Exchange window for shoes", desk: "Exchange desk hours"} {
			e.MustDo(http.StatusCreated, http.MethodPost, "/v1/agent-memory/notes", key, map[string]any{
				"kind": "procedure", "title": title, "body": "Explain the exchange rules before anything else."})
		}
		// An admin without integration (who may list every note, not read as an agent).
		b := signIn(t, e, e.PersonKey("Ada", "admin"))
		p := b.get("/console/notes?agent=&q=exchange")
		require.Equal(t, http.StatusOK, p.Status, p.Body)
		require.Contains(t, p.Body, "Exchange window for shoes")
		require.Contains(t, p.Body, "Exchange desk hours")
		require.Contains(t, p.Body, "2 notes, best match first")
		require.NotContains(t, p.Body, "Refused.")

		// Nothing matches: the empty state names the filters, never "write the first note".
		p = b.get("/console/notes?agent=&q=zebra")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "No notes match these filters")
		require.NotContains(t, p.Body, "Write the first note")

		// A refused search (a tag the service refuses) shows the refusal and no empty state.
		p = b.get("/console/notes?agent=&q=exchange&tag=NOT+A+TAG!")
		require.Equal(t, http.StatusBadRequest, p.Status)
		require.Contains(t, p.Body, `role="alert"`)
		require.Contains(t, p.Body, "a tag is lower-case")
		require.NotContains(t, p.Body, "No notes match")
		require.NotContains(t, p.Body, "Write the first note")

		// Searching as one agent still reads that agent's view (integration's).
		integ := signIn(t, e, e.PersonKey("Ivo", "integration"))
		p = integ.get("/console/notes?agent=shop-bot&q=exchange")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "Exchange window for shoes")
		require.NotContains(t, p.Body, "Exchange desk hours")

		// Every search that ran leaves its receipt.
		n, err := e.DB.NewSelect().Table("receipts").Where("action = ?", "search").Count(t.Context())
		require.NoError(t, err)
		require.EqualValues(t, 3, n, "two searches across agents and one as shop-bot; the refused one records nothing")
	})
}
