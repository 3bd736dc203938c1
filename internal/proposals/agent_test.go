package proposals_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/models"
)

// failing is a notes.Proposer whose insert fails after the real one wrote its rows.
type failing struct{ real notes.Proposer }

func (f failing) InsertAgentProposal(ctx context.Context, tx bun.IDB, p notes.AgentProposal) error {
	if err := f.real.InsertAgentProposal(ctx, tx, p); err != nil {
		return err
	}
	return errors.New("boom")
}

func count(t *testing.T, e *apptest.Env, model any) int {
	t.Helper()
	n, err := e.DB.NewSelect().Model(model).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

// AM-8: an agent's write under writes: human_only becomes a proposal inside the write's one
// transaction (receipt, proposal row, note_created event) through notes.Proposer, and is
// decided by the same Decide as every other proposal. A failing proposal insert leaves
// nothing: no receipt, no proposal, no event.
func TestAgentWriteUnderHumanOnlyIsDecidedByDecide(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true, "writes": "human_only"}})
		agent, err := auth.Authenticate(ctx, e.DB, e.AgentKey("shop-bot", "acme", "agent_memory", "agent_memory:write"))
		require.NoError(t, err)
		admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
		require.NoError(t, err)
		in := notes.Input{Kind: "procedure", Title: "Refunds", Body: "Validate the purchase first.", Tags: []string{"refund"}}

		receipts, events := count(t, e, (*models.Receipt)(nil)), count(t, e, (*models.OutboxEvent)(nil))
		e.Deps.Notes.Proposals = failing{real: e.Deps.Proposals}
		_, err = e.Deps.Notes.Create(ctx, agent, "", "", in)
		require.Error(t, err)
		e.Deps.Notes.Proposals = e.Deps.Proposals
		require.Equal(t, receipts, count(t, e, (*models.Receipt)(nil)), "the receipt rolled back with the proposal")
		require.Equal(t, events, count(t, e, (*models.OutboxEvent)(nil)))
		require.Zero(t, count(t, e, (*models.NoteProposal)(nil)))

		res, err := e.Deps.Notes.Create(ctx, agent, "shop-bot/1.0", "", in)
		require.NoError(t, err)
		require.NotEmpty(t, res.ProposalID)
		require.Nil(t, res.Note)
		require.Equal(t, events+1, count(t, e, (*models.OutboxEvent)(nil)), "the proposal's note_created event")
		p, err := e.Deps.Proposals.Get(ctx, admin, res.ProposalID)
		require.NoError(t, err)
		require.Equal(t, proposals.StatusPending, p.Status)
		require.Equal(t, notes.OriginAgent, p.Origin)
		require.Equal(t, &notes.ProposedNote{Kind: "procedure", Title: "Refunds", Body: "Validate the purchase first.",
			Tags: []string{"refund"}, Visibility: notes.VisibilitySource}, p.Note)

		d, err := e.Deps.Proposals.Decide(ctx, admin, res.ProposalID, proposals.Decision{Kind: proposals.DecisionApprove})
		require.NoError(t, err)
		require.True(t, d.Created)
		require.Equal(t, notes.OriginAgent, d.Note.Origin)
		require.Equal(t, "shop-bot", d.Note.SourceID)
		require.Equal(t, res.ProposalID, *d.Note.ProposalID)
		again, err := e.Deps.Proposals.Decide(ctx, admin, res.ProposalID, proposals.Decision{Kind: proposals.DecisionApprove})
		require.NoError(t, err)
		require.Equal(t, proposals.Result{Note: d.Note}, again, "a repeated approve: the same note, not created")
	})
}
