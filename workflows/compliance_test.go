package workflows_test

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
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

func mockErasureSteps(env *testsuite.TestWorkflowEnvironment, a *activities.ComplianceActivities, except ...any) {
	skip := func(fn any) bool {
		for _, e := range except {
			if workflowName(e) == workflowName(fn) {
				return true
			}
		}
		return false
	}
	for _, fn := range []any{a.ResolveErasure, a.EraseSubjectStates, a.EraseSubjectTurns, a.EraseSubjectExports, a.EraseSubjectKnowledge, a.EraseSubjectProfiles, a.DestroySubjectKeys} {
		if !skip(fn) {
			env.OnActivity(fn, mock.Anything, mock.Anything).Return(1, nil)
		}
	}
	env.OnActivity(a.PurgeSubjectCaches, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.CheckpointStore, mock.Anything, mock.Anything).Return(nil)
	if !skip(a.ProbeErasure) {
		env.OnActivity(a.ProbeErasure, mock.Anything, mock.Anything).Return(activities.ProbeResult{}, nil)
	}
}

func workflowName(fn any) string { return fmtName(fn) }

func TestErasureWorkflowRunsEveryStepAndCertifies(t *testing.T) {
	env, a := erasureEnv(t)
	mockErasureSteps(env, a)
	env.OnActivity(a.CertifyErasure, mock.Anything, activities.ErasureRef{SpaceID: "sp_1", ErasureID: "er_1"}).
		Return(activities.CertificateResult{ReceiptID: "rcpt_9", Seq: 9, Total: 6}, nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res workflows.ErasureResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, workflows.ErasureResult{ReceiptID: "rcpt_9", Seq: 9, Total: 6}, res)
	env.AssertExpectations(t)
}

// A step fails mid-erasure (after states were deleted); Temporal retries it and the erasure
// completes with its certificate, never marked failed.
func TestErasureWorkflowRetriesAFailedStep(t *testing.T) {
	env, a := erasureEnv(t)
	mockErasureSteps(env, a, a.EraseSubjectProfiles)
	env.OnActivity(a.EraseSubjectProfiles, mock.Anything, mock.Anything).Return(0, errors.New("database went away")).Twice()
	env.OnActivity(a.EraseSubjectProfiles, mock.Anything, mock.Anything).Return(1, nil).Once()
	env.OnActivity(a.CertifyErasure, mock.Anything, mock.Anything).Return(activities.CertificateResult{Seq: 4, Total: 6}, nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	env.AssertNumberOfCalls(t, "EraseSubjectProfiles", 3)
	env.AssertNotCalled(t, "FailErasure", mock.Anything, mock.Anything)
}

// A step that never succeeds marks the erasure failed with the step's name and fails the
// workflow; later steps (key destruction, certificate) never run.
func TestErasureWorkflowMarksFailedWhenAStepKeepsFailing(t *testing.T) {
	env, a := erasureEnv(t)
	mockErasureSteps(env, a, a.EraseSubjectExports)
	env.OnActivity(a.EraseSubjectExports, mock.Anything, mock.Anything).Return(0, errors.New("disk full"))
	env.OnActivity(a.FailErasure, mock.Anything, activities.FailRef{SpaceID: "sp_1", ID: "er_1", Reason: "step_failed:exports"}).Return(nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError())
	env.AssertNumberOfCalls(t, "EraseSubjectExports", 10)
	env.AssertNotCalled(t, "DestroySubjectKeys", mock.Anything, mock.Anything)
	env.AssertNotCalled(t, "CertifyErasure", mock.Anything, mock.Anything)
	env.AssertNumberOfCalls(t, "FailErasure", 1)
}

// Something written for the subject during the first round: the probe finds it, the steps
// run again (resolve once), the second probe is clean and the erasure is certified.
func TestErasureWorkflowRerunsOnResidue(t *testing.T) {
	env, a := erasureEnv(t)
	mockErasureSteps(env, a, a.ProbeErasure)
	ref := activities.ErasureRef{SpaceID: "sp_1", ErasureID: "er_1"}
	env.OnActivity(a.ProbeErasure, mock.Anything, ref).Return(activities.ProbeResult{Residue: []string{"state", "keys"}}, nil).Once()
	env.OnActivity(a.ProbeErasure, mock.Anything, ref).Return(activities.ProbeResult{}, nil).Once()
	env.OnActivity(a.RerunErasure, mock.Anything, activities.RoundRef{SpaceID: "sp_1", ErasureID: "er_1", Round: 2}).Return(nil).Once()
	env.OnActivity(a.CertifyErasure, mock.Anything, ref).Return(activities.CertificateResult{Seq: 5, Total: 8}, nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	env.AssertNumberOfCalls(t, "ResolveErasure", 1)
	env.AssertNumberOfCalls(t, "EraseSubjectStates", 2)
	env.AssertNumberOfCalls(t, "DestroySubjectKeys", 2)
	env.AssertNumberOfCalls(t, "ProbeErasure", 2)
	env.AssertNotCalled(t, "FailErasure", mock.Anything, mock.Anything)
	env.AssertExpectations(t)
}

// Residue after every round: three rounds, then the erasure fails with the stores the last
// probe named, and no certificate is asked for.
func TestErasureWorkflowFailsAfterLastRound(t *testing.T) {
	env, a := erasureEnv(t)
	mockErasureSteps(env, a, a.ProbeErasure)
	env.OnActivity(a.ProbeErasure, mock.Anything, mock.Anything).Return(activities.ProbeResult{Residue: []string{"state", "keys"}}, nil)
	env.OnActivity(a.RerunErasure, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(a.FailErasure, mock.Anything, activities.FailRef{SpaceID: "sp_1", ID: "er_1", Reason: "residue:state,keys"}).Return(nil).Once()
	env.ExecuteWorkflow(workflows.ErasureWorkflow, workflows.ErasureInput{SpaceID: "sp_1", ErasureID: "er_1"})
	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError())
	env.AssertNumberOfCalls(t, "ProbeErasure", 3)
	env.AssertNumberOfCalls(t, "RerunErasure", 2)
	env.AssertNumberOfCalls(t, "EraseSubjectStates", 3)
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
	for _, ph := range []string{"fields", "turns", "exports"} {
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
	require.Equal(t, workflows.SweepTotals{States: 7, Fields: 1, Turns: 1, Exports: 1}, got)
	env.AssertExpectations(t)
}
