package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentmemory/agentmemory/activities"
)

// SinkWorkflowID is the workflow id of sink name of space spaceID,
// "export-sink-" + spaceID + "-" + name (a sink name has no '-'-free guarantee, but a space
// id has no '-', so the pair is unambiguous).
func SinkWorkflowID(spaceID, name string) string { return "export-sink-" + spaceID + "-" + name }

// DefaultSinkPoll is SinkInput.Poll's default.
const DefaultSinkPoll = 5 * time.Second

// sinkRoundsPerRun bounds one run's deliveries before it continues as new (a short history).
const sinkRoundsPerRun = 200

// SinkInput starts SinkWorkflow: the space and sink names only (the sink's configuration and
// cursor stay in the database and the sink itself), and Poll, how long to wait when the feed
// had nothing new (0: DefaultSinkPoll).
type SinkInput struct {
	SpaceID string
	Sink    string
	Poll    time.Duration
}

var fa *activities.FeedActivities

// SinkWorkflow delivers a space's export feed to one configured sink (issue 33, EXP-1), for
// as long as the sink is configured: DeliverSink sends the next batch after the sink's
// acknowledged cursor (its manifest's for files, the recorded one for Kafka), so a run that
// dies anywhere resumes from the last acknowledged cursor. An unreachable sink fails the
// activity, retried from 1 s doubling to 1 minute without limit (its error and lag show
// meanwhile). When a batch was empty it sleeps Poll. It ends when the sink is no longer in
// features export.sinks, and continues as new every sinkRoundsPerRun deliveries. No signals.
func SinkWorkflow(ctx workflow.Context, in SinkInput) error {
	poll := in.Poll
	if poll <= 0 {
		poll = DefaultSinkPoll
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	for range sinkRoundsPerRun {
		var out activities.SinkResult
		if err := workflow.ExecuteActivity(actx, fa.DeliverSink, activities.SinkRef{SpaceID: in.SpaceID, Sink: in.Sink}).Get(actx, &out); err != nil {
			return err
		}
		if out.Removed {
			return nil
		}
		if out.Delivered == 0 {
			if err := workflow.Sleep(ctx, poll); err != nil {
				return err
			}
		}
	}
	return workflow.NewContinueAsNewError(ctx, SinkWorkflow, in)
}
