package workflows

import (
	"errors"

	"go.temporal.io/sdk/workflow"

	"github.com/agentmemory/agentmemory/activities"
)

// ExportInput names the export to build; the subject stays in the database as a keyed hash.
type ExportInput struct {
	SpaceID  string
	ExportID string
}

// ExportWorkflow builds a subject's data package (GOV-3, WM-13) in one activity (2 min, 10
// attempts) that seals it under the subject's key; on failure it marks the export failed.
// No signals, no timers: the package's expiry is enforced on read and by the sweep.
func ExportWorkflow(ctx workflow.Context, in ExportInput) (activities.ExportResult, error) {
	var a *activities.ComplianceActivities
	ctx = complianceActivityOptions(ctx)
	var out activities.ExportResult
	if err := workflow.ExecuteActivity(ctx, a.BuildExport, activities.ExportRef(in)).Get(ctx, &out); err != nil {
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		defer cancel()
		if ferr := workflow.ExecuteActivity(dctx, a.FailExport, activities.FailRef{SpaceID: in.SpaceID, ID: in.ExportID, Reason: "build_failed"}).Get(dctx, nil); ferr != nil {
			return out, errors.Join(err, ferr)
		}
		return out, err
	}
	return out, nil
}

// AgentMemoryExportInput names the agent-memory export file to build (issue 33 §4); the
// agent and what it holds stay in the database.
type AgentMemoryExportInput struct {
	SpaceID  string
	ExportID string
}

// AgentMemoryExportWorkflowID is the workflow id of agent-memory export file exportID,
// "agent-memory-export-" + exportID.
func AgentMemoryExportWorkflowID(exportID string) string { return "agent-memory-export-" + exportID }

// AgentMemoryExportWorkflow builds an agent's export file (every note version and proposal,
// AM-12, issue 33 §4) in one activity (2 min, 10 attempts) that seals it under the agent's
// export key; on failure it marks the file failed. No signals, no timers: the file's expiry
// is enforced on read and by the retention sweep.
func AgentMemoryExportWorkflow(ctx workflow.Context, in AgentMemoryExportInput) (activities.ExportFileResult, error) {
	var a *activities.Activities
	ctx = complianceActivityOptions(ctx)
	var out activities.ExportFileResult
	if err := workflow.ExecuteActivity(ctx, a.BuildExportFile, activities.ExportFileRef(in)).Get(ctx, &out); err != nil {
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		defer cancel()
		if ferr := workflow.ExecuteActivity(dctx, a.FailExportFile, activities.FailRef{SpaceID: in.SpaceID, ID: in.ExportID, Reason: "build_failed"}).Get(dctx, nil); ferr != nil {
			return out, errors.Join(err, ferr)
		}
		return out, err
	}
	return out, nil
}
