package events_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/events/eventstest"
)

// TestNotesThroughTheAPIReachKafka (AM-13, GOV-4): notes and a proposal written through the
// real API each reach the topic exactly once, keyed by the space, with ids only; a note refused
// for personal data and an over-cap state write publish nothing.
func TestNotesThroughTheAPIReachKafka(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		addr := startBroker(t, 0)
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}, "agent_memory": map[string]any{"enabled": true}})
		e.PutDocument("object-types", apptest.ShopBotTypes())
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state", "agent_memory", "agent_memory:write")

		var noteIDs []string
		for i, title := range []string{"Refund to a gift card", "Stock API pagination", "Return labels"} {
			r := e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", key, map[string]any{
				"kind": "procedure", "title": title, "body": "Secret-free step list number " + string(rune('A'+i)), "tags": []string{"ops"}})
			noteIDs = append(noteIDs, r.JSON(t)["id"].(string))
		}
		e.MustDo(http.StatusUnprocessableEntity, "POST", "/v1/agent-memory/notes", key, map[string]any{
			"kind": "pitfall", "title": "Call back", "body": "call +44 20 7123 4567"})
		r := e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, map[string]any{
			"scope": map[string]any{"kind": "conversation", "id": "c-1"}, "body": map[string]any{"offer": strings.Repeat("o", 17000)}})
		require.Equal(t, "over_cap", r.JSON(t)["reason"])
		e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true, "writes": "human_only"}})
		r = e.MustDo(http.StatusAccepted, "POST", "/v1/agent-memory/notes", key, map[string]any{
			"kind": "tool_note", "title": "Label printer", "body": "Reset the printer queue before reprinting."})
		proposalID := r.JSON(t)["proposal_id"].(string)

		relay := &events.Relay{DB: e.DB, Publisher: newKafka(t, addr)}
		n, err := relay.PublishPending(ctx)
		require.NoError(t, err)
		require.Equal(t, 4, n, "got %d published, want 3 notes and 1 proposal", n)

		msgs := eventstest.Consume(t, addr, topic, partitions)
		require.Len(t, msgs, 4)
		var gotNotes []string
		var gotProposal string
		for _, m := range msgs {
			require.Equal(t, e.SpaceID, string(m.Key))
			require.NotContains(t, string(m.Value), "Secret-free", "no note text on the topic")
			require.NotContains(t, string(m.Value), "Label printer")
			var ev events.Event
			require.NoError(t, json.Unmarshal(m.Value, &ev))
			require.Equal(t, events.TypeNoteCreated, ev.Type)
			require.Equal(t, ev.ID, header(m, events.HeaderEventID))
			if ev.ProposalID != "" {
				gotProposal = ev.ProposalID
				continue
			}
			require.Equal(t, "agent", ev.Origin)
			gotNotes = append(gotNotes, ev.NoteID)
		}
		require.Equal(t, noteIDs, gotNotes, "one event per note, in order")
		require.Equal(t, proposalID, gotProposal)
	})
}
