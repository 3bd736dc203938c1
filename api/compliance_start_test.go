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

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/workflows"
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
			e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = wf })
			officer := e.PersonKey("officer", "compliance")
			ex := e.MustDo(http.StatusAccepted, "POST", "/v1/exports", officer, map[string]any{"subject": "email:ana@example.com"}).JSON(t)
			exportID := ex["export_id"].(string)
			require.Equal(t, "running", e.MustDo(http.StatusOK, "GET", "/v1/exports/"+exportID, officer, nil).JSON(t)["status"])
			er := e.MustDo(http.StatusAccepted, "POST", "/v1/erasures", officer, map[string]any{"conversation_id": "c-1"}).JSON(t)
			erasureID := er["erasure_id"].(string)
			require.Equal(t, "pending", e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+erasureID, officer, nil).JSON(t)["status"])
			require.Equal(t, "pending", er["status"], "the workflow's first step moves it to running")
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

// runErasureSteps runs the erasure's steps as ErasureWorkflow does, one by one, stopping at
// the first error; it returns the certificate (when Certify ran) and that error.
func runErasureSteps(t *testing.T, e *apptest.Env, id string) (compliance.Certificate, error) {
	t.Helper()
	ctx := context.Background()
	c := e.Deps.Compliance
	if _, err := c.ResolveErasure(ctx, e.SpaceID, id); err != nil {
		return compliance.Certificate{}, err
	}
	for _, step := range []func(context.Context, string, string) (int, error){c.EraseStates, c.EraseTurns, c.EraseExports, c.EraseProfiles, c.DestroyKeys} {
		if _, err := step(ctx, e.SpaceID, id); err != nil {
			return compliance.Certificate{}, err
		}
	}
	return c.Certify(ctx, e.SpaceID, id)
}

// GOV-2 (issue 12 §1): an ambiguous start error (a deadline: the server may have accepted
// the start) leaves the erasure pending for the reconciler and answers 202 "pending"; when
// the workflow then runs, it erases the subject's state and certifies it truthfully. Before
// the fix the row was marked failed, the steps skipped it and Certify wrote a completed
// certificate with nothing_found while the state was still stored.
func TestErasureAmbiguousStartNoFalseCertificate(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wf := &startsWorkflows{err: context.DeadlineExceeded}
			e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = wf })
			e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
			e.PutDocument("object-types", apptest.ShopBotTypes())
			shop := e.AgentKey("shop-bot", "acme", "agent_state")
			officer := e.PersonKey("officer", "compliance")
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{
				"scope": map[string]any{"kind": "conversation", "id": "c-1"}, "subject": "email:ana@example.com",
				"body": map[string]any{"step": "cart"},
			})
			r := e.Do("POST", "/v1/erasures", officer, map[string]any{"subject": "email:ana@example.com"})
			var rows []models.Erasure
			require.NoError(t, e.DB.NewSelect().Model(&rows).Scan(context.Background()))
			require.Len(t, rows, 1)
			id := rows[0].ID

			// The workflow was in fact accepted and now runs.
			cert, err := runErasureSteps(t, e, id)
			require.NoError(t, err)
			require.False(t, cert.NothingFound, "false certificate: nothing_found while the subject's state is stored")
			require.Equal(t, 1, count(cert, "agent_state"))
			read := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", shop, map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c-1"}})
			require.JSONEq(t, `{"body":{},"version":0,"updated_at":null}`, string(read.Body))

			require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
			require.Equal(t, id, r.JSON(t)["erasure_id"])
			require.Equal(t, "pending", r.JSON(t)["status"])
		})
	}
}

// GOV-2 (issue 12 §1): a definite refusal fails the erasure (503), and a failed erasure can
// never be certified: every step and Certify refuse it with an error instead of skipping.
func TestErasureRefusedStartFailsAndStepsRefuse(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			wf := &startsWorkflows{err: serviceerror.NewInvalidArgument("bad")}
			e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = wf })
			officer := e.PersonKey("officer", "compliance")
			r := e.Do("POST", "/v1/erasures", officer, map[string]any{"subject": "email:ana@example.com"})
			require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
			var rows []models.Erasure
			require.NoError(t, e.DB.NewSelect().Model(&rows).Scan(context.Background()))
			require.Len(t, rows, 1)
			require.Equal(t, "failed", rows[0].Status)
			ctx := context.Background()
			c := e.Deps.Compliance
			_, err := c.ResolveErasure(ctx, e.SpaceID, rows[0].ID)
			require.Error(t, err, "a failed erasure does not start running")
			_, err = c.EraseStates(ctx, e.SpaceID, rows[0].ID)
			require.Error(t, err)
			_, err = c.DestroyKeys(ctx, e.SpaceID, rows[0].ID)
			require.Error(t, err)
			_, err = c.Certify(ctx, e.SpaceID, rows[0].ID)
			require.Error(t, err, "a failed erasure is never certified")
			v := e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+rows[0].ID, officer, nil).JSON(t)
			require.Equal(t, "failed", v["status"])
			require.Nil(t, v["certificate"])
		})
	}
}

func count(c compliance.Certificate, kind string) int {
	for _, it := range c.Items {
		if it.Kind == kind {
			return it.Count
		}
	}
	return 0
}
