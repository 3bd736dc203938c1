package compliance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"agentmemory/models"
)

// Kinds of workflow a reconciler restarts (Orphan.Kind).
const (
	WorkflowErasure = "erasure"
	WorkflowExport  = "export"
	// WorkflowDistill: a distilled note proposal still drafting (AM-9); its workflow is
	// workflows.DistillWorkflow under workflows.DistillID.
	WorkflowDistill = "distill"
)

// DefaultReconcileMinAge is how old a running erasure or export must be before a reconciler
// looks at its workflow: the API commits the row and starts the workflow right after, so a
// younger row is most likely still being started by the request that made it.
const DefaultReconcileMinAge = 30 * time.Second

// reconcileBatch bounds the rows of each kind one Reconcile call looks at.
const reconcileBatch = 1000

// Orphan names a running erasure or export, or a drafting distilled proposal, whose workflow
// may be missing: Kind is WorkflowErasure, WorkflowExport or WorkflowDistill, ID the
// erasure, export or proposal id.
type Orphan struct {
	Kind    string
	SpaceID string
	ID      string
}

// WorkflowStarter starts the workflow of an erasure or export when no workflow with its
// deterministic id exists, running or closed; it reports whether it started one. A workflow
// that exists, or already ran and finished, is never started again. The worker implements it
// with Temporal (DescribeWorkflowExecution, then a start refusing duplicate ids), so that
// this package stays free of Temporal.
type WorkflowStarter interface {
	StartMissing(ctx context.Context, o Orphan) (started bool, err error)
}

// ReconcileResult counts what a Reconcile call did: the running rows it checked and the
// workflows it started.
type ReconcileResult struct {
	Checked int `json:"checked"`
	Started int `json:"started"`
}

// Reconcile finds erasures and exports of spaceID (every space when empty) still pending or running and
// created at least minAge ago (unexpired, for exports), and distilled note proposals still
// drafting created at least minAge ago, and has starter start the workflow of
// each one whose workflow does not exist: the request that made the row committed it, then
// died before starting its workflow (a crash or kill between the two). At most 1,000 rows of
// each kind are checked per call, oldest first. Errors of single rows do not stop the others;
// they are returned joined, after the counts.
func (s *Service) Reconcile(ctx context.Context, starter WorkflowStarter, spaceID string, minAge time.Duration) (ReconcileResult, error) {
	now := s.now()
	before := now.Add(-minAge)
	var erasures []models.Erasure
	// "pending": a row whose request answered an ambiguous workflow-start error (issue 11 §3).
	open := bun.In([]string{StatusPending, StatusRunning})
	q := s.DB.NewSelect().Model(&erasures).Column("id", "space_id").
		Where("status IN (?) AND created_at <= ?", open, before).Order("created_at ASC").Limit(reconcileBatch)
	if err := scoped(q, spaceID).Scan(ctx); err != nil {
		return ReconcileResult{}, fmt.Errorf("compliance: reconcile erasures: %w", err)
	}
	var exports []models.ExportPackage
	q = s.DB.NewSelect().Model(&exports).Column("id", "space_id").
		Where("status IN (?) AND created_at <= ? AND expires_at > ?", open, before, now).Order("created_at ASC").Limit(reconcileBatch)
	if err := scoped(q, spaceID).Scan(ctx); err != nil {
		return ReconcileResult{}, fmt.Errorf("compliance: reconcile exports: %w", err)
	}
	// Distilled proposals still drafting: the request committed the proposal and died before
	// starting its DistillWorkflow ("drafting" and "distilled" are internal/notes'
	// ProposalDrafting and OriginDistilled; that package imports this one).
	var drafting []models.NoteProposal
	q = s.DB.NewSelect().Model(&drafting).Column("id", "space_id").
		Where("status = ? AND origin = ? AND created_at <= ?", "drafting", "distilled", before).Order("created_at ASC").Limit(reconcileBatch)
	if err := scoped(q, spaceID).Scan(ctx); err != nil {
		return ReconcileResult{}, fmt.Errorf("compliance: reconcile distillations: %w", err)
	}
	orphans := make([]Orphan, 0, len(erasures)+len(exports)+len(drafting))
	for _, r := range erasures {
		orphans = append(orphans, Orphan{Kind: WorkflowErasure, SpaceID: r.SpaceID, ID: r.ID})
	}
	for _, r := range exports {
		orphans = append(orphans, Orphan{Kind: WorkflowExport, SpaceID: r.SpaceID, ID: r.ID})
	}
	for _, r := range drafting {
		orphans = append(orphans, Orphan{Kind: WorkflowDistill, SpaceID: r.SpaceID, ID: r.ID})
	}
	var res ReconcileResult
	var errs []error
	for _, o := range orphans {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		res.Checked++
		started, err := starter.StartMissing(ctx, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("compliance: reconcile %s %s: %w", o.Kind, o.ID, err))
			continue
		}
		if started {
			res.Started++
		}
	}
	return res, errors.Join(errs...)
}

func scoped(q *bun.SelectQuery, spaceID string) *bun.SelectQuery {
	if spaceID != "" {
		q = q.Where("space_id = ?", spaceID)
	}
	return q
}
