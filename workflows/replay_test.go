package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"agentmemory/workflows"
)

// TestDistillReplay replays a history recorded on a real Temporal dev server (a distillation
// approved by a reviewer; re-record with AGENTMEMORY_RECORD_HISTORY=1 go test ./worker/). A
// change to DistillWorkflow that breaks determinism fails here: guard such changes with
// workflow.GetVersion.
func TestDistillReplay(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.DistillWorkflow)
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "distill_approved.json")))
}
