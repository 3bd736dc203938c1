package proposals_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
)

// Control characters (NUL above all) in a note's text are refused by the notes validation
// every door shares (REST, MCP, distillation), as fault.Invalid naming the member, before
// the database sees them; newline, carriage return and tab stay allowed in a body.
func TestControlCharactersRefusedOnEveryWritePath(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		svc, admin, id := distilEnv(t, e)
		agentKey := e.AgentKey("writer-bot", "acme", "agent_memory", "agent_memory:write")
		agent, err := auth.Authenticate(ctx, e.DB, agentKey)
		require.NoError(t, err)

		for _, tc := range []struct{ title, body, member string }{
			{"Refunds", "Validate\x00 the purchase.", "body"},
			{"Refunds", "Validate\x07 the purchase.", "body"},
			{"Refunds", "Validate\u0085 the purchase.", "body"},
			{"Ref\x00unds", "Validate the purchase.", "title"},
		} {
			_, err := e.Deps.Notes.Create(ctx, agent, "", "", notes.Input{Kind: "procedure", Title: tc.title, Body: tc.body})
			fe := fault.As(err)
			require.NotNil(t, fe, "got %v, want fault.Invalid", err)
			require.Equal(t, fault.Invalid, fe.Kind, "got %v", err)
			require.Equal(t, tc.member, fe.Details["member"], "got %v", err)

			err = svc.MarkPending(ctx, id, notes.ProposedNote{Kind: "procedure", Title: tc.title, Body: tc.body})
			fe = fault.As(err)
			require.NotNil(t, fe, "got %v, want fault.Invalid", err)
			require.Equal(t, fault.Invalid, fe.Kind, "got %v", err)
			require.Equal(t, tc.member, fe.Details["member"], "got %v", err)
		}
		p, err := svc.Get(ctx, admin, id)
		require.NoError(t, err)
		require.Equal(t, proposals.StatusDrafting, p.Status, "a refused note leaves the proposal drafting")

		res, err := e.Deps.Notes.Create(ctx, agent, "", "", notes.Input{Kind: "procedure", Title: "Refunds", Body: "Line one\r\n\tline two"})
		require.NoError(t, err)
		require.Equal(t, "Line one\r\n\tline two", res.Note.Body)
	})
}
