package api_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"agentmemory/api"
	"agentmemory/api/apitest"
	"agentmemory/workflows"
)

// startsWorkflows records workflow starts and answers each with err.
type startsWorkflows struct {
	err    error
	starts []client.StartWorkflowOptions
}

func (f *startsWorkflows) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	f.starts = append(f.starts, o)
	return nil, f.err
}

func (f *startsWorkflows) SignalWorkflow(context.Context, string, string, string, any) error {
	return errors.New("not used")
}

func (f *startsWorkflows) GetWorkflow(context.Context, string, string) client.WorkflowRun { return nil }

// GOV-2, GOV-3: an export or erasure whose workflow was already started under its id (the
// worker's reconciler got there first) is running, not failed: 202, and the row stays
// running. Starts refuse duplicate ids, so a finished workflow is never run twice.
func TestComplianceStartAlreadyStarted(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wf := &startsWorkflows{err: serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "")}
			e := apitest.New(t, engine, func(d *api.Deps) { d.Workflows = wf })
			officer := e.PersonKey("officer", "compliance")
			ex := e.MustDo(http.StatusAccepted, "POST", "/v1/exports", officer, map[string]any{"subject": "email:ana@example.com"}).JSON(t)
			exportID := ex["export_id"].(string)
			require.Equal(t, "running", e.MustDo(http.StatusOK, "GET", "/v1/exports/"+exportID, officer, nil).JSON(t)["status"])
			er := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", officer, map[string]any{"conversation_id": "c-1"}).JSON(t)
			erasureID := er["erasure_id"].(string)
			require.Equal(t, "running", e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+erasureID, officer, nil).JSON(t)["status"])
			require.Len(t, wf.starts, 2)
			require.Equal(t, workflows.ExportWorkflowID(exportID), wf.starts[0].ID)
			require.Equal(t, workflows.ErasureWorkflowID(erasureID), wf.starts[1].ID)
			for _, o := range wf.starts {
				require.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE, o.WorkflowIDReusePolicy)
				require.True(t, o.WorkflowExecutionErrorWhenAlreadyStarted)
			}

			// Any other refusal still fails the row (nothing will run it) and answers 503.
			wf.err = errors.New("unavailable")
			r := e.Do("POST", "/v1/exports", officer, map[string]any{"subject": "email:ana@example.com"})
			require.Equal(t, http.StatusServiceUnavailable, r.Status, "got %d, want 503: %s", r.Status, r.Body)
		})
	}
}
