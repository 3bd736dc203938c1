package workflows_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/workflows"
)

func erasureEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *activities.ComplianceActivities) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	a := &activities.ComplianceActivities{}
	env.RegisterActivity(a)
	return env, a
}

// stores is what the mocked ResolveErasureStores answers: the registry's names in order.
var stores = []string{"state", "turns", "exports", "knowledge", "subjects", "outbox"}

func storeRef(name string) activities.StoreRef {
	return activities.StoreRef{SpaceID: "sp_1", ErasureID: "er_1", Store: name}
}

// mockErasureSteps mocks every step of the registry-driven erasure (resolve, each store,
// keys, caches, checkpoint, probe) as succeeding; failing registers a store's failures
// first (each failing `times` times; -1: always).
func mockErasureSteps(env *testsuite.TestWorkflowEnvironment, a *activities.ComplianceActivities, probe bool, failing map[string]int) {
	env.OnActivity(a.ResolveErasureStores, mock.Anything, mock.Anything).Return(activities.Resolution{Profiles: 1, Stores: stores}, nil)
	for name, times := range failing {
		c := env.OnActivity(a.EraseStore, mock.Anything, storeRef(name)).Return(0, errors.New("store went away"))
		if times > 0 {
			c.Times(times)
		}
	}
	env.OnActivity(a.EraseStore, mock.Anything, mock.Anything).Return(1, nil)
	env.OnActivity(a.DestroySubjectKeys, mock.Anything, mock.Anything).Return(1, nil)
	env.OnActivity(a.PurgeSubjectCaches, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.CheckpointStore, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.AwaitErasureSinks, mock.Anything, mock.Anything).Return(nil).Maybe() // not reached when the erasure fails
	if probe {
		env.OnActivity(a.ProbeErasure, mock.Anything, mock.Anything).Return(activities.ProbeResult{}, nil)
	}
}

// Before its certificate the erasure waits for its export sinks: AwaitErasureSinks failing
// with the retryable "pending_sinks" (a sink behind) is retried until the sinks caught up,
// and only then is the erasure certified; nothing fails it meanwhile.
func TestErasureWorkflowWaitsForSinksBeforeTheCertificate(t *testing.T) {
	env, a := erasureEnv(t)
	ref := activities.ErasureRef{SpaceID: "sp_1", ErasureID: "er_1"}
	env.OnActivity(a.AwaitErasureSinks, mock.Anything, ref).
		Return(temporal.NewApplicationError("export sinks have not acknowledged the erasure's tombstones: lake", "pending_sinks")).Times(3)
	mockErasureSteps(env, a, true, nil)
	var order []string
	env.SetOnActivityStartedListener(func(info *activity.Info, ctx context.Context, args converter.EncodedValues) {
		if n := info.ActivityType.Name; n == "AwaitErasureSinks" || n == "CertifyErasure" {
			order = append(order, n)
		}
	})
	env.OnActivity(a.CertifyErasure, mock.Anything, ref).Return(activities.CertificateResult{ReceiptID: "rcpt_9", Seq: 9, Total: 6}, nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"AwaitErasureSinks", "AwaitErasureSinks", "AwaitErasureSinks", "AwaitErasureSinks", "CertifyErasure"}, order)
}

// The erasure resolves its stores, erases each one in the recorded order, then keys,
// caches, checkpoint, probe and certificate.
func TestErasureWorkflowRunsEveryStepAndCertifies(t *testing.T) {
	env, a := erasureEnv(t)
	mockErasureSteps(env, a, true, nil)
	var order []string
	env.SetOnActivityStartedListener(func(info *activity.Info, ctx context.Context, args converter.EncodedValues) {
		if info.ActivityType.Name == "EraseStore" {
			var ref activities.StoreRef
			require.NoError(t, args.Get(&ref))
			order = append(order, ref.Store)
		}
	})
	env.OnActivity(a.CertifyErasure, mock.Anything, activities.ErasureRef{SpaceID: "sp_1", ErasureID: "er_1"}).
		Return(activities.CertificateResult{ReceiptID: "rcpt_9", Seq: 9, Total: 6}, nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res workflows.ErasureResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, workflows.ErasureResult{ReceiptID: "rcpt_9", Seq: 9, Total: 6}, res)
	require.Equal(t, stores, order, "every recorded store, in the recorded order")
	env.AssertNumberOfCalls(t, "ResolveErasureStores", 1)
	env.AssertNotCalled(t, "ResolveErasure", mock.Anything, mock.Anything)
	env.AssertExpectations(t)
}

// A step fails mid-erasure (after states were deleted); Temporal retries it and the erasure
// completes with its certificate, never marked failed.
func TestErasureWorkflowRetriesAFailedStep(t *testing.T) {
	env, a := erasureEnv(t)
	mockErasureSteps(env, a, true, map[string]int{"subjects": 2})
	env.OnActivity(a.CertifyErasure, mock.Anything, mock.Anything).Return(activities.CertificateResult{Seq: 4, Total: 6}, nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	env.AssertNumberOfCalls(t, "EraseStore", len(stores)+2)
	env.AssertNotCalled(t, "FailErasure", mock.Anything, mock.Anything)
}

// A step that never succeeds marks the erasure failed with the store's name and fails the
// workflow; later steps (later stores, key destruction, certificate) never run.
func TestErasureWorkflowMarksFailedWhenAStepKeepsFailing(t *testing.T) {
	env, a := erasureEnv(t)
	mockErasureSteps(env, a, true, map[string]int{"exports": -1})
	env.OnActivity(a.FailErasure, mock.Anything, activities.FailRef{SpaceID: "sp_1", ID: "er_1", Reason: "step_failed:exports"}).Return(nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError())
	env.AssertNumberOfCalls(t, "EraseStore", 2+10) // state, turns, then exports' ten attempts
	env.AssertNotCalled(t, "DestroySubjectKeys", mock.Anything, mock.Anything)
	env.AssertNotCalled(t, "CertifyErasure", mock.Anything, mock.Anything)
	env.AssertNumberOfCalls(t, "FailErasure", 1)
}

// A stored record that does not decode (corrupt_record, non-retryable) fails the erasure at
// once, with the store's step named; nothing later runs.
func TestErasureWorkflowFailsOnCorruptRecord(t *testing.T) {
	env, a := erasureEnv(t)
	env.OnActivity(a.EraseStore, mock.Anything, storeRef("state")).
		Return(0, temporal.NewNonRetryableApplicationError("corrupt_record", "corrupt_record", nil))
	mockErasureSteps(env, a, true, nil)
	env.OnActivity(a.FailErasure, mock.Anything, activities.FailRef{SpaceID: "sp_1", ID: "er_1", Reason: "step_failed:state"}).Return(nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	var app *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &app)
	require.Equal(t, "corrupt_record", app.Type())
	env.AssertNumberOfCalls(t, "EraseStore", 1)
	env.AssertNotCalled(t, "DestroySubjectKeys", mock.Anything, mock.Anything)
	env.AssertNotCalled(t, "CertifyErasure", mock.Anything, mock.Anything)
	env.AssertNumberOfCalls(t, "FailErasure", 1)
}

// Something written for the subject during the first round: the probe finds it, the steps
// run again (resolve once), the second probe is clean and the erasure is certified.
func TestErasureWorkflowRerunsOnResidue(t *testing.T) {
	env, a := erasureEnv(t)
	mockErasureSteps(env, a, false, nil)
	ref := activities.ErasureRef{SpaceID: "sp_1", ErasureID: "er_1"}
	env.OnActivity(a.ProbeErasure, mock.Anything, ref).Return(activities.ProbeResult{Residue: []string{"state", "keys"}}, nil).Once()
	env.OnActivity(a.ProbeErasure, mock.Anything, ref).Return(activities.ProbeResult{}, nil).Once()
	env.OnActivity(a.RerunErasure, mock.Anything, activities.RoundRef{SpaceID: "sp_1", ErasureID: "er_1", Round: 2}).Return(nil).Once()
	env.OnActivity(a.CertifyErasure, mock.Anything, ref).Return(activities.CertificateResult{Seq: 5, Total: 8}, nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	env.AssertNumberOfCalls(t, "ResolveErasureStores", 1)
	env.AssertNumberOfCalls(t, "EraseStore", 2*len(stores))
	env.AssertNumberOfCalls(t, "DestroySubjectKeys", 2)
	env.AssertNumberOfCalls(t, "ProbeErasure", 2)
	env.AssertNotCalled(t, "FailErasure", mock.Anything, mock.Anything)
	env.AssertExpectations(t)
}

// Residue after every round: three rounds, then the erasure fails with the stores the last
// probe named, and no certificate is asked for.
func TestErasureWorkflowFailsAfterLastRound(t *testing.T) {
	env, a := erasureEnv(t)
	mockErasureSteps(env, a, false, nil)
	env.OnActivity(a.ProbeErasure, mock.Anything, mock.Anything).Return(activities.ProbeResult{Residue: []string{"state", "keys"}}, nil)
	env.OnActivity(a.RerunErasure, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.FailErasure, mock.Anything, activities.FailRef{SpaceID: "sp_1", ID: "er_1", Reason: "residue:state,keys"}).Return(nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError())
	env.AssertNumberOfCalls(t, "ProbeErasure", 3)
	env.AssertNumberOfCalls(t, "RerunErasure", 2)
	env.AssertNumberOfCalls(t, "EraseStore", 3*len(stores))
	env.AssertNotCalled(t, "CertifyErasure", mock.Anything, mock.Anything)
	env.AssertExpectations(t)
}

func TestExportWorkflowMarksFailedExport(t *testing.T) {
	env, a := erasureEnv(t)
	env.OnActivity(a.BuildExport, mock.Anything, mock.Anything).Return(activities.ExportResult{}, errors.New("boom"))
	env.OnActivity(a.FailExport, mock.Anything, activities.FailRef{SpaceID: "sp_1", ID: "ex_1", Reason: "build_failed"}).Return(nil).Once()
	env.ExecuteWorkflow(workflows.ExportWorkflow, workflows.ExportInput{SpaceID: "sp_1", ExportID: "ex_1"})
	require.Error(t, env.GetWorkflowError())
	env.AssertExpectations(t)
}

// The sweep walks the four phases, follows cursors, and continues as new after MaxBatches
// batches with its progress in the input.
func TestRetentionSweepContinuesAsNewWithProgress(t *testing.T) {
	env, a := erasureEnv(t)
	env.OnActivity(a.SweepRetentionBatch, mock.Anything, activities.SweepBatchInput{Phase: "states", Limit: 2}).
		Return(activities.SweepBatchResult{Removed: 2, Done: true}, nil).Once()
	env.OnActivity(a.SweepRetentionBatch, mock.Anything, activities.SweepBatchInput{Phase: "fields", Limit: 2}).
		Return(activities.SweepBatchResult{Removed: 3, Cursor: "st_5"}, nil).Once()
	env.ExecuteWorkflow(workflows.RetentionSweepWorkflow, workflows.RetentionSweepInput{BatchSize: 2, MaxBatches: 2})
	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, err, &can)
	var next workflows.RetentionSweepInput
	require.NoError(t, converterDecode(can, &next))
	require.Equal(t, workflows.RetentionSweepInput{BatchSize: 2, MaxBatches: 2, Phase: "fields", Cursor: "st_5",
		Totals: workflows.SweepTotals{States: 2, Fields: 3}}, next)
}

func TestRetentionSweepFinishesAllPhases(t *testing.T) {
	env, a := erasureEnv(t)
	// After exports, the notes phase (retention.notes, issue 34 §1, version "notes-phase").
	for _, ph := range []string{"fields", "turns", "exports", "notes"} {
		env.OnActivity(a.SweepRetentionBatch, mock.Anything, activities.SweepBatchInput{Phase: ph, Limit: 10}).
			Return(activities.SweepBatchResult{Removed: 1, Done: true}, nil).Once()
	}
	// Then the vacuum phase, one table per batch, following its cursor (issue 12 §3).
	env.OnActivity(a.SweepRetentionBatch, mock.Anything, activities.SweepBatchInput{Phase: "vacuum", Limit: 10}).
		Return(activities.SweepBatchResult{Cursor: "1"}, nil).Once()
	env.OnActivity(a.SweepRetentionBatch, mock.Anything, activities.SweepBatchInput{Phase: "vacuum", Cursor: "1", Limit: 10}).
		Return(activities.SweepBatchResult{Cursor: "2", Done: true}, nil).Once()
	env.ExecuteWorkflow(workflows.RetentionSweepWorkflow, workflows.RetentionSweepInput{BatchSize: 10, Phase: "fields", Totals: workflows.SweepTotals{States: 7}})
	require.NoError(t, env.GetWorkflowError())
	var got workflows.SweepTotals
	require.NoError(t, env.GetWorkflowResult(&got))
	require.Equal(t, workflows.SweepTotals{States: 7, Fields: 1, Turns: 1, Exports: 1, Notes: 1}, got)
	env.AssertExpectations(t)
}
