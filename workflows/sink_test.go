package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/workflows"
)

// TestSinkWorkflowDeliversSleepsRetriesAndEnds: batches go out back to back, an empty one
// sleeps Poll, a failed delivery is retried, and the workflow ends when the sink is removed.
func TestSinkWorkflowDeliversSleepsRetriesAndEnds(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var fa *activities.FeedActivities
	env.RegisterActivity(fa)
	results := []activities.SinkResult{{Delivered: 2, Cursor: 2}, {Delivered: 1, Cursor: 3}, {}, {Removed: true}}
	calls, failed := 0, false
	env.OnActivity(fa.DeliverSink, mock.Anything, activities.SinkRef{SpaceID: "spc_a", Sink: "lake"}).Return(
		func(_ context.Context, _ activities.SinkRef) (activities.SinkResult, error) {
			if calls == 2 && !failed {
				failed = true
				return activities.SinkResult{}, errors.New("bucket unreachable")
			}
			calls++
			return results[calls-1], nil
		})
	start := env.Now()
	env.ExecuteWorkflow(workflows.SinkWorkflow, workflows.SinkInput{SpaceID: "spc_a", Sink: "lake", Poll: time.Hour})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, 4, calls)
	require.True(t, failed, "the failure was retried")
	require.GreaterOrEqual(t, env.Now().Sub(start), time.Hour, "the empty batch slept Poll")
}

// TestSinkWorkflowContinuesAsNew: a run of only non-empty batches continues as new with the
// same input.
func TestSinkWorkflowContinuesAsNew(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	// The run executes its whole history of activities before continuing as new: more than
	// the environment's default 3 s of wall clock on a loaded 2-core machine.
	env.SetTestTimeout(2 * time.Minute)
	var fa *activities.FeedActivities
	env.RegisterActivity(fa)
	env.OnActivity(fa.DeliverSink, mock.Anything, mock.Anything).Return(activities.SinkResult{Delivered: 1}, nil)
	in := workflows.SinkInput{SpaceID: "spc_a", Sink: "lake"}
	env.ExecuteWorkflow(workflows.SinkWorkflow, in)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next workflows.SinkInput
	require.NoError(t, converterDecode(can, &next))
	require.Equal(t, in, next)
}
