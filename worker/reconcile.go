package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/workflows"
)

// Starter implements compliance.WorkflowStarter with Temporal: it starts the ErasureWorkflow,
// ExportWorkflow, AgentMemoryExportWorkflow or DistillWorkflow (with the API's inputs: workflows.DistillStart and
// ApprovalDeadline) of an orphaned row on TaskQueue, under
// the row's deterministic workflow id (workflows.ErasureWorkflowID, workflows.ExportWorkflowID,
// workflows.DistillID), only when
// DescribeWorkflowExecution answers NotFound (for a proposal, under workflows.LegacyDistillID
// too: a distillation an earlier release started). The start refuses duplicate ids
// (WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE), so a workflow that already ran and finished
// (within the namespace's retention) is never run again, even when another starter raced
// this one.
type Starter struct {
	Client    client.Client
	TaskQueue string
	// ApprovalDeadline is AGENTMEMORY_APPROVAL_DEADLINE, the one the API starts
	// distillations with (0: workflows.DefaultApprovalDeadline).
	ApprovalDeadline time.Duration
}

var _ compliance.WorkflowStarter = Starter{}

// StartMissing starts o's workflow unless one with its id exists; it reports whether it did,
// or, when the workflow exists and has ended, how it ended (compliance.Closed*; a run that
// continued as new counts as running, since its id names the newest run).
func (s Starter) StartMissing(ctx context.Context, o compliance.Orphan) (compliance.StartResult, error) {
	var id string
	var wf, arg any
	switch o.Kind {
	case compliance.WorkflowErasure:
		id, wf, arg = workflows.ErasureWorkflowID(o.ID), workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: o.SpaceID, ErasureID: o.ID}
	case compliance.WorkflowExport:
		id, wf, arg = workflows.ExportWorkflowID(o.ID), workflows.ExportWorkflow, workflows.ExportInput{SpaceID: o.SpaceID, ExportID: o.ID}
	case compliance.WorkflowDistill:
		id, wf, arg = workflows.DistillID(o.ID), workflows.DistillWorkflow, workflows.DistillStart(o.ID, s.ApprovalDeadline)
	case compliance.WorkflowAgentMemoryExport:
		id, wf, arg = workflows.AgentMemoryExportWorkflowID(o.ID), workflows.AgentMemoryExportWorkflow, workflows.AgentMemoryExportInput{SpaceID: o.SpaceID, ExportID: o.ID}
	default:
		return compliance.StartResult{}, fmt.Errorf("worker: unknown workflow kind %q", o.Kind)
	}
	ids := []string{id}
	if o.Kind == compliance.WorkflowDistill {
		ids = append(ids, workflows.LegacyDistillID(o.ID)) // started by an earlier release (workflows/ids.go)
	}
	for _, look := range ids {
		desc, err := s.Client.DescribeWorkflowExecution(ctx, look, "")
		if err == nil {
			// Running, or finished: not ours to start; say how it ended.
			return compliance.StartResult{Closed: closedAs(desc.GetWorkflowExecutionInfo().GetStatus())}, nil
		}
		var notFound *serviceerror.NotFound
		if !errors.As(err, &notFound) {
			return compliance.StartResult{}, fmt.Errorf("worker: describe %s: %w", o.Kind, err)
		}
	}
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: s.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, wf, arg)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return compliance.StartResult{}, nil // started (or finished) meanwhile by someone else; the next pass looks again
	}
	if err != nil {
		return compliance.StartResult{}, fmt.Errorf("worker: start %s: %w", o.Kind, err)
	}
	return compliance.StartResult{Started: true}, nil
}

// closedAs maps a Temporal execution status to compliance's Closed* value: "" for running,
// continued-as-new and unknown statuses (never treated as ended).
func closedAs(st enumspb.WorkflowExecutionStatus) string {
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return compliance.ClosedCompleted
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return compliance.ClosedFailed
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return compliance.ClosedCanceled
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return compliance.ClosedTerminated
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return compliance.ClosedTimedOut
	}
	return ""
}
