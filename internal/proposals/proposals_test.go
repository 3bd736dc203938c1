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
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/models"
)

// distilEnv is a space with agent memory on (cap 1), an agent support-bot and a distilled
// proposal in drafting; it returns the service, the admin principal and the proposal id.
func distilEnv(t *testing.T, e *apptest.Env) (*proposals.Service, auth.Principal, string) {
	t.Helper()
	e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true, "max_notes_per_source": 1}})
	e.AgentKey("support-bot", "acme", "agent_memory")
	admin, err := auth.Authenticate(context.Background(), e.DB, e.AdminKey)
	require.NoError(t, err)
	svc := e.Deps.Proposals
	id, err := svc.CreateDistillProposal(context.Background(), admin, turns.Scope{ConversationID: "abcd-1"}, "support-bot")
	require.NoError(t, err)
	return svc, admin, id
}

// workflow stands in for the DistillWorkflow behind proposals.Workflow: it applies each
// delivered decision at once through the workflow's side of the store (ApplyApproval,
// ApplyRejection), as the workflow's activities do; gone answers "no workflow", hold
// delivers without applying.
type workflow struct {
	svc        *proposals.Service
	gone, hold bool
	calls      int
	last       string // the last delivered decision id
}

func (w *workflow) Deliver(ctx context.Context, id, decision, byKey, decisionID string) (bool, error) {
	w.calls++
	w.last = decisionID
	switch {
	case w.gone:
		return false, nil
	case w.hold:
		return true, nil
	case decision == proposals.DecisionApprove:
		_, err := w.svc.ApplyApproval(ctx, id, decisionID, byKey)
		return true, err
	default:
		return true, w.svc.ApplyRejection(ctx, id, decisionID, byKey)
	}
}

func decisions(t *testing.T, e *apptest.Env) int {
	t.Helper()
	n, err := e.DB.NewSelect().Model((*models.ProposalDecision)(nil)).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

var refundNote = notes.ProposedNote{Kind: "procedure", Title: "Refunds", Body: "Validate the purchase first.", Tags: []string{"refund"}}

func ptr(s string) *string { return &s }

// The workflow's side of a distilled proposal is idempotent, as activities may run twice:
// pending, failed, approved, rejected and expired each hold when applied again, and an
// approval is refused (not failed) when the cap or the gate says no. Decide stages the
// decision (checked first) and hands it to the workflow.
func TestDistilledProposalStoreIsIdempotent(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		store, admin, id := distilEnv(t, e)
		wf := &workflow{svc: store}
		svc := store.WithWorkflow(wf)

		space, ev, err := svc.Distillation(ctx, id)
		require.NoError(t, err)
		require.Equal(t, e.SpaceID, space)
		require.Equal(t, notes.Evidence{ConversationID: "abcd-1"}, ev)

		require.NoError(t, svc.SetLastError(ctx, id, "model_unreachable"))
		p, err := svc.Get(ctx, admin, id)
		require.NoError(t, err)
		require.Equal(t, "model_unreachable", *p.LastError)

		require.NoError(t, svc.MarkPending(ctx, id, refundNote))
		require.NoError(t, svc.MarkPending(ctx, id, refundNote), "a retried MarkPending changes nothing")
		p, err = svc.Get(ctx, admin, id)
		require.NoError(t, err)
		require.Equal(t, proposals.StatusPending, p.Status)
		require.Nil(t, p.LastError)
		require.Equal(t, "Refunds", p.Note.Title)

		// A reviewer's edits with personal data never reach storage nor the workflow.
		_, err = svc.Decide(ctx, admin, id, proposals.Decision{Kind: proposals.DecisionApprove, Edits: &notes.Patch{Body: ptr("Mail ana@example.com")}})
		require.Equal(t, notes.CodePersonalData, fault.As(err).Code, "got %v", err)
		require.Zero(t, decisions(t, e))
		require.Zero(t, wf.calls)
		res, err := svc.Decide(ctx, admin, id, proposals.Decision{Kind: proposals.DecisionApprove, Edits: &notes.Patch{Title: ptr("Refunds: validate first")}})
		require.NoError(t, err)
		require.True(t, res.Created, "this call's decision was applied")
		require.Equal(t, "Refunds: validate first", res.Note.Title)
		require.Equal(t, notes.OriginDistilled, res.Note.Origin)
		require.Equal(t, &notes.Evidence{ConversationID: "abcd-1"}, res.Note.Evidence)

		again, err := svc.ApplyApproval(ctx, id, wf.last, admin.KeyID)
		require.NoError(t, err)
		require.Equal(t, proposals.ApprovalOutcome{NoteID: res.Note.ID}, again, "a repeated approval returns the same note")
		require.NoError(t, svc.Expire(ctx, id), "expiring a decided proposal changes nothing")
		rep, err := svc.Decide(ctx, admin, id, proposals.Decision{Kind: proposals.DecisionApprove})
		require.NoError(t, err)
		require.False(t, rep.Created, "a repeated approve answers the note, not created")
		require.Equal(t, res.Note.ID, rep.Note.ID)

		// The cap (1) is reached: the next approval is refused and the proposal stays pending.
		id2, err := svc.CreateDistillProposal(ctx, admin, turns.Scope{TaskID: "t-2"}, "support-bot")
		require.NoError(t, err)
		require.NoError(t, svc.MarkPending(ctx, id2, refundNote))
		_, err = svc.Decide(ctx, admin, id2, proposals.Decision{Kind: proposals.DecisionApprove})
		require.Equal(t, notes.CodeCapReached, fault.As(err).Code, "got %v", err)
		out, err := svc.ApplyApproval(ctx, id2, "", admin.KeyID)
		require.NoError(t, err)
		require.Equal(t, proposals.ApprovalOutcome{RefusedCode: notes.CodeCapReached}, out)
		p, err = svc.Get(ctx, admin, id2)
		require.NoError(t, err)
		require.Equal(t, proposals.StatusPending, p.Status)
		require.Equal(t, notes.CodeCapReached, *p.LastError)

		res, err = svc.Decide(ctx, admin, id2, proposals.Decision{Kind: proposals.DecisionReject, Reason: "duplicate"})
		require.NoError(t, err)
		require.Equal(t, proposals.StatusRejected, res.Proposal.Status)
		require.NoError(t, svc.ApplyRejection(ctx, id2, wf.last, admin.KeyID))
		p, err = svc.Get(ctx, admin, id2)
		require.NoError(t, err)
		require.Equal(t, proposals.StatusRejected, p.Status)
		require.Equal(t, "duplicate", *p.Reason)
		_, err = svc.Decide(ctx, admin, id2, proposals.Decision{Kind: proposals.DecisionReject})
		require.Equal(t, proposals.CodeNotPending, fault.As(err).Code, "rejecting twice is a conflict")

		id3, err := svc.CreateDistillProposal(ctx, admin, turns.Scope{TaskID: "t-3"}, "support-bot")
		require.NoError(t, err)
		_, err = svc.Decide(ctx, admin, id3, proposals.Decision{Kind: proposals.DecisionApprove})
		require.Equal(t, proposals.CodeNotPending, fault.As(err).Code, "approving a drafting proposal is a conflict")
		require.NoError(t, svc.MarkFailed(ctx, id3, "personal_data", []string{"email"}))
		require.NoError(t, svc.MarkFailed(ctx, id3, "personal_data", []string{"email"}))
		p, err = svc.Get(ctx, admin, id3)
		require.NoError(t, err)
		require.Equal(t, []string{"email"}, p.Kinds)
		require.Nil(t, p.Note)

		id4, err := svc.CreateDistillProposal(ctx, admin, turns.Scope{TaskID: "t-4"}, "support-bot")
		require.NoError(t, err)
		require.NoError(t, svc.MarkPending(ctx, id4, refundNote))
		require.NoError(t, svc.Expire(ctx, id4))
		require.NoError(t, svc.Expire(ctx, id4))
		p, err = svc.Get(ctx, admin, id4)
		require.NoError(t, err)
		require.Equal(t, proposals.StatusExpired, p.Status)

		// Who may distil for whom.
		bot, err := auth.Authenticate(ctx, e.DB, e.AgentKey("other-bot", "acme", "agent_memory"))
		require.NoError(t, err)
		_, err = svc.CreateDistillProposal(ctx, bot, turns.Scope{TaskID: "t-5"}, "")
		require.Equal(t, notes.CodeScopeRequired, fault.As(err).Code)
		_, err = svc.CreateDistillProposal(ctx, admin, turns.Scope{TaskID: "t-5"}, "nobody")
		require.Equal(t, notes.CodeUnknownSource, fault.As(err).Code)
	})
}

// Decide chooses the path itself: a decision the workflow has not applied yet is Pending
// (202); a distilled proposal whose workflow is gone is decided directly; without a
// Workflow every proposal is decided directly.
func TestDecideChoosesThePath(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		store, admin, id := distilEnv(t, e)
		require.NoError(t, store.MarkPending(ctx, id, refundNote))

		held := &workflow{svc: store, hold: true}
		res, err := store.WithWorkflow(held).Decide(ctx, admin, id, proposals.Decision{Kind: proposals.DecisionReject})
		require.NoError(t, err)
		require.Equal(t, proposals.Result{Pending: true}, res)
		require.Equal(t, 1, held.calls)
		require.Equal(t, 1, decisions(t, e), "the decision is staged for the workflow")

		gone := &workflow{svc: store, gone: true}
		res, err = store.WithWorkflow(gone).Decide(ctx, admin, id, proposals.Decision{Kind: proposals.DecisionApprove})
		require.NoError(t, err)
		require.True(t, res.Created, "decided directly when the workflow is gone")
		require.Equal(t, 1, gone.calls)

		id2, err := store.CreateDistillProposal(ctx, admin, turns.Scope{TaskID: "t-2"}, "support-bot")
		require.NoError(t, err)
		require.NoError(t, store.MarkPending(ctx, id2, refundNote))
		res, err = store.Decide(ctx, admin, id2, proposals.Decision{Kind: proposals.DecisionReject, Reason: "too specific"})
		require.NoError(t, err, "no Workflow: decided directly")
		require.Equal(t, "too specific", *res.Proposal.Reason)

		_, err = store.Decide(ctx, admin, id2, proposals.Decision{Kind: "maybe"})
		require.Equal(t, "invalid_member", fault.As(err).Code)
		reviewer, err := auth.Authenticate(ctx, e.DB, e.PersonKey("rita", "reviewer"))
		require.NoError(t, err)
		e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true, "reviewer_approves": false}})
		_, err = store.Decide(ctx, reviewer, id2, proposals.Decision{Kind: proposals.DecisionReject})
		require.Equal(t, "role_required", fault.As(err).Code)
	})
}
