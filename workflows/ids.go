package workflows

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/activities"
)

// DefaultTaskQueue is the task queue the worker polls unless AGENTMEMORY_TASK_QUEUE says
// otherwise.
const DefaultTaskQueue = "agentmemory"

// DistillID is the workflow id of a proposal's distillation: derived from the proposal id,
// so a repeated start of the same proposal never runs two workflows.
func DistillID(proposalID string) string { return "distill/" + proposalID }

// ApprovalSignal is the name of the signal a reviewer's decision reaches DistillWorkflow by;
// its payload is Approval.
const ApprovalSignal = "approval"

// Decisions of an Approval (internal/proposals' words, through activities).
const (
	DecisionApprove = activities.DecisionApprove
	DecisionReject  = activities.DecisionReject
)

// Approval is ApprovalSignal's payload: ids only. The API checks the approver's role and the
// proposal's state, gates and stores the edits itself, and sends their id here; never the
// edited text.
type Approval struct {
	// Decision is DecisionApprove or DecisionReject.
	Decision string
	// ByKeyID is the deciding key's id.
	ByKeyID string
	// EditsID names the edits the API stored for this approval; "" for none.
	EditsID string
}

// StatusQuery is the name of the query answering DistillWorkflow's Status.
const StatusQuery = "status"

// Proposal statuses as DistillWorkflow reports them: internal/proposals' statuses (defined
// there once), through activities.
const (
	StatusDrafting = activities.StatusDrafting
	StatusPending  = activities.StatusPending
	StatusApproved = activities.StatusApproved
	StatusRejected = activities.StatusRejected
	StatusFailed   = activities.StatusFailed
	StatusExpired  = activities.StatusExpired
)

// Status is DistillWorkflow's result and the answer of StatusQuery: the proposal's status,
// the reason (for failed) and the note's id (once approved).
type Status struct {
	Status string
	Reason string `json:",omitempty"`
	NoteID string `json:",omitempty"`
}

// Starter, Signaler and Getter are the pieces of the Temporal client the helpers use;
// client.Client has all three.
type (
	Starter interface {
		ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
	}
	Signaler interface {
		SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
	}
	Getter interface {
		GetWorkflow(ctx context.Context, workflowID, runID string) client.WorkflowRun
	}
)

// StartDistill starts DistillWorkflow for in.ProposalID on taskQueue. Starting a proposal
// whose workflow exists (running or closed) fails with
// *serviceerror.WorkflowExecutionAlreadyStarted.
func StartDistill(ctx context.Context, c Starter, taskQueue string, in DistillInput) error {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       DistillID(in.ProposalID),
		TaskQueue:                                taskQueue,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		WorkflowIDReusePolicy:                    reuseRejectDuplicate,
	}, DistillWorkflow, in)
	return err
}

// SendApproval delivers a decision to the proposal's DistillWorkflow. A workflow that ended
// (already approved, rejected, expired or failed) is *serviceerror.NotFound: the caller
// answers from the stored proposal (a repeated approve returns the same note).
func SendApproval(ctx context.Context, c Signaler, proposalID string, a Approval) error {
	if a.Decision != DecisionApprove && a.Decision != DecisionReject {
		return errors.New("workflows: decision must be approve or reject")
	}
	return c.SignalWorkflow(ctx, DistillID(proposalID), "", ApprovalSignal, a)
}

// AwaitOutcome waits up to wait for the proposal's DistillWorkflow to end and returns its
// final Status and true; when it has not ended by then, false (the API answers 202).
func AwaitOutcome(ctx context.Context, c Getter, proposalID string, wait time.Duration) (Status, bool, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var st Status
	err := c.GetWorkflow(wctx, DistillID(proposalID), "").Get(wctx, &st)
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			return Status{}, false, nil
		}
		return Status{}, false, err
	}
	return st, true, nil
}

// DefaultDecisionWait is how long Decisions.Deliver waits for a DistillWorkflow to apply a
// decision before its caller answers 202 (the decision still pending).
const DefaultDecisionWait = 5 * time.Second

// Decisions delivers reviewers' decisions to DistillWorkflows over the Temporal client
// (internal/proposals.Workflow: the package owns the interface, this is its Temporal side).
// Wait bounds the wait for the workflow's end (0: DefaultDecisionWait); Log, when set,
// records an outcome that stayed unknown (never ids).
type Decisions struct {
	Client interface {
		Signaler
		Getter
	}
	Wait time.Duration
	Log  *slog.Logger
}

// Deliver sends ApprovalSignal with {decision, byKeyID, decisionID} (ids only) to proposal
// proposalID's DistillWorkflow and waits up to d.Wait for the workflow to end. It reports
// false, nil when the workflow no longer exists (*serviceerror.NotFound: it ended, or its
// history is gone); an error when the signal could not be sent. The answer comes from the
// stored proposal afterwards: the workflow's own result, or its failure to end in time,
// only tells when to look.
func (d Decisions) Deliver(ctx context.Context, proposalID, decision, byKeyID, decisionID string) (bool, error) {
	err := SendApproval(ctx, d.Client, proposalID, Approval{Decision: decision, ByKeyID: byKeyID, EditsID: decisionID})
	var missing *serviceerror.NotFound
	if errors.As(err, &missing) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	wait := d.Wait
	if wait <= 0 {
		wait = DefaultDecisionWait
	}
	if _, _, err := AwaitOutcome(ctx, d.Client, proposalID, wait); err != nil && d.Log != nil {
		d.Log.WarnContext(ctx, "distillation outcome unknown")
	}
	return true, nil
}
