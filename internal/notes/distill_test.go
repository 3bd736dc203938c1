package notes_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api/apitest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/turns"
)

// distilEnv is a space with agent memory on, an agent support-bot and a distilled proposal
// in drafting; it returns the service, the admin principal and the proposal id.
func distilEnv(t *testing.T, e *apitest.Env) (*notes.Service, auth.Principal, string) {
	t.Helper()
	e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true, "max_notes_per_source": 1}})
	e.AgentKey("support-bot", "acme", "agent_memory")
	admin, err := auth.Authenticate(context.Background(), e.DB, e.AdminKey)
	require.NoError(t, err)
	svc := e.Deps.Notes
	id, err := svc.CreateDistillProposal(context.Background(), admin, turns.Scope{ConversationID: "abcd-1"}, "support-bot")
	require.NoError(t, err)
	return svc, admin, id
}

var refundNote = notes.DistilledNote{Kind: "procedure", Title: "Refunds", Body: "Validate the purchase first.", Tags: []string{"refund"}}

// The workflow's side of a distilled proposal is idempotent, as activities may run twice:
// pending, failed, approved, rejected and expired each hold when applied again, and an
// approval is refused (not failed) when the cap or the gate says no.
func TestDistilledProposalStoreIsIdempotent(t *testing.T) {
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ctx := context.Background()
		svc, admin, id := distilEnv(t, e)

		space, ev, err := svc.Distillation(ctx, id)
		require.NoError(t, err)
		require.Equal(t, e.SpaceID, space)
		require.Equal(t, notes.Evidence{ConversationID: "abcd-1"}, ev)

		require.NoError(t, svc.SetLastError(ctx, id, "model_unreachable"))
		p, err := svc.GetProposal(ctx, admin, id)
		require.NoError(t, err)
		require.Equal(t, "model_unreachable", *p.LastError)

		require.NoError(t, svc.MarkPending(ctx, id, refundNote))
		require.NoError(t, svc.MarkPending(ctx, id, refundNote), "a retried MarkPending changes nothing")
		p, err = svc.GetProposal(ctx, admin, id)
		require.NoError(t, err)
		require.Equal(t, notes.ProposalPending, p.Status)
		require.Nil(t, p.LastError)
		require.Equal(t, "Refunds", p.Note.Title)

		// A reviewer's staged edits with personal data never reach storage.
		_, err = svc.StageDecision(ctx, admin, id, notes.DecisionApprove, &notes.Patch{Body: ptr("Mail ana@example.com")}, "")
		require.Equal(t, notes.CodePersonalData, fault.As(err).Code, "got %v", err)
		st, err := svc.StageDecision(ctx, admin, id, notes.DecisionApprove, &notes.Patch{Title: ptr("Refunds: validate first")}, "")
		require.NoError(t, err)

		out, err := svc.ApplyApproval(ctx, id, st.DecisionID, admin.KeyID)
		require.NoError(t, err)
		require.NotEmpty(t, out.NoteID)
		again, err := svc.ApplyApproval(ctx, id, st.DecisionID, admin.KeyID)
		require.NoError(t, err)
		require.Equal(t, out, again, "a repeated approval returns the same note")
		require.NoError(t, svc.Expire(ctx, id), "expiring a decided proposal changes nothing")
		_, n, err := svc.Decided(ctx, admin, id, st.DecisionID)
		require.NoError(t, err)
		require.Equal(t, "Refunds: validate first", n.Title)
		require.Equal(t, notes.OriginDistilled, n.Origin)
		require.Equal(t, &notes.Evidence{ConversationID: "abcd-1"}, n.Evidence)

		// The cap (1) is reached: the next approval is refused and the proposal stays pending.
		id2, err := svc.CreateDistillProposal(ctx, admin, turns.Scope{TaskID: "t-2"}, "support-bot")
		require.NoError(t, err)
		require.NoError(t, svc.MarkPending(ctx, id2, refundNote))
		_, err = svc.StageDecision(ctx, admin, id2, notes.DecisionApprove, nil, "")
		require.Equal(t, notes.CodeCapReached, fault.As(err).Code, "got %v", err)
		out, err = svc.ApplyApproval(ctx, id2, "", admin.KeyID)
		require.NoError(t, err)
		require.Equal(t, notes.ApprovalOutcome{RefusedCode: notes.CodeCapReached}, out)
		p, err = svc.GetProposal(ctx, admin, id2)
		require.NoError(t, err)
		require.Equal(t, notes.ProposalPending, p.Status)
		require.Equal(t, notes.CodeCapReached, *p.LastError)

		st, err = svc.StageDecision(ctx, admin, id2, notes.DecisionReject, nil, "duplicate")
		require.NoError(t, err)
		require.NoError(t, svc.ApplyRejection(ctx, id2, st.DecisionID, admin.KeyID))
		require.NoError(t, svc.ApplyRejection(ctx, id2, st.DecisionID, admin.KeyID))
		p, err = svc.GetProposal(ctx, admin, id2)
		require.NoError(t, err)
		require.Equal(t, notes.ProposalRejected, p.Status)
		require.Equal(t, "duplicate", *p.Reason)

		id3, err := svc.CreateDistillProposal(ctx, admin, turns.Scope{TaskID: "t-3"}, "support-bot")
		require.NoError(t, err)
		_, err = svc.StageDecision(ctx, admin, id3, notes.DecisionApprove, nil, "")
		require.Equal(t, notes.CodeProposalNotPending, fault.As(err).Code, "approving a drafting proposal is a conflict")
		require.NoError(t, svc.MarkFailed(ctx, id3, "personal_data", []string{"email"}))
		require.NoError(t, svc.MarkFailed(ctx, id3, "personal_data", []string{"email"}))
		p, err = svc.GetProposal(ctx, admin, id3)
		require.NoError(t, err)
		require.Equal(t, []string{"email"}, p.Kinds)
		require.Nil(t, p.Note)

		id4, err := svc.CreateDistillProposal(ctx, admin, turns.Scope{TaskID: "t-4"}, "support-bot")
		require.NoError(t, err)
		require.NoError(t, svc.MarkPending(ctx, id4, refundNote))
		require.NoError(t, svc.Expire(ctx, id4))
		require.NoError(t, svc.Expire(ctx, id4))
		p, err = svc.GetProposal(ctx, admin, id4)
		require.NoError(t, err)
		require.Equal(t, notes.ProposalExpired, p.Status)

		// Who may distil for whom.
		bot, err := auth.Authenticate(ctx, e.DB, e.AgentKey("other-bot", "acme", "agent_memory"))
		require.NoError(t, err)
		_, err = svc.CreateDistillProposal(ctx, bot, turns.Scope{TaskID: "t-5"}, "")
		require.Equal(t, notes.CodeScopeRequired, fault.As(err).Code)
		_, err = svc.CreateDistillProposal(ctx, admin, turns.Scope{TaskID: "t-5"}, "nobody")
		require.Equal(t, notes.CodeUnknownSource, fault.As(err).Code)
	})
}

func ptr(s string) *string { return &s }
