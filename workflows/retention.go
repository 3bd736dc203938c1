package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentmemory/agentmemory/activities"
)

// Sweep defaults: the batch size of one activity and how many batches run before the
// workflow continues as new (keeping its history small).
const (
	DefaultSweepBatch      = 500
	DefaultSweepMaxBatches = 50
)

// reconcileChange is the GetVersion id of the orphan reconcile step added to sweeps.
const reconcileChange = "reconcile-orphans"

// vacuumChange is the GetVersion id of the vacuum phase added after the exports phase
// (issue 12 §3); vacuumPhase mirrors compliance.PhaseVacuum: one table per batch on
// PostgreSQL, so erasures no longer vacuum whole tables per request.
const (
	vacuumChange = "vacuum-phase"
	vacuumPhase  = "vacuum"
)

// notesChange is the GetVersion id of the notes phase added after the exports phase (issue
// 34 §1: notes past retention.notes are retired); notesPhase mirrors compliance.PhaseNotes.
const (
	notesChange = "notes-phase"
	notesPhase  = "notes"
)

// Sweep phases in order (mirrors compliance.SweepPhases; workflows do not import internal).
var sweepPhases = []string{"states", "fields", "turns", "exports"}

// SweepTotals counts what a sweep removed so far, by phase.
type SweepTotals struct {
	States  int
	Fields  int
	Turns   int
	Exports int
	Notes   int
}

// RetentionSweepInput configures a sweep. SpaceID limits it to one space (empty: every
// space, as the schedule runs it). BatchSize and MaxBatches default to DefaultSweepBatch and
// DefaultSweepMaxBatches. Phase, Cursor and Totals carry progress across continue-as-new.
type RetentionSweepInput struct {
	SpaceID    string
	BatchSize  int
	MaxBatches int
	Phase      string
	Cursor     string
	Totals     SweepTotals
}

// RetentionSweepWorkflow removes expired data (WM-12, MS-3): whole states past retention,
// expired fields, turns past retention and expired data packages, in batches of one activity
// each (2 min, 10 attempts). After MaxBatches batches (or when Temporal suggests it) it
// continues as new with its progress, so a sweep of millions of rows keeps a small history.
// No signals or timers. Expiry is computed by the activities in UTC.
//
// A fresh sweep (not a continuation) first restarts the missing workflows of erasures and
// exports left running by a request that died between its commit and its workflow start
// (ReconcileWorkflows: 1 min, 3 attempts; a failure there does not stop the sweep, the next
// one tries again). Guarded by GetVersion "reconcile-orphans" for sweeps already running.
func RetentionSweepWorkflow(ctx workflow.Context, in RetentionSweepInput) (SweepTotals, error) {
	var a *activities.ComplianceActivities
	if in.Phase == "" && workflow.GetVersion(ctx, reconcileChange, workflow.DefaultVersion, 1) == 1 {
		reconcileOrphans(ctx, in.SpaceID)
	}
	ctx = complianceActivityOptions(ctx)
	in = withSweepDefaults(in)
	for batches := 0; ; batches++ {
		if batches >= in.MaxBatches || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return SweepTotals{}, workflow.NewContinueAsNewError(ctx, RetentionSweepWorkflow, in)
		}
		var out activities.SweepBatchResult
		err := workflow.ExecuteActivity(ctx, a.SweepRetentionBatch, activities.SweepBatchInput{
			SpaceID: in.SpaceID, Phase: in.Phase, Cursor: in.Cursor, Limit: in.BatchSize,
		}).Get(ctx, &out)
		if err != nil {
			return in.Totals, err
		}
		in.Totals.add(in.Phase, out.Removed)
		if !out.Done {
			in.Cursor = out.Cursor
			continue
		}
		next := phaseAfter(ctx, in.Phase)
		if next == "" {
			return in.Totals, nil
		}
		in.Phase, in.Cursor = next, ""
	}
}

// reconcileOrphans runs ReconcileWorkflows for spaceID (every space when empty: 1 min, 3
// attempts); a failure is logged and does not stop the sweep (the next one tries again).
func reconcileOrphans(ctx workflow.Context, spaceID string) {
	var a *activities.ComplianceActivities
	rctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
	})
	var r activities.ReconcileResult
	if err := workflow.ExecuteActivity(rctx, a.ReconcileWorkflows, activities.ReconcileInput{SpaceID: spaceID}).Get(rctx, &r); err != nil {
		workflow.GetLogger(ctx).Warn("reconcile of orphaned compliance workflows failed; the next sweep retries")
	}
}

// withSweepDefaults is in with BatchSize, MaxBatches and Phase defaulted (DefaultSweepBatch,
// DefaultSweepMaxBatches, the first phase) where not positive or empty.
func withSweepDefaults(in RetentionSweepInput) RetentionSweepInput {
	if in.BatchSize <= 0 {
		in.BatchSize = DefaultSweepBatch
	}
	if in.MaxBatches <= 0 {
		in.MaxBatches = DefaultSweepMaxBatches
	}
	if in.Phase == "" {
		in.Phase = sweepPhases[0]
	}
	return in
}

// add counts n rows removed by phase (the vacuum phase removes none it counts).
func (t *SweepTotals) add(phase string, n int) {
	switch phase {
	case "states":
		t.States += n
	case "fields":
		t.Fields += n
	case "turns":
		t.Turns += n
	case "exports":
		t.Exports += n
	case notesPhase:
		t.Notes += n
	}
}

// phaseAfter returns the phase that follows the finished phase, "" when the sweep is done:
// the next of sweepPhases, then (for workflows past the GetVersion changes "notes-phase" and
// "vacuum-phase", asked in that order and only when reached) notes, then vacuum.
func phaseAfter(ctx workflow.Context, phase string) string {
	next := nextPhase(phase)
	last := phase == sweepPhases[len(sweepPhases)-1]
	if next == "" && last && workflow.GetVersion(ctx, notesChange, workflow.DefaultVersion, 1) == 1 {
		next = notesPhase
	}
	if next == "" && (last || phase == notesPhase) &&
		workflow.GetVersion(ctx, vacuumChange, workflow.DefaultVersion, 1) == 1 {
		next = vacuumPhase
	}
	return next
}

func nextPhase(p string) string {
	for i, x := range sweepPhases {
		if x == p && i+1 < len(sweepPhases) {
			return sweepPhases[i+1]
		}
	}
	return ""
}
