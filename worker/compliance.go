package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/grpc/codes"

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
// are skipped. A transient refusal (a frontend that is still starting, as a dev server
// restarted on its database is for a moment: Unavailable, Canceled, DeadlineExceeded,
// ResourceExhausted, Aborted) is retried with backoff for up to scheduleRetryFor; any other
// error, or ctx ending, is returned at once.
func EnsureRetentionSchedule(ctx context.Context, c client.Client, taskQueue string, every time.Duration) error {
	if every <= 0 {
		every = DefaultSweepEvery
	}
	opts := client.ScheduleOptions{
		ID:      workflows.RetentionScheduleID,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID:        workflows.RetentionScheduleID + "-run",
			Workflow:  workflows.RetentionSweepWorkflow,
			Args:      []any{workflows.RetentionSweepInput{}},
			TaskQueue: taskQueue,
		},
	}
	deadline := time.Now().Add(scheduleRetryFor)
	for wait := 250 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		_, err := c.ScheduleClient().Create(ctx, opts)
		if err == nil || errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
			return nil
		}
		if !transient(err) || time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("worker: retention schedule: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("worker: retention schedule: %w", err)
		case <-time.After(wait):
		}
	}
}

// scheduleRetryFor bounds EnsureRetentionSchedule's retries of transient refusals.
const scheduleRetryFor = 30 * time.Second

// transient reports whether err is a gRPC refusal worth retrying: the server is starting,
// overloaded or dropped the stream.
func transient(err error) bool {
	switch serviceerror.ToStatus(err).Code() {
	case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}
