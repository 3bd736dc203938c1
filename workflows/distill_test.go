package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/workflows"
)

var a *activities.Activities

const pid = "prop_1"

var ref = activities.ProposalRef{ProposalID: pid}

type env struct {
	*testsuite.TestWorkflowEnvironment
}

func newEnv(t *testing.T) env {
	var s testsuite.WorkflowTestSuite
	e := s.NewTestWorkflowEnvironment()
	e.RegisterWorkflow(workflows.DistillWorkflow)
	e.RegisterActivity(&activities.Activities{})
	t.Cleanup(func() { e.AssertExpectations(t) })
	return env{e}
}

// result runs the workflow to its end and returns its Status.
func (e env) result(t *testing.T, in workflows.DistillInput) workflows.Status {
	t.Helper()
	e.ExecuteWorkflow(workflows.DistillWorkflow, in)
	require.True(t, e.IsWorkflowCompleted())
	require.NoError(t, e.GetWorkflowError())
	var st workflows.Status
	require.NoError(t, e.GetWorkflowResult(&st))
	return st
}

func (e env) pending() {
	e.OnActivity(a.CheckTurns, mock.Anything, ref).Return(activities.CheckResult{Turns: 12}, nil).Once()
	e.OnActivity(a.Draft, mock.Anything, ref).Return(activities.DraftResult{Outcome: proposals.StatusPending}, nil).Once()
}

func (e env) signal(after time.Duration, ap workflows.Approval) {
	e.RegisterDelayedCallback(func() { e.SignalWorkflow(workflows.ApprovalSignal, ap) }, after)
}

func approve(edits string) workflows.Approval {
	return workflows.Approval{Decision: proposals.DecisionApprove, ByKeyID: "key_rev", EditsID: edits}
}

func TestDistillStopsBeforeTheModel(t *testing.T) {
	for _, reason := range []string{activities.ReasonNoTurns, activities.ReasonUnconfirmedLink} {
		t.Run(reason, func(t *testing.T) {
			e := newEnv(t)
			e.OnActivity(a.CheckTurns, mock.Anything, ref).Return(activities.CheckResult{Turns: 3, Reason: reason}, nil).Once()
			e.OnActivity(a.Fail, mock.Anything, activities.FailInput{ProposalID: pid, Reason: reason}).Return(nil).Once()
			st := e.result(t, workflows.DistillInput{ProposalID: pid})
			require.Equal(t, workflows.Status{Status: proposals.StatusFailed, Reason: reason}, st)
			e.AssertNotCalled(t, "Draft", mock.Anything, mock.Anything)
		})
	}
}

func TestDistillDraftFailures(t *testing.T) {
	cases := []struct {
		name  string
		draft activities.DraftResult
		kinds []string
	}{
		{activities.ReasonNothingToPropose, activities.DraftResult{Outcome: activities.ReasonNothingToPropose}, nil},
		{activities.ReasonPersonalData, activities.DraftResult{Outcome: activities.ReasonPersonalData, Kinds: []string{"email"}}, []string{"email"}},
		{activities.ReasonNoTurns, activities.DraftResult{Outcome: activities.ReasonNoTurns}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.OnActivity(a.CheckTurns, mock.Anything, ref).Return(activities.CheckResult{Turns: 3}, nil).Once()
			e.OnActivity(a.Draft, mock.Anything, ref).Return(tc.draft, nil).Once()
			e.OnActivity(a.Fail, mock.Anything, activities.FailInput{ProposalID: pid, Reason: tc.name, Kinds: tc.kinds}).Return(nil).Once()
			st := e.result(t, workflows.DistillInput{ProposalID: pid})
			require.Equal(t, workflows.Status{Status: proposals.StatusFailed, Reason: tc.name}, st)
		})
	}
}

func TestDistillModelErrorAfterRetries(t *testing.T) {
	e := newEnv(t)
	e.OnActivity(a.CheckTurns, mock.Anything, ref).Return(activities.CheckResult{Turns: 3}, nil).Once()
	// Two unusable answers (retried), then a final one.
	e.OnActivity(a.Draft, mock.Anything, ref).Return(activities.DraftResult{}, temporal.NewApplicationError("bad", activities.ErrTypeBadAnswer)).Twice()
	e.OnActivity(a.Draft, mock.Anything, ref).Return(activities.DraftResult{}, temporal.NewNonRetryableApplicationError("bad", activities.ErrTypeModelError, nil)).Once()
	e.OnActivity(a.Fail, mock.Anything, activities.FailInput{ProposalID: pid, Reason: activities.ReasonModelError}).Return(nil).Once()
	st := e.result(t, workflows.DistillInput{ProposalID: pid})
	require.Equal(t, workflows.Status{Status: proposals.StatusFailed, Reason: activities.ReasonModelError}, st)
}

func TestDistillWaitsForTheModelServer(t *testing.T) {
	e := newEnv(t)
	e.OnActivity(a.CheckTurns, mock.Anything, ref).Return(activities.CheckResult{Turns: 3}, nil).Once()
	// Unreachable five times, then an answer: drafting lasts, the proposal ends pending.
	e.OnActivity(a.Draft, mock.Anything, ref).Return(activities.DraftResult{}, temporal.NewApplicationError("down", activities.ErrTypeModelUnavailable)).Times(5)
	e.OnActivity(a.Draft, mock.Anything, ref).Return(activities.DraftResult{Outcome: proposals.StatusPending}, nil).Once()
	e.OnActivity(a.Reject, mock.Anything, activities.DecisionInput{ProposalID: pid, ByKeyID: "key_rev"}).Return(nil).Once()
	e.signal(time.Hour, workflows.Approval{Decision: proposals.DecisionReject, ByKeyID: "key_rev"})
	st := e.result(t, workflows.DistillInput{ProposalID: pid})
	require.Equal(t, workflows.Status{Status: proposals.StatusRejected}, st)
}

func TestDistillModelWaitRunsOut(t *testing.T) {
	e := newEnv(t)
	e.OnActivity(a.CheckTurns, mock.Anything, ref).Return(activities.CheckResult{Turns: 3}, nil).Once()
	e.OnActivity(a.Draft, mock.Anything, ref).Return(activities.DraftResult{}, temporal.NewApplicationError("down", activities.ErrTypeModelUnavailable))
	e.OnActivity(a.Fail, mock.Anything, activities.FailInput{ProposalID: pid, Reason: activities.ReasonModelError}).Return(nil).Once()
	st := e.result(t, workflows.DistillInput{ProposalID: pid, ModelWait: 10 * time.Minute})
	require.Equal(t, workflows.Status{Status: proposals.StatusFailed, Reason: activities.ReasonModelError}, st)
}

func TestDistillApproved(t *testing.T) {
	e := newEnv(t)
	e.pending()
	e.OnActivity(a.Approve, mock.Anything, activities.DecisionInput{ProposalID: pid, ByKeyID: "key_rev", EditsID: "edit_1"}).
		Return(activities.ApproveOutcome{NoteID: "note_1"}, nil).Once()
	e.RegisterDelayedCallback(func() {
		v, err := e.QueryWorkflow(workflows.StatusQuery)
		require.NoError(t, err)
		var st workflows.Status
		require.NoError(t, v.Get(&st))
		require.Equal(t, workflows.Status{Status: proposals.StatusPending}, st)
	}, time.Hour)
	e.signal(2*time.Hour, approve("edit_1"))
	st := e.result(t, workflows.DistillInput{ProposalID: pid})
	require.Equal(t, workflows.Status{Status: proposals.StatusApproved, NoteID: "note_1"}, st)
}

func TestDistillSignalBeforeTheWait(t *testing.T) {
	e := newEnv(t)
	e.OnActivity(a.CheckTurns, mock.Anything, ref).Return(activities.CheckResult{Turns: 3}, nil).Once()
	// The model takes an hour; the approval arrives after a minute, while drafting.
	e.OnActivity(a.Draft, mock.Anything, ref).After(time.Hour).Return(activities.DraftResult{Outcome: proposals.StatusPending}, nil).Once()
	e.OnActivity(a.Approve, mock.Anything, activities.DecisionInput{ProposalID: pid, ByKeyID: "key_rev"}).
		Return(activities.ApproveOutcome{NoteID: "note_1"}, nil).Once()
	e.signal(time.Minute, approve(""))
	st := e.result(t, workflows.DistillInput{ProposalID: pid})
	require.Equal(t, workflows.Status{Status: proposals.StatusApproved, NoteID: "note_1"}, st)
}

func TestDistillDuplicateApprove(t *testing.T) {
	e := newEnv(t)
	e.pending()
	e.OnActivity(a.Approve, mock.Anything, activities.DecisionInput{ProposalID: pid, ByKeyID: "key_rev"}).
		Return(activities.ApproveOutcome{NoteID: "note_1"}, nil).Once()
	e.signal(time.Minute, approve(""))
	e.signal(time.Minute, approve(""))
	st := e.result(t, workflows.DistillInput{ProposalID: pid})
	require.Equal(t, workflows.Status{Status: proposals.StatusApproved, NoteID: "note_1"}, st)
}

func TestDistillRefusedEditsStayPending(t *testing.T) {
	e := newEnv(t)
	e.pending()
	e.OnActivity(a.Approve, mock.Anything, activities.DecisionInput{ProposalID: pid, ByKeyID: "key_rev", EditsID: "edit_pii"}).
		Return(activities.ApproveOutcome{RefusedKinds: []string{"phone"}}, nil).Once()
	e.OnActivity(a.Approve, mock.Anything, activities.DecisionInput{ProposalID: pid, ByKeyID: "key_rev", EditsID: "edit_ok"}).
		Return(activities.ApproveOutcome{NoteID: "note_2"}, nil).Once()
	e.signal(time.Minute, approve("edit_pii"))
	e.RegisterDelayedCallback(func() {
		v, err := e.QueryWorkflow(workflows.StatusQuery)
		require.NoError(t, err)
		var st workflows.Status
		require.NoError(t, v.Get(&st))
		require.Equal(t, proposals.StatusPending, st.Status, "refused edits keep the proposal pending")
	}, 2*time.Minute)
	e.signal(3*time.Minute, approve("edit_ok"))
	st := e.result(t, workflows.DistillInput{ProposalID: pid})
	require.Equal(t, workflows.Status{Status: proposals.StatusApproved, NoteID: "note_2"}, st)
}

func TestDistillRejected(t *testing.T) {
	e := newEnv(t)
	e.pending()
	e.OnActivity(a.Reject, mock.Anything, activities.DecisionInput{ProposalID: pid, ByKeyID: "key_rev"}).Return(nil).Once()
	e.signal(time.Minute, workflows.Approval{Decision: "maybe", ByKeyID: "key_rev"})
	e.signal(2*time.Minute, workflows.Approval{Decision: proposals.DecisionReject, ByKeyID: "key_rev"})
	st := e.result(t, workflows.DistillInput{ProposalID: pid})
	require.Equal(t, workflows.Status{Status: proposals.StatusRejected}, st)
}

func TestDistillExpires(t *testing.T) {
	e := newEnv(t)
	e.pending()
	e.OnActivity(a.Expire, mock.Anything, ref).Return(nil).Once()
	start := e.Now()
	st := e.result(t, workflows.DistillInput{ProposalID: pid})
	require.Equal(t, workflows.Status{Status: proposals.StatusExpired}, st)
	require.GreaterOrEqual(t, e.Now().Sub(start), 14*24*time.Hour, "the default deadline is 14 days")
	require.Less(t, e.Now().Sub(start), 15*24*time.Hour)
}

func TestDistillCustomDeadline(t *testing.T) {
	e := newEnv(t)
	e.pending()
	e.OnActivity(a.Expire, mock.Anything, ref).Return(nil).Once()
	e.signal(2*time.Hour, approve("")) // after the deadline: too late
	st := e.result(t, workflows.DistillInput{ProposalID: pid, ApprovalDeadline: time.Hour})
	require.Equal(t, workflows.Status{Status: proposals.StatusExpired}, st)
}

// Issue 11 §3: the model call runs with a heartbeat timeout (Draft heartbeats while it waits),
// so a worker lost during the call is noticed in seconds, not after StartToClose (5 minutes).
func TestDistillDraftHasAHeartbeatTimeout(t *testing.T) {
	e := newEnv(t)
	e.OnActivity(a.CheckTurns, mock.Anything, ref).Return(activities.CheckResult{Turns: 12}, nil).Once()
	var heartbeat time.Duration
	e.OnActivity(a.Draft, mock.Anything, ref).Return(func(ctx context.Context, _ activities.ProposalRef) (activities.DraftResult, error) {
		heartbeat = activity.GetInfo(ctx).HeartbeatTimeout
		return activities.DraftResult{Outcome: activities.ReasonNothingToPropose}, nil
	}).Once()
	e.OnActivity(a.Fail, mock.Anything, mock.Anything).Return(nil).Once()
	st := e.result(t, workflows.DistillInput{ProposalID: pid})
	require.Equal(t, proposals.StatusFailed, st.Status)
	require.Equal(t, workflows.DraftHeartbeatTimeout, heartbeat)
	require.Equal(t, 20*time.Second, heartbeat)
}
