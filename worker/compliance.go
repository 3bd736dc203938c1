package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/workflows"
)

// RegisterCompliance registers the compliance workflows (erasure, export, retention sweep,
// agent-note erasure) and their activities with w.
func RegisterCompliance(w sdkworker.Registry, acts *activities.ComplianceActivities) {
	w.RegisterWorkflow(workflows.ErasureWorkflow)
	w.RegisterWorkflow(workflows.ExportWorkflow)
	w.RegisterWorkflow(workflows.RetentionSweepWorkflow)
	w.RegisterWorkflow(workflows.NoteErasureWorkflow)
	w.RegisterActivity(acts)
}

// DefaultSweepEvery is how often the retention schedule runs.
const DefaultSweepEvery = time.Hour

// EnsureRetentionSchedule creates the Temporal Schedule that runs RetentionSweepWorkflow over
// every space each `every` (DefaultSweepEvery when zero) on taskQueue. It is idempotent: an
// existing schedule is left as it is, so every worker may call it on start. Overlapping runs
// are skipped.
func EnsureRetentionSchedule(ctx context.Context, c client.Client, taskQueue string, every time.Duration) error {
	if every <= 0 {
		every = DefaultSweepEvery
	}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      workflows.RetentionScheduleID,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID:        workflows.RetentionScheduleID + "-run",
			Workflow:  workflows.RetentionSweepWorkflow,
			Args:      []any{workflows.RetentionSweepInput{}},
			TaskQueue: taskQueue,
		},
	})
	if err != nil && !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("worker: retention schedule: %w", err)
	}
	return nil
}
