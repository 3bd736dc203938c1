package workflows

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/client"
)

// DefaultTaskQueue is the task queue the worker polls unless AGENTMEMORY_TASK_QUEUE says
// otherwise.
const DefaultTaskQueue = "agentmemory"

// Workflow ids, derived from domain ids so that a repeated start of the same row never runs
// two workflows, and so that the API (approvals, status) and the worker's reconciler find a
// row's workflow from the row alone.
//
// Two formats coexist, "distill/" + id and "<kind>-" + id, and stay as they are (issue 13):
// the ids are the only link between a row and its workflow. Rows created by earlier releases
// have workflows running (or retained) under these exact ids; a new format would make the
// reconciler find no workflow for such a row and start a second one, and an approval would
// signal a workflow that does not exist. The recorded histories in testdata replay under
// them too. New workflows use "<kind>-" + id.

// DistillID is the workflow id of a proposal's distillation, "distill/" + proposalID.
func DistillID(proposalID string) string { return "distill/" + proposalID }

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

// Decisions of an Approval.
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
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

// Proposal statuses as DistillWorkflow sees them.
const (
	StatusDrafting = "drafting"
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusRejected = "rejected"
	StatusFailed   = "failed"
	StatusExpired  = "expired"
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
