package worker

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/workflows"
)

// New returns a worker polling taskQueue with every workflow and the activities of a
// (distillation) and ca (compliance) registered, with opts. Call Start (or Run) on it.
func New(c client.Client, taskQueue string, opts sdkworker.Options, a *activities.Activities, ca *activities.ComplianceActivities) sdkworker.Worker {
	w := sdkworker.New(c, taskQueue, opts)
	Register(w, a)
	RegisterCompliance(w, ca)
	return w
}

// RegisterKnowledge registers IngestWorkflow and the knowledge activities with r (KN-2).
func RegisterKnowledge(r sdkworker.Registry, ka *activities.KnowledgeActivities) {
	r.RegisterWorkflow(workflows.IngestWorkflow)
	r.RegisterActivity(ka)
}

// RegisterFeed registers SinkWorkflow and the export feed's activities with r (issue 33).
func RegisterFeed(r sdkworker.Registry, fa *activities.FeedActivities) {
	r.RegisterWorkflow(workflows.SinkWorkflow)
	r.RegisterActivity(fa)
}

// Register adds every workflow and activity to r (a worker, a replayer's registry or a test
// environment).
func Register(r sdkworker.Registry, a *activities.Activities) {
	r.RegisterWorkflow(workflows.DistillWorkflow)
	r.RegisterWorkflow(workflows.AgentMemoryExportWorkflow) // issue 33 §4: its activities are a's
	r.RegisterActivity(a)
}
