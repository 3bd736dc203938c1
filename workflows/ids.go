package workflows

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/internal/proposals"
)

// DefaultTaskQueue is the task queue the worker polls unless AGENTMEMORY_TASK_QUEUE says
// otherwise.
const DefaultTaskQueue = "agentmemory"

// Workflow ids, derived from domain ids so that a repeated start of the same row never runs
// two workflows, and so that the API (approvals, status) and the worker's reconciler find a
// row's workflow from the row alone.
//
// One format, "<kind>-" + id (issue 30). Distillations started by earlier releases run (or
// are retained) under the legacy "distill/" + id (LegacyDistillID): the ids are the only link
// between a proposal and its workflow, so every helper that finds a distillation by its
// proposal (SendApproval, AwaitOutcome, the worker's reconciler) looks under DistillID first
// and under LegacyDistillID when Temporal answers NotFound. A proposal's workflow is started
// under DistillID only; the reconciler never starts one whose legacy workflow exists. The
// fallback can go once no proposal of an earlier release is still drafting or pending
// (their approval deadline, AGENTMEMORY_APPROVAL_DEADLINE, bounds that) and the namespace's
// retention has dropped their closed workflows. Recorded histories (testdata) replay whatever
// their id.

// DistillID is the workflow id of a proposal's distillation, "distill-" + proposalID.
func DistillID(proposalID string) string { return "distill-" + proposalID }

// LegacyDistillID is the id earlier releases started a proposal's distillation under,
// "distill/" + proposalID: looked up, never started.
func LegacyDistillID(proposalID string) string { return "distill/" + proposalID }

// DistillIDs are the ids a proposal's distillation may run under, in the order to look:
// DistillID, then LegacyDistillID.
func DistillIDs(proposalID string) [2]string {
	return [2]string{DistillID(proposalID), LegacyDistillID(proposalID)}
}

// isNotFound reports whether err is Temporal's *serviceerror.NotFound.
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// ErasureWorkflowID is the workflow id of erasure erasureID, "erasure-" + erasureID.
func ErasureWorkflowID(erasureID string) string { return "erasure-" + erasureID }

// ExportWorkflowID is the workflow id of export exportID, "export-" + exportID.
func ExportWorkflowID(exportID string) string { return "export-" + exportID }

// NoteErasureWorkflowID is the workflow id of an agent-note erasure request requestID,
// "note-erasure-" + requestID.
func NoteErasureWorkflowID(requestID string) string { return "note-erasure-" + requestID }

// SweepWorkflowID is the workflow id of a sweep started on request (requestID unique),
// "retention-sweep-" + requestID.
func SweepWorkflowID(requestID string) string { return "retention-sweep-" + requestID }

// RetentionScheduleID is the id of the Temporal Schedule that runs RetentionSweepWorkflow;
// each run's workflow id is RetentionScheduleID + "-run" (Temporal appends the time).
const RetentionScheduleID = "agentmemory-retention-sweep"

// ApprovalSignal is the name of the signal a reviewer's decision reaches DistillWorkflow by;
// its payload is Approval.
const ApprovalSignal = "approval"

// Approval is ApprovalSignal's payload: ids only. The API checks the approver's role and the
// proposal's state, gates and stores the edits itself, and sends their id here; never the
// edited text.
type Approval struct {
	// Decision is proposals.DecisionApprove or proposals.DecisionReject (internal/proposals'
	// words, carried in workflow history as they are: "approve", "reject").
	Decision string
	// ByKeyID is the deciding key's id.
	ByKeyID string
	// EditsID names the edits the API stored for this approval; "" for none.
	EditsID string
}

// StatusQuery is the name of the query answering DistillWorkflow's Status.
const StatusQuery = "status"

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

// DistillStart is the input every starter of DistillWorkflow gives a proposal, the API's
// POST /v1/agent-memory/distill and the worker's reconciler alike: the proposal's id and the
// configured approval deadline (AGENTMEMORY_APPROVAL_DEADLINE; 0 is
// DefaultApprovalDeadline).
func DistillStart(proposalID string, approvalDeadline time.Duration) DistillInput {
	return DistillInput{ProposalID: proposalID, ApprovalDeadline: approvalDeadline}
}

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
	if a.Decision != proposals.DecisionApprove && a.Decision != proposals.DecisionReject {
		return errors.New("workflows: decision must be approve or reject")
	}
	var err error
	for _, id := range DistillIDs(proposalID) {
		if err = c.SignalWorkflow(ctx, id, "", ApprovalSignal, a); !isNotFound(err) {
			return err
		}
	}
	return err
}

// AwaitOutcome waits up to wait for the proposal's DistillWorkflow to end and returns its
// final Status and true; when it has not ended by then, false (the API answers 202).
func AwaitOutcome(ctx context.Context, c Getter, proposalID string, wait time.Duration) (Status, bool, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var st Status
	var err error
	for _, id := range DistillIDs(proposalID) {
		if err = c.GetWorkflow(wctx, id, "").Get(wctx, &st); !isNotFound(err) {
			break
		}
	}
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
