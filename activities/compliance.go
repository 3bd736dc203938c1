package activities

import (
	"context"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/fault"
)

// ComplianceActivities are the steps of ErasureWorkflow, ExportWorkflow,
// RetentionSweepWorkflow and NoteErasureWorkflow over a compliance.Service. Workflows starts
// the workflows of orphaned erasures and exports (worker.Starter; nil: ReconcileWorkflows does
// nothing); ReconcileMinAge is how old such a row must be (zero:
// compliance.DefaultReconcileMinAge).
type ComplianceActivities struct {
	Compliance      *compliance.Service
	Workflows       compliance.WorkflowStarter
	ReconcileMinAge time.Duration
}

// ErasureRef names an erasure of a space.
type ErasureRef struct {
	SpaceID   string
	ErasureID string
}

// ExportRef names an export of a space.
type ExportRef struct {
	SpaceID  string
	ExportID string
}

// FailRef names a failed erasure or export with a short reason code.
type FailRef struct {
	SpaceID string
	ID      string
	Reason  string
}

// SweepBatchInput is one retention batch: a phase (compliance.SweepPhases), the cursor
// within it, a batch size and the space (every space when empty).
type SweepBatchInput struct {
	SpaceID string
	Phase   string
	Cursor  string
	Limit   int
}

// SweepBatchResult is what a batch removed and where the next one starts.
type SweepBatchResult struct {
	Removed int
	Cursor  string
	Done    bool
}

// NoteErasureInput names the source (agent) whose notes are erased, and who asked.
type NoteErasureInput struct {
	SpaceID  string
	SourceID string
	ActorKey string
}

// NoteErasureResult counts what a note erasure removed.
type NoteErasureResult struct {
	Notes     int
	Proposals int
}

// ExportResult counts what a package holds.
type ExportResult struct {
	Profiles int
	States   int
	Turns    int
}

// CertificateResult is where an erasure's certificate sits: its receipt and total count.
type CertificateResult struct {
	ReceiptID    string
	Seq          int64
	Total        int
	NothingFound bool
}

// ResolveErasure fixes what the erasure covers; it returns the number of profiles found.
// Workflows started before the registry drove the erasure call it; later ones call
// ResolveErasureStores.
func (a *ComplianceActivities) ResolveErasure(ctx context.Context, in ErasureRef) (int, error) {
	r, err := a.Compliance.ResolveErasure(ctx, in.SpaceID, in.ErasureID)
	return r.Profiles, classify(err)
}

// Resolution is what ResolveErasureStores fixed: the number of profiles found and the store
// names, in order, the workflow erases one by one (names only, never data).
type Resolution struct {
	Profiles int
	Stores   []string
}

// ResolveErasureStores fixes what the erasure covers and the stores it erases (recorded on
// the erasure row from the registry).
func (a *ComplianceActivities) ResolveErasureStores(ctx context.Context, in ErasureRef) (Resolution, error) {
	r, err := a.Compliance.ResolveErasure(ctx, in.SpaceID, in.ErasureID)
	if err != nil {
		return Resolution{}, classify(err)
	}
	return Resolution{Profiles: r.Profiles, Stores: r.Stores}, nil
}

// StoreRef names one store (a registered eraser's name) of an erasure.
type StoreRef struct {
	SpaceID   string
	ErasureID string
	Store     string
}

// EraseStore has one registered store erase what the erasure's target reaches there; it
// returns how many items it removed.
func (a *ComplianceActivities) EraseStore(ctx context.Context, in StoreRef) (int, error) {
	n, err := a.Compliance.EraseStore(ctx, in.SpaceID, in.ErasureID, in.Store)
	return n, classify(err)
}

// EraseSubjectStates deletes the working states in the erasure's scope.
func (a *ComplianceActivities) EraseSubjectStates(ctx context.Context, in ErasureRef) (int, error) {
	n, err := a.Compliance.EraseStates(ctx, in.SpaceID, in.ErasureID)
	return n, classify(err)
}

// EraseSubjectTurns deletes the identity links and turns in the erasure's scope.
func (a *ComplianceActivities) EraseSubjectTurns(ctx context.Context, in ErasureRef) (int, error) {
	n, err := a.Compliance.EraseTurns(ctx, in.SpaceID, in.ErasureID)
	return n, classify(err)
}

// EraseSubjectExports deletes the subject's data packages.
func (a *ComplianceActivities) EraseSubjectExports(ctx context.Context, in ErasureRef) (int, error) {
	n, err := a.Compliance.EraseExports(ctx, in.SpaceID, in.ErasureID)
	return n, classify(err)
}

// EraseSubjectKnowledge deletes the knowledge documents naming the subject, with their
// chunks, vectors and full-text entries.
func (a *ComplianceActivities) EraseSubjectKnowledge(ctx context.Context, in ErasureRef) (int, error) {
	n, err := a.Compliance.EraseKnowledge(ctx, in.SpaceID, in.ErasureID)
	return n, classify(err)
}

// EraseSubjectProfiles deletes the subject's profiles and handles.
func (a *ComplianceActivities) EraseSubjectProfiles(ctx context.Context, in ErasureRef) (int, error) {
	n, err := a.Compliance.EraseProfiles(ctx, in.SpaceID, in.ErasureID)
	return n, classify(err)
}

// DestroySubjectKeys destroys the subject's data keys.
func (a *ComplianceActivities) DestroySubjectKeys(ctx context.Context, in ErasureRef) (int, error) {
	n, err := a.Compliance.DestroyKeys(ctx, in.SpaceID, in.ErasureID)
	return n, classify(err)
}

// PurgeSubjectCaches drops this worker's cached subjects of the space.
func (a *ComplianceActivities) PurgeSubjectCaches(ctx context.Context, in ErasureRef) error {
	a.Compliance.PurgeCaches(ctx, in.SpaceID)
	return nil
}

// CheckpointStore makes deleted rows leave the database files (SQLite checkpoint).
func (a *ComplianceActivities) CheckpointStore(ctx context.Context, _ ErasureRef) error {
	return classify(a.Compliance.Checkpoint(ctx))
}

// CertifyErasure completes the erasure with its certificate receipt.
func (a *ComplianceActivities) CertifyErasure(ctx context.Context, in ErasureRef) (CertificateResult, error) {
	c, err := a.Compliance.Certify(ctx, in.SpaceID, in.ErasureID)
	if err != nil {
		return CertificateResult{}, classify(err)
	}
	out := CertificateResult{Total: c.Total, NothingFound: c.NothingFound}
	if c.Receipt != nil {
		out.ReceiptID, out.Seq = c.Receipt.ReceiptID, c.Receipt.Seq
	}
	return out, nil
}

// AwaitErasureSinks holds a certified-to-be erasure until every export sink of its space has
// acknowledged the feed cursor of its tombstones (issue 33; compliance.Service.AwaitSinks):
// while one has not, the erasure shows pending_sinks and this fails with the retryable
// "pending_sinks" (naming the sinks, never data), so the workflow's retries wait for them.
func (a *ComplianceActivities) AwaitErasureSinks(ctx context.Context, in ErasureRef) error {
	pending, err := a.Compliance.AwaitSinks(ctx, in.SpaceID, in.ErasureID)
	if err != nil {
		return classify(err)
	}
	if len(pending) > 0 {
		return temporal.NewApplicationError("export sinks have not acknowledged the erasure's tombstones: "+strings.Join(pending, ", "), "pending_sinks")
	}
	return nil
}

// ProbeResult names the stores where the probe found residue of an erasure's target (empty:
// none). Store names only, never data.
type ProbeResult struct {
	Residue []string
}

// RoundRef names the round (2..compliance.MaxErasureRounds) an erasure re-runs its steps in.
type RoundRef struct {
	SpaceID   string
	ErasureID string
	Round     int
}

// ProbeErasure asks every store for residue of the erasure's target, changing nothing.
func (a *ComplianceActivities) ProbeErasure(ctx context.Context, in ErasureRef) (ProbeResult, error) {
	r, err := a.Compliance.Probe(ctx, in.SpaceID, in.ErasureID)
	if err != nil {
		return ProbeResult{}, classify(err)
	}
	return ProbeResult{Residue: r}, nil
}

// RerunErasure starts the next round of the erasure's steps (the erasure stays running).
func (a *ComplianceActivities) RerunErasure(ctx context.Context, in RoundRef) error {
	return classify(a.Compliance.RerunErasure(ctx, in.SpaceID, in.ErasureID, in.Round))
}

// FailErasure marks the erasure failed.
func (a *ComplianceActivities) FailErasure(ctx context.Context, in FailRef) error {
	return classify(a.Compliance.FailErasure(ctx, in.SpaceID, in.ID, in.Reason))
}

// BuildExport builds and seals the subject's data package.
func (a *ComplianceActivities) BuildExport(ctx context.Context, in ExportRef) (ExportResult, error) {
	c, err := a.Compliance.BuildExport(ctx, in.SpaceID, in.ExportID)
	return ExportResult{Profiles: c.Profiles, States: c.States, Turns: c.Turns}, classify(err)
}

// FailExport marks the export failed.
func (a *ComplianceActivities) FailExport(ctx context.Context, in FailRef) error {
	return classify(a.Compliance.FailExport(ctx, in.SpaceID, in.ID, in.Reason))
}

// SweepRetentionBatch runs one retention batch.
func (a *ComplianceActivities) SweepRetentionBatch(ctx context.Context, in SweepBatchInput) (SweepBatchResult, error) {
	o, err := a.Compliance.SweepBatch(ctx, in.SpaceID, in.Phase, in.Cursor, in.Limit)
	return SweepBatchResult{Removed: o.Removed, Cursor: o.Cursor, Done: o.Done}, classify(err)
}

// EraseSourceNotes erases every note and proposal of one agent (AM-12).
func (a *ComplianceActivities) EraseSourceNotes(ctx context.Context, in NoteErasureInput) (NoteErasureResult, error) {
	c, err := a.Compliance.EraseNotes(ctx, in.SpaceID, in.SourceID, in.ActorKey)
	return NoteErasureResult{Notes: c.Notes, Proposals: c.Proposals}, classify(err)
}

// ReconcileInput names the space whose orphaned erasures and exports are restarted (every
// space when empty).
type ReconcileInput struct {
	SpaceID string
}

// ReconcileResult counts the unfinished rows checked, the workflows started and the rows
// failed because their workflow had ended without finishing them.
type ReconcileResult struct {
	Checked int
	Started int
	Failed  int
}

// ReconcileWorkflows starts the missing workflows of erasures and exports still unfinished
// (compliance.Service.Reconcile): rows whose request committed and then died before starting
// the workflow; rows whose workflow ended without finishing them are failed.
func (a *ComplianceActivities) ReconcileWorkflows(ctx context.Context, in ReconcileInput) (ReconcileResult, error) {
	if a.Workflows == nil {
		return ReconcileResult{}, nil
	}
	age := a.ReconcileMinAge
	if age <= 0 {
		age = compliance.DefaultReconcileMinAge
	}
	r, err := a.Compliance.Reconcile(ctx, a.Workflows, in.SpaceID, age)
	return ReconcileResult{Checked: r.Checked, Started: r.Started, Failed: r.Failed}, err
}

// classify makes domain refusals (not found, invalid) non-retryable, under their code only
// (messages never carry personal data, but codes are all a history needs); other errors are
// retried by the workflow's policy.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if fe := fault.As(err); fe != nil && fe.Kind != fault.Unavailable {
		return temporal.NewNonRetryableApplicationError(fe.Code, fe.Code, nil)
	}
	return err
}
