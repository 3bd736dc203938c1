// Package workflows holds the deterministic Temporal workflows. They use only workflow.*
// APIs, call every side effect as an activity, and carry ids, never note text, turn text or
// personal data, so nothing erasable is written into Temporal's history.
package workflows

import (
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/proposals"
)

const reuseRejectDuplicate = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE

// DraftHeartbeatTimeout is the heartbeat timeout of the Draft activity, which heartbeats
// every activities.DefaultHeartbeatEvery (5 s) while it waits for the model: a worker lost
// during a model call is noticed after this long and the call retried on another worker,
// instead of after the 5-minute StartToClose timeout (issue 11 §3). Activity options are not
// part of replay's command matching (activity type and id are), so histories recorded before
// it replay unchanged without a workflow.GetVersion guard (TestDistillReplay replays
// testdata/distill_approved.json, recorded without the heartbeat timeout).
const DraftHeartbeatTimeout = 20 * time.Second

// Defaults of DistillInput's durations.
const (
	DefaultApprovalDeadline = 14 * 24 * time.Hour
	DefaultModelWait        = 7 * 24 * time.Hour
	DefaultRetryInterval    = 2 * time.Second
)

// DistillInput starts DistillWorkflow: the proposal's id (its space and conversation live in
// the proposal) and the durations, zero meaning the defaults.
type DistillInput struct {
	ProposalID string
	// ApprovalDeadline is how long a pending proposal waits for a decision before it
	// expires (default 14 days).
	ApprovalDeadline time.Duration
	// ModelWait is how long drafting waits for an answering model server before the
	// proposal fails with model_error (default 7 days).
	ModelWait time.Duration
	// RetryInterval is the first retry interval of every activity (default 2 s); it doubles
	// up to one minute.
	RetryInterval time.Duration
}

// DistillWorkflow distils one note from a conversation for human approval (AM-9):
//
//  1. CheckTurns: no masked turns in the last 90 days -> failed no_turns; a conversation tied
//     to its subject only by unconfirmed identity links -> failed unconfirmed_link (the model
//     is never called).
//  2. Draft: asks the model (retried while the server is unreachable, up to ModelWait; an
//     unusable answer is retried a few times) and gates the note: model_error,
//     nothing_to_propose, personal_data or instruction end it failed; otherwise the proposal
//     is pending.
//  3. Waits for ApprovalSignal (buffered: a decision sent earlier is kept) or the
//     ApprovalDeadline (default 14 days -> expired). Approve writes the note through the
//     store, which gates the edits again: refused edits keep it pending and waiting; reject
//     ends it rejected. Later signals are ignored.
//
// It answers StatusQuery with its Status and returns the final Status.
func DistillWorkflow(ctx workflow.Context, in DistillInput) (Status, error) {
	d := distill{in: in, st: Status{Status: proposals.StatusDrafting}}
	if err := workflow.SetQueryHandler(ctx, StatusQuery, func() (Status, error) { return d.st, nil }); err != nil {
		return d.st, err
	}
	return d.run(ctx)
}

type distill struct {
	in DistillInput
	st Status
}

var a *activities.Activities

func (d *distill) retry(maxAttempts int32) *temporal.RetryPolicy {
	first := d.in.RetryInterval
	if first <= 0 {
		first = DefaultRetryInterval
	}
	return &temporal.RetryPolicy{InitialInterval: first, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: maxAttempts}
}

func (d *distill) run(ctx workflow.Context) (Status, error) {
	ref := activities.ProposalRef{ProposalID: d.in.ProposalID}
	// Store activities retry until the database answers.
	storeCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second, RetryPolicy: d.retry(0),
	})

	var check activities.CheckResult
	if err := workflow.ExecuteActivity(storeCtx, a.CheckTurns, ref).Get(ctx, &check); err != nil {
		return d.st, err
	}
	if check.Reason != "" {
		return d.fail(storeCtx, check.Reason, nil)
	}

	wait := d.in.ModelWait
	if wait <= 0 {
		wait = DefaultModelWait
	}
	rp := d.retry(0)
	rp.NonRetryableErrorTypes = []string{activities.ErrTypeModelError}
	modelCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute, ScheduleToCloseTimeout: wait, RetryPolicy: rp,
		HeartbeatTimeout: DraftHeartbeatTimeout,
	})
	var draft activities.DraftResult
	if err := workflow.ExecuteActivity(modelCtx, a.Draft, ref).Get(ctx, &draft); err != nil {
		var ae *temporal.ApplicationError
		var te *temporal.TimeoutError
		if errors.As(err, &ae) || errors.As(err, &te) {
			return d.fail(storeCtx, activities.ReasonModelError, nil)
		}
		return d.st, err
	}
	if draft.Outcome != proposals.StatusPending {
		return d.fail(storeCtx, draft.Outcome, draft.Kinds)
	}
	d.st.Status = proposals.StatusPending
	return d.await(ctx, storeCtx)
}

// await waits for a decision or the deadline.
func (d *distill) await(ctx, storeCtx workflow.Context) (Status, error) {
	deadline := d.in.ApprovalDeadline
	if deadline <= 0 {
		deadline = DefaultApprovalDeadline
	}
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	timer := workflow.NewTimer(timerCtx, deadline)
	signals := workflow.GetSignalChannel(ctx, ApprovalSignal)
	logger := workflow.GetLogger(ctx)
	for {
		var ap Approval
		expired := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &ap) })
		sel.AddFuture(timer, func(workflow.Future) { expired = true })
		sel.Select(ctx)
		if expired {
			if err := workflow.ExecuteActivity(storeCtx, a.Expire, activities.ProposalRef{ProposalID: d.in.ProposalID}).Get(ctx, nil); err != nil {
				return d.st, err
			}
			d.st = Status{Status: proposals.StatusExpired}
			return d.st, nil
		}
		in := activities.DecisionInput{ProposalID: d.in.ProposalID, EditsID: ap.EditsID, ByKeyID: ap.ByKeyID}
		switch ap.Decision {
		case proposals.DecisionApprove:
			var out activities.ApproveOutcome
			if err := workflow.ExecuteActivity(storeCtx, a.Approve, in).Get(ctx, &out); err != nil {
				return d.st, err
			}
			if out.Refused() {
				logger.Info("approval refused; still pending", "code", out.RefusedCode, "kinds", out.RefusedKinds)
				continue
			}
			d.st = Status{Status: proposals.StatusApproved, NoteID: out.NoteID}
			return d.st, nil
		case proposals.DecisionReject:
			if err := workflow.ExecuteActivity(storeCtx, a.Reject, in).Get(ctx, nil); err != nil {
				return d.st, err
			}
			d.st = Status{Status: proposals.StatusRejected}
			return d.st, nil
		default:
			logger.Warn("ignored an approval signal with an unknown decision")
		}
	}
}

func (d *distill) fail(storeCtx workflow.Context, reason string, kinds []string) (Status, error) {
	in := activities.FailInput{ProposalID: d.in.ProposalID, Reason: reason, Kinds: kinds}
	if err := workflow.ExecuteActivity(storeCtx, a.Fail, in).Get(storeCtx, nil); err != nil {
		return d.st, err
	}
	d.st = Status{Status: proposals.StatusFailed, Reason: reason}
	return d.st, nil
}
