package compliance_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/worker"
	"github.com/agentmemory/agentmemory/workflows"
)

// reconcileEnv is an Env whose worker (on its own task queue) also reconciles: its
// ComplianceActivities hold a worker.Starter and take rows of any age.
func reconcileEnv(t *testing.T, engine string) (*apptest.Env, worker.Starter) {
	t.Helper()
	if temporalClient == nil {
		t.Skip("integration test: needs the Temporal dev server (not in -short)")
	}
	tq := "reconcile-" + auth.NewID("tq")
	e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = temporalClient; d.TaskQueue = tq })
	starter := e.App.Starter(temporalClient, tq)
	w := newWorker(t, e, app.WorkerOptions{TaskQueue: tq, ReconcileMinAge: time.Nanosecond})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return e, starter
}

// compliancePrincipal is a person of e's space with role compliance.
func compliancePrincipal(e *apptest.Env) auth.Principal {
	return auth.Principal{SpaceID: e.SpaceID, KeyID: "key_officer", Kind: auth.KindPerson, Roles: []string{auth.RoleCompliance}}
}

// orphans records an export and an erasure through the service, as POST /v1/exports and
// POST /v1/erasures do, without starting their workflows: the API process died between its
// commit and the start.
func orphans(t *testing.T, e *apptest.Env) (exportID, erasureID string) {
	t.Helper()
	ctx := context.Background()
	p := compliancePrincipal(e)
	exportID, err := e.Deps.Compliance.RequestExport(ctx, p, compliance.ExportRequest{Subject: "email:orphan@example.com"})
	require.NoError(t, err)
	erasureID, err = e.Deps.Compliance.RequestErasure(ctx, p, compliance.ErasureRequest{ConversationID: "conv-orphan"})
	require.NoError(t, err)
	return exportID, erasureID
}

func runID(t *testing.T, id string) string {
	t.Helper()
	d, err := temporalClient.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err, "workflow %s", id)
	return d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}

// GOV-2, GOV-3: an export and an erasure whose request committed but never started its
// workflow stay running forever; the reconciler starts their workflows under the same ids
// and they complete. Rows younger than the minimum age are left to their request; a row
// whose workflow already ran is never run again, even if it still reads running.
func TestReconcileStartsOrphanedWorkflows(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e, starter := reconcileEnv(t, engine)
			ctx := context.Background()
			comp := e.Deps.Compliance
			p := compliancePrincipal(e)
			exportID, erasureID := orphans(t, e)

			res, err := comp.Reconcile(ctx, starter, e.SpaceID, time.Hour)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{}, res, "rows younger than the minimum age are not touched")

			res, err = comp.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{Checked: 2, Started: 2}, res)
			waitWorkflow(t, workflows.ExportWorkflowID(exportID))
			waitWorkflow(t, workflows.ErasureWorkflowID(erasureID))
			ex, err := comp.GetExport(ctx, p, exportID)
			require.NoError(t, err)
			require.Equal(t, compliance.StatusCompleted, ex.Status)
			er, err := comp.GetErasure(ctx, p, erasureID)
			require.NoError(t, err)
			require.Equal(t, compliance.StatusCompleted, er.Status)
			require.NotNil(t, er.Certificate)

			// Completed rows are not looked at again.
			res, err = comp.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{}, res)

			// A row that reads running although its workflow finished: the workflow exists
			// (closed), so it is not started again; the row is failed (workflow_completed),
			// never completed by the reconciler.
			run := runID(t, workflows.ExportWorkflowID(exportID))
			_, err = e.DB.NewUpdate().Model((*models.ExportPackage)(nil)).Set("status = ?", compliance.StatusRunning).
				Where("id = ?", exportID).Exec(ctx)
			require.NoError(t, err)
			started, err := starter.StartMissing(ctx, compliance.Orphan{Kind: compliance.WorkflowExport, SpaceID: e.SpaceID, ID: exportID})
			require.NoError(t, err)
			require.Equal(t, compliance.StartResult{Closed: compliance.ClosedCompleted}, started)
			res, err = comp.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{Checked: 1, Started: 0, Failed: 1}, res)
			require.Equal(t, run, runID(t, workflows.ExportWorkflowID(exportID)), "the finished workflow was not re-run")
			var exRow models.ExportPackage
			require.NoError(t, e.DB.NewSelect().Model(&exRow).Where("id = ?", exportID).Scan(ctx))
			require.Equal(t, compliance.StatusFailed, exRow.Status)
			require.Equal(t, "workflow_completed", exRow.Failure)
		})
	}
}

// GOV-2, GOV-3: every retention sweep reconciles first: an orphaned export of the swept
// space gets its workflow and completes.
func TestRetentionSweepReconcilesOrphans(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e, starter := reconcileEnv(t, engine)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			exportID, erasureID := orphans(t, e)
			run, err := temporalClient.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: workflows.SweepWorkflowID(auth.NewID("sw")), TaskQueue: starter.TaskQueue,
			}, workflows.RetentionSweepWorkflow, workflows.RetentionSweepInput{SpaceID: e.SpaceID})
			require.NoError(t, err)
			require.NoError(t, run.Get(ctx, nil))
			if name := os.Getenv("AGENTMEMORY_RECORD_SWEEP"); engine == "sqlite" && name != "" {
				// Re-record the replay fixture: AGENTMEMORY_RECORD_SWEEP=retention_sweep_reconcile.json
				recordHistory(t, run.GetID(), filepath.Join("..", "..", "workflows", "testdata", name))
			}
			waitWorkflow(t, workflows.ExportWorkflowID(exportID))
			waitWorkflow(t, workflows.ErasureWorkflowID(erasureID))
			ex, err := e.Deps.Compliance.GetExport(ctx, compliancePrincipal(e), exportID)
			require.NoError(t, err)
			require.Equal(t, compliance.StatusCompleted, ex.Status)
		})
	}
}

// recordHistory writes workflow id's whole history as protojson to path (a replay fixture).
func recordHistory(t *testing.T, id, path string) {
	t.Helper()
	it := temporalClient.GetWorkflowHistory(context.Background(), id, "", false, 0)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// AM-9: a distilled proposal whose request committed it and died before starting its
// DistillWorkflow stays drafting forever; the reconciler starts the workflow under
// workflows.DistillID and the distillation runs to its end (here failed no_turns: the
// conversation has no turns, so no model is needed). Younger proposals are left to their
// request; a proposal whose workflow already ran is not run again.
func TestReconcileStartsOrphanedDistillations(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			if temporalClient == nil {
				t.Skip("integration test: needs the Temporal dev server (not in -short)")
			}
			tq := "reconcile-distill-" + auth.NewID("tq")
			e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = temporalClient; d.TaskQueue = tq })
			starter := e.App.Starter(temporalClient, tq)
			w := newWorker(t, e, app.WorkerOptions{TaskQueue: tq})
			require.NoError(t, w.Start())
			t.Cleanup(w.Stop)
			ctx := context.Background()
			e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
			e.AgentKey("support-bot", "acme", "agent_memory")
			admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
			require.NoError(t, err)
			// As POST /v1/agent-memory/distill does, without starting the workflow.
			id, err := e.Deps.Proposals.CreateDistillProposal(ctx, admin, turns.Scope{ConversationID: "conv-orphan"}, "support-bot")
			require.NoError(t, err)
			comp := e.Deps.Compliance

			res, err := comp.Reconcile(ctx, starter, e.SpaceID, time.Hour)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{}, res, "proposals younger than the minimum age are not touched")

			res, err = comp.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{Checked: 1, Started: 1}, res)
			waitWorkflow(t, workflows.DistillID(id))
			p, err := e.Deps.Proposals.Get(ctx, admin, id)
			require.NoError(t, err)
			require.Equal(t, proposals.StatusFailed, p.Status)
			require.Equal(t, "no_turns", *p.Reason)

			// Failed proposals are not looked at again; one that still reads drafting although
			// its workflow ran is not started again.
			res, err = comp.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{}, res)
			run := runID(t, workflows.DistillID(id))
			_, err = e.DB.NewUpdate().Model((*models.NoteProposal)(nil)).Set("status = ?", proposals.StatusDrafting).
				Where("id = ?", id).Exec(ctx)
			require.NoError(t, err)
			res, err = comp.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{Checked: 1, Started: 0, Failed: 1}, res)
			require.Equal(t, run, runID(t, workflows.DistillID(id)), "the finished workflow was not re-run")
			p, err = e.Deps.Proposals.Get(ctx, admin, id)
			require.NoError(t, err)
			require.Equal(t, proposals.StatusFailed, p.Status, "a drafting proposal whose workflow ended is failed")
			require.Equal(t, "workflow_completed", *p.Reason)
		})
	}
}

// Issue 12 (tester's defect): an erasure, export or distillation whose workflow was ended
// from outside (temporal workflow terminate) while its row was unfinished stayed unfinished
// forever: the reconciler found the workflow (closed) and skipped it. Now it fails the row
// with a reason naming how the workflow ended, with the erasure's "erasure.fail" receipt; a
// row whose workflow still runs is not touched. The workflows run on a task queue no worker
// polls, so they stay running until terminated.
func TestReconcileFailsRowsOfEndedWorkflows(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			if temporalClient == nil {
				t.Skip("integration test: needs the Temporal dev server (not in -short)")
			}
			ctx := context.Background()
			e := apptest.New(t, engine) // no Workflows: the API starts nothing
			comp := e.Deps.Compliance
			p := compliancePrincipal(e)
			starter := worker.Starter{Client: temporalClient, TaskQueue: "no-worker-" + auth.NewID("tq")}
			exportID, pendingID := orphans(t, e)
			runningID, err := comp.RequestErasure(ctx, p, compliance.ErasureRequest{ConversationID: "conv-running"})
			require.NoError(t, err)
			_, err = e.DB.NewUpdate().Model((*models.Erasure)(nil)).Set("status = ?", compliance.StatusRunning).
				Where("id = ?", runningID).Exec(ctx)
			require.NoError(t, err)

			res, err := comp.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{Checked: 3, Started: 3}, res)
			// Running workflows are left alone.
			res, err = comp.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{Checked: 3}, res)

			for _, id := range []string{workflows.ErasureWorkflowID(pendingID), workflows.ErasureWorkflowID(runningID), workflows.ExportWorkflowID(exportID)} {
				if id == workflows.ErasureWorkflowID(runningID) {
					continue // this one keeps running
				}
				require.NoError(t, temporalClient.TerminateWorkflow(ctx, id, "", "tester"))
			}
			res, err = comp.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{Checked: 3, Failed: 2}, res)

			er, err := comp.GetErasure(ctx, p, pendingID)
			require.NoError(t, err)
			require.Equal(t, compliance.StatusFailed, er.Status, "a pending erasure whose workflow was terminated fails")
			require.Equal(t, "workflow_terminated", er.Reason)
			require.Nil(t, er.Certificate)
			requireFailReceipt(t, e, pendingID, "workflow_terminated")
			var exRow models.ExportPackage
			require.NoError(t, e.DB.NewSelect().Model(&exRow).Where("id = ?", exportID).Scan(ctx))
			require.Equal(t, compliance.StatusFailed, exRow.Status)
			require.Equal(t, "workflow_terminated", exRow.Failure)
			er, err = comp.GetErasure(ctx, p, runningID)
			require.NoError(t, err)
			require.Equal(t, compliance.StatusRunning, er.Status, "an erasure whose workflow still runs is not touched")
			require.Empty(t, er.Reason)

			// The running erasure's workflow is terminated too: it fails the same way.
			require.NoError(t, temporalClient.TerminateWorkflow(ctx, workflows.ErasureWorkflowID(runningID), "", "tester"))
			res, err = comp.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{Checked: 1, Failed: 1}, res)
			er, err = comp.GetErasure(ctx, p, runningID)
			require.NoError(t, err)
			require.Equal(t, compliance.StatusFailed, er.Status)
			require.Equal(t, "workflow_terminated", er.Reason)
			requireFailReceipt(t, e, runningID, "workflow_terminated")

			// Failed rows are not looked at again.
			res, err = comp.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{}, res)
		})
	}
}

// requireFailReceipt checks that erasure id has exactly one "erasure.fail" receipt, with reason.
func requireFailReceipt(t *testing.T, e *apptest.Env, id, reason string) {
	t.Helper()
	var rows []models.Receipt
	require.NoError(t, e.DB.NewSelect().Model(&rows).
		Where("space_id = ? AND action = ? AND object_ids LIKE ?", e.SpaceID, "erasure.fail", "%"+id+"%").Scan(context.Background()))
	require.Len(t, rows, 1, "one erasure.fail receipt for %s", id)
	require.Contains(t, rows[0].Detail, reason)
}

// Issue 33 §4: an agent-memory export file whose request committed but never started its
// workflow gets it from the reconciler and completes; a file that reads running although
// its workflow finished is failed (workflow_completed), never re-run.
func TestReconcileStartsOrphanedAgentMemoryExports(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e, starter := reconcileEnv(t, engine)
			ctx := context.Background()
			admin := auth.Principal{SpaceID: e.SpaceID, KeyID: "key_admin", Kind: auth.KindPerson, Roles: []string{auth.RoleAdmin}}
			id, err := e.Deps.Proposals.RequestExportFile(ctx, admin, proposals.ExportFileRequest{SourceID: "bot-orphan"})
			require.NoError(t, err)

			res, err := e.Deps.Compliance.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{Checked: 1, Started: 1}, res)
			waitWorkflow(t, workflows.AgentMemoryExportWorkflowID(id))
			v, err := e.Deps.Proposals.GetExportFile(ctx, admin, id)
			require.NoError(t, err)
			require.Equal(t, proposals.ExportCompleted, v.Status)

			run := runID(t, workflows.AgentMemoryExportWorkflowID(id))
			_, err = e.DB.NewUpdate().Model((*models.AgentMemoryExport)(nil)).Set("status = ?", proposals.ExportRunning).Where("id = ?", id).Exec(ctx)
			require.NoError(t, err)
			res, err = e.Deps.Compliance.Reconcile(ctx, starter, e.SpaceID, 0)
			require.NoError(t, err)
			require.Equal(t, compliance.ReconcileResult{Checked: 1, Failed: 1}, res)
			require.Equal(t, run, runID(t, workflows.AgentMemoryExportWorkflowID(id)), "the finished workflow was not re-run")
			var row models.AgentMemoryExport
			require.NoError(t, e.DB.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx))
			require.Equal(t, [2]string{proposals.ExportFailed, "workflow_completed"}, [2]string{row.Status, row.Failure})
		})
	}
}
