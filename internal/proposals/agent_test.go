package proposals_test

import (
	"context"
	"testing"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/models"
	"github.com/stretchr/testify/require"
)

// failEvents makes every insert into outbox fail in e's database ("boom", a
// trigger) until the returned function drops the trigger: an agent's proposal then fails
// after its row was written (noterows.InsertProposal writes the row, then its event).
func failEvents(t *testing.T, e *apptest.Env) func() {
	t.Helper()
	ctx := context.Background()
	if db.IsSQLite(e.DB) {
		_, err := e.DB.DB.ExecContext(ctx, `CREATE TRIGGER events_boom BEFORE INSERT ON outbox BEGIN SELECT RAISE(ABORT, 'boom'); END`)
		require.NoError(t, err)
		return func() {
			_, err := e.DB.DB.ExecContext(ctx, `DROP TRIGGER events_boom`)
			require.NoError(t, err)
		}
	}
	_, err := e.DB.DB.ExecContext(ctx, `CREATE FUNCTION events_boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'boom'; END $$`)
	require.NoError(t, err)
	_, err = e.DB.DB.ExecContext(ctx, `CREATE TRIGGER events_boom BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION events_boom()`)
	require.NoError(t, err)
	return func() {
		_, err := e.DB.DB.ExecContext(ctx, `DROP TRIGGER events_boom ON outbox; DROP FUNCTION events_boom()`)
		require.NoError(t, err)
	}
}

func count(t *testing.T, e *apptest.Env, model any) int {
	t.Helper()
	n, err := e.DB.NewSelect().Model(model).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

// AM-8: an agent's write under writes: human_only becomes a proposal inside the write's one
// transaction (receipt, proposal row, note_created event) through noterows.InsertProposal,
// and is decided by the same Decide as every other proposal. A proposal insert that fails
// after its row was written leaves nothing: no receipt, no proposal, no event.
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
		restore := failEvents(t, e)
		_, err = e.Deps.Notes.Create(ctx, agent, "", "", in)
		require.ErrorContains(t, err, "boom")
		restore()
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
