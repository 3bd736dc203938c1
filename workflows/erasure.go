package workflows

import (
	"errors"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/compliance"
)

// ErasureInput names the erasure to run; the target itself stays in the database (as a keyed
// hash), never in the history.
type ErasureInput struct {
	SpaceID   string
	ErasureID string
}

// ErasureResult is where the certificate's receipt sits and how many items were erased.
type ErasureResult struct {
	ReceiptID    string
	Seq          int64
	Total        int
	NothingFound bool
}

// complianceActivityOptions: each step may take two minutes and is retried with backoff up to
// ten times (steps are idempotent: a retry finds nothing it already erased).
func complianceActivityOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
		},
	})
}

// erasureKnowledge is the version marker of the knowledge step (workflows started before it
// replay without it).
const erasureKnowledge = "erasure-knowledge"

// erasureRerun is the version marker of ErasureWorkflow's re-run rounds (workflows started
// before it replay with the single round whose Certify fails on residue).
const erasureRerun = "erasure-rerun"

// erasureRegistry is the version marker of the registry-driven erasure (issue 29 §4): the
// stores recorded on the erasure row, erased one by one through EraseStore. Workflows
// started before it replay their fixed steps (fixedStepErasure, with its own two markers).
const erasureRegistry = "erasure-registry"

// ErasureWorkflow erases a subject or a conversation (WM-13, GOV-2, MS-4): it resolves the
// scope (moving the erasure pending → running; a failed or completed erasure makes it fail)
// and the stores to erase (the erasure registry's names, recorded on the erasure row), has
// each of those stores erase its rows in that order (EraseStore: states, turns and identity
// links, data packages, knowledge documents naming the subject, profiles...), destroys the
// subject's keys, purges caches, checkpoints the database, then probes every store for
// residue. Residue (something written for the subject during the erasure, e.g. by an agent
// still in conversation) runs the steps again, the erasure staying running, up to
// compliance.MaxErasureRounds rounds in all; residue after the last round fails the erasure
// with "residue:<stores>". With no residue it completes with the certificate receipt
// (Certify probes once more and never certifies residue). It waits on nothing but its
// activities (2 min each, 10 attempts); it takes no signals. A step that still fails marks
// the erasure failed with "step_failed:<step>" (what was erased stays erased; a new request
// finishes the rest) and fails the workflow. Before the certificate (version
// "erasure-sinks") it waits, at pending_sinks, until every export sink of the space has
// acknowledged the erasure's tombstones (awaitSinks).
func ErasureWorkflow(ctx workflow.Context, in ErasureInput) (ErasureResult, error) {
	ctx = complianceActivityOptions(ctx)
	if workflow.GetVersion(ctx, erasureRegistry, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return fixedStepErasure(ctx, in)
	}
	var a *activities.ComplianceActivities
	ref := activities.ErasureRef{SpaceID: in.SpaceID, ErasureID: in.ErasureID}
	var res activities.Resolution
	if err := workflow.ExecuteActivity(ctx, a.ResolveErasureStores, ref).Get(ctx, &res); err != nil {
		return ErasureResult{}, failErasure(ctx, in, "step_failed:resolve", err)
	}
	steps := make([]erasureStep, 0, len(res.Stores)+3)
	for _, name := range res.Stores {
		steps = append(steps, erasureStep{name, a.EraseStore, activities.StoreRef{SpaceID: in.SpaceID, ErasureID: in.ErasureID, Store: name}})
	}
	steps = append(steps, erasureStep{"keys", a.DestroySubjectKeys, ref}, erasureStep{"caches", a.PurgeSubjectCaches, ref},
		erasureStep{"checkpoint", a.CheckpointStore, ref})
	if err := erasureRounds(ctx, in, steps); err != nil {
		return ErasureResult{}, err
	}
	if workflow.GetVersion(ctx, erasureSinks, workflow.DefaultVersion, 1) == 1 {
		if err := awaitSinks(ctx, in); err != nil {
			return ErasureResult{}, err
		}
	}
	return certifyErasure(ctx, in)
}

// erasureSinks is the version marker of the export-sinks step (issue 33): after the probe,
// the erasure waits (pending_sinks) until every export sink acknowledged its tombstones.
// Registry-driven workflows started before it replay straight to the certificate.
const erasureSinks = "erasure-sinks"

// awaitSinks runs AwaitErasureSinks until the sinks caught up: retried from 1 s doubling to
// 1 minute, without limit (a sink down for a day holds the erasure at pending_sinks for a
// day; only the retries' last failure is in the history). A non-retryable failure fails the
// erasure with "step_failed:sinks".
func awaitSinks(ctx workflow.Context, in ErasureInput) error {
	var a *activities.ComplianceActivities
	sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	ref := activities.ErasureRef{SpaceID: in.SpaceID, ErasureID: in.ErasureID}
	if err := workflow.ExecuteActivity(sctx, a.AwaitErasureSinks, ref).Get(sctx, nil); err != nil {
		return failErasure(ctx, in, "step_failed:sinks", err)
	}
	return nil
}

// erasureStep is one activity of an erasure round: its name (in failure reasons), the
// activity and its input.
type erasureStep struct {
	name string
	fn   any
	arg  any
}

// runErasureSteps runs steps in order; the first that still fails marks the erasure failed.
func runErasureSteps(ctx workflow.Context, in ErasureInput, steps []erasureStep) error {
	for _, st := range steps {
		if err := workflow.ExecuteActivity(ctx, st.fn, st.arg).Get(ctx, nil); err != nil {
			return failErasure(ctx, in, "step_failed:"+st.name, err)
		}
	}
	return nil
}

// erasureRounds runs steps, then the probe, up to compliance.MaxErasureRounds rounds (a
// re-run after residue moves the erasure to the next round first); residue after the last
// round fails the erasure with "residue:<stores>".
func erasureRounds(ctx workflow.Context, in ErasureInput, steps []erasureStep) error {
	var a *activities.ComplianceActivities
	ref := activities.ErasureRef{SpaceID: in.SpaceID, ErasureID: in.ErasureID}
	for round := 1; ; round++ {
		if round > 1 {
			r := activities.RoundRef{SpaceID: in.SpaceID, ErasureID: in.ErasureID, Round: round}
			if err := workflow.ExecuteActivity(ctx, a.RerunErasure, r).Get(ctx, nil); err != nil {
				return failErasure(ctx, in, "step_failed:rerun", err)
			}
		}
		if err := runErasureSteps(ctx, in, steps); err != nil {
			return err
		}
		var p activities.ProbeResult
		if err := workflow.ExecuteActivity(ctx, a.ProbeErasure, ref).Get(ctx, &p); err != nil {
			return failErasure(ctx, in, "step_failed:probe", err)
		}
		if len(p.Residue) == 0 {
			return nil
		}
		if round >= compliance.MaxErasureRounds {
			stores := strings.Join(p.Residue, ",")
			cause := temporal.NewNonRetryableApplicationError("the probe found data left in: "+stores, "residue", nil)
			return failErasure(ctx, in, "residue:"+stores, cause)
		}
	}
}

// certifyErasure completes the erasure with its certificate receipt.
func certifyErasure(ctx workflow.Context, in ErasureInput) (ErasureResult, error) {
	var a *activities.ComplianceActivities
	var c activities.CertificateResult
	ref := activities.ErasureRef{SpaceID: in.SpaceID, ErasureID: in.ErasureID}
	if err := workflow.ExecuteActivity(ctx, a.CertifyErasure, ref).Get(ctx, &c); err != nil {
		return ErasureResult{}, failErasure(ctx, in, "step_failed:certify", err)
	}
	return ErasureResult{ReceiptID: c.ReceiptID, Seq: c.Seq, Total: c.Total, NothingFound: c.NothingFound}, nil
}

// fixedStepErasure is ErasureWorkflow as shipped before the registry drove it: a fixed list
// of steps (the knowledge step behind "erasure-knowledge", the re-run rounds behind
// "erasure-rerun"), kept so that histories started then replay unchanged.
func fixedStepErasure(ctx workflow.Context, in ErasureInput) (ErasureResult, error) {
	var a *activities.ComplianceActivities
	ref := activities.ErasureRef{SpaceID: in.SpaceID, ErasureID: in.ErasureID}
	steps := []erasureStep{
		{"states", a.EraseSubjectStates, ref},
		{"turns", a.EraseSubjectTurns, ref},
		{"exports", a.EraseSubjectExports, ref},
		{"profiles", a.EraseSubjectProfiles, ref},
		{"keys", a.DestroySubjectKeys, ref},
		{"caches", a.PurgeSubjectCaches, ref},
		{"checkpoint", a.CheckpointStore, ref},
	}
	if workflow.GetVersion(ctx, erasureKnowledge, workflow.DefaultVersion, 1) == 1 {
		steps = slices.Insert(steps, 3, erasureStep{"knowledge", a.EraseSubjectKnowledge, ref})
	}
	resolve := erasureStep{"resolve", a.ResolveErasure, ref}
	if workflow.GetVersion(ctx, erasureRerun, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		if err := runErasureSteps(ctx, in, append([]erasureStep{resolve}, steps...)); err != nil {
			return ErasureResult{}, err
		}
	} else {
		if err := runErasureSteps(ctx, in, []erasureStep{resolve}); err != nil {
			return ErasureResult{}, err
		}
		if err := erasureRounds(ctx, in, steps); err != nil {
			return ErasureResult{}, err
		}
	}
	return certifyErasure(ctx, in)
}

// failErasure marks the erasure failed with reason and returns cause, joined with the
// failure of that marking if it failed too (never dropped).
func failErasure(ctx workflow.Context, in ErasureInput, reason string, cause error) error {
	var a *activities.ComplianceActivities
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if err := workflow.ExecuteActivity(dctx, a.FailErasure, activities.FailRef{SpaceID: in.SpaceID, ID: in.ErasureID, Reason: reason}).Get(dctx, nil); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// NoteErasureInput names the agent (source) whose notes and proposals are erased, and who
// asked (a key id).
type NoteErasureInput struct {
	SpaceID  string
	SourceID string
	ActorKey string
}

// noteErasureCheckpoint is the version marker of NoteErasureWorkflow's checkpoint step
// (workflows started before it replay without the step).
const noteErasureCheckpoint = "note-erasure-checkpoint"

// NoteErasureWorkflow erases every note (all versions) and proposal of one agent through the
// notes package, with an admin receipt (AM-12), then runs the checkpoint step subject erasure
// runs (SQLite: WAL checkpoint and truncate; PostgreSQL: nothing, the retention sweep's
// vacuum phase reclaims the space in batches), so the erased text leaves the database files. Activities of 2 min, 10 attempts; no signals.
func NoteErasureWorkflow(ctx workflow.Context, in NoteErasureInput) (activities.NoteErasureResult, error) {
	var a *activities.ComplianceActivities
	ctx = complianceActivityOptions(ctx)
	var out activities.NoteErasureResult
	if err := workflow.ExecuteActivity(ctx, a.EraseSourceNotes, activities.NoteErasureInput(in)).Get(ctx, &out); err != nil {
		return out, err
	}
	if workflow.GetVersion(ctx, noteErasureCheckpoint, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return out, nil
	}
	err := workflow.ExecuteActivity(ctx, a.CheckpointStore, activities.ErasureRef{SpaceID: in.SpaceID}).Get(ctx, nil)
	return out, err
}
