package compliance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/models"
)

// Kinds of workflow a reconciler restarts (Orphan.Kind).
const (
	WorkflowErasure = "erasure"
	WorkflowExport  = "export"
	// WorkflowDistill: a distilled note proposal still drafting (AM-9); its workflow is
	// workflows.DistillWorkflow under workflows.DistillID.
	WorkflowDistill = "distill"
	// WorkflowAgentMemoryExport: an agent-memory export file still running (issue 33 §4); its
	// workflow is workflows.AgentMemoryExportWorkflow under workflows.AgentMemoryExportWorkflowID.
	WorkflowAgentMemoryExport = "agent_memory_export"
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

// WorkflowStarter starts the workflow of an erasure, export or distillation when no workflow
// with its deterministic id exists, running or closed, and says what it found. A workflow
// that exists, or already ran and finished, is never started again. The worker implements it
// with Temporal (DescribeWorkflowExecution, then a start refusing duplicate ids), so that
// this package stays free of Temporal.
type WorkflowStarter interface {
	StartMissing(ctx context.Context, o Orphan) (StartResult, error)
}

// StartResult is what WorkflowStarter.StartMissing found of an orphan's workflow: Started when
// it started the missing workflow; Closed, when a workflow with the id exists and has ended, is
// how it ended: one of the Closed* values. Both zero: the workflow is still running (a run
// that continued as new counts as running).
type StartResult struct {
	Started bool
	Closed  string
}

// How an existing workflow ended (StartResult.Closed). The reconciler fails a row still
// unfinished whose workflow ended in any of these, with reason "workflow_" + the value
// (e.g. "workflow_terminated").
const (
	ClosedCompleted  = "completed"
	ClosedFailed     = "failed"
	ClosedCanceled   = "canceled"
	ClosedTerminated = "terminated"
	ClosedTimedOut   = "timed_out"
)

// ReasonWorkflowClosed is the failure reason Reconcile records for a row whose workflow
// ended (closed) with the row still unfinished: "workflow_" + StartResult.Closed, e.g.
// "workflow_terminated".
func ReasonWorkflowClosed(closed string) string { return "workflow_" + closed }

// ProposalFailer ends a drafting distilled proposal failed with a reason code and its
// "proposal.fail" receipt; a proposal already failed is left as it is, one no longer
// drafting is an error. internal/proposals implements it (MarkFailed); this package cannot
// import proposals, so the application wires it into Service.Proposals.
type ProposalFailer func(ctx context.Context, id, reason string) error

// ReconcileResult counts what a Reconcile call did: the unfinished rows it checked, the
// workflows it started, and the rows it failed because their workflow had ended without
// finishing them.
type ReconcileResult struct {
	Checked int `json:"checked"`
	Started int `json:"started"`
	Failed  int `json:"failed"`
}

// Reconcile finds erasures, exports and agent-memory export files of spaceID (every space
// when empty) still pending or running and created at least minAge ago (unexpired, for
// exports and files), and distilled note proposals still
// drafting created at least minAge ago, and has starter start the workflow of
// each one whose workflow does not exist: the request that made the row committed it, then
// died before starting its workflow (a crash or kill between the two). A row whose workflow
// exists and has ended (terminated, failed, timed out, canceled, or completed without
// finishing the row) is moved to failed with reason ReasonWorkflowClosed (e.g.
// "workflow_terminated"), never to completed: an erasure through FailErasure (state machine
// pending|running → failed, "erasure.fail" receipt), an export through FailExport, a file
// by its row (running → failed), a drafting
// proposal through s.Proposals (left alone when nil). A row that finished meanwhile is left
// as it is; a row whose workflow still runs is not touched. At most 1,000 rows of each kind
// are checked per call, oldest first. Errors of single rows do not stop the others; they are
// returned joined, after the counts.
func (s *Service) Reconcile(ctx context.Context, starter WorkflowStarter, spaceID string, minAge time.Duration) (ReconcileResult, error) {
	now := s.now()
	orphans, err := s.orphans(ctx, spaceID, now.Add(-minAge), now)
	if err != nil {
		return ReconcileResult{}, err
	}
	var res ReconcileResult
	var errs []error
	for _, o := range orphans {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		res.Checked++
		found, err := starter.StartMissing(ctx, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("compliance: reconcile %s %s: %w", o.Kind, o.ID, err))
			continue
		}
		if found.Started {
			res.Started++
		}
		if found.Closed == "" {
			continue
		}
		failed, err := s.failOrphan(ctx, o, ReasonWorkflowClosed(found.Closed))
		if err != nil {
			errs = append(errs, fmt.Errorf("compliance: reconcile %s %s: fail: %w", o.Kind, o.ID, err))
			continue
		}
		if failed {
			res.Failed++
		}
	}
	return res, errors.Join(errs...)
}

// orphans lists the unfinished rows of spaceID (every space when empty) created at or
// before before: erasures pending or running, exports and agent-memory export files running
// and unexpired at now, distilled proposals drafting; at most reconcileBatch of each kind,
// oldest first.
func (s *Service) orphans(ctx context.Context, spaceID string, before, now time.Time) ([]Orphan, error) {
	// "pending": a row whose request answered an ambiguous workflow-start error (issue 11 §3).
	open := bun.In([]string{StatusPending, StatusRunning, StatusPendingSinks})
	var out []Orphan
	for _, k := range []struct {
		kind, table, where string
		args               []any
	}{
		{WorkflowErasure, "erasures", "status IN (?) AND created_at <= ?", []any{open, before}},
		{WorkflowExport, "export_packages", "status IN (?) AND created_at <= ? AND expires_at > ?", []any{open, before, now}},
		// Agent-memory export files (issue 33 §4; "running" is internal/proposals' ExportRunning).
		{WorkflowAgentMemoryExport, "agent_memory_exports", "status = 'running' AND created_at <= ? AND expires_at > ?", []any{before, now}},
		// Distilled proposals still drafting: the request committed the proposal and died before
		// starting its DistillWorkflow ("drafting" and "distilled" are internal/proposals'
		// StatusDrafting and internal/notes' OriginDistilled; both import this package).
		{WorkflowDistill, "note_proposals", "status = 'drafting' AND origin = 'distilled' AND created_at <= ?", []any{before}},
	} {
		var rows []struct {
			ID      string `bun:"id"`
			SpaceID string `bun:"space_id"`
		}
		q := s.DB.NewSelect().Table(k.table).Column("id", "space_id").Where(k.where, k.args...).Order("created_at ASC").Limit(reconcileBatch)
		if err := scoped(q, spaceID).Scan(ctx, &rows); err != nil {
			return nil, fmt.Errorf("compliance: reconcile %s: %w", k.table, err)
		}
		for _, r := range rows {
			out = append(out, Orphan{Kind: k.kind, SpaceID: r.SpaceID, ID: r.ID})
		}
	}
	return out, nil
}

// failOrphan moves orphan o, whose workflow has ended, to failed with reason; it reports
// whether it moved the row. A row that finished meanwhile (completed, or failed by its own
// workflow) is left as it is.
func (s *Service) failOrphan(ctx context.Context, o Orphan, reason string) (bool, error) {
	switch o.Kind {
	case WorkflowErasure:
		var row models.Erasure
		if err := s.DB.NewSelect().Model(&row).Column("status").Where("id = ? AND space_id = ?", o.ID, o.SpaceID).Scan(ctx); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return false, nil
			}
			return false, err
		}
		if row.Status != StatusPending && row.Status != StatusRunning && row.Status != StatusPendingSinks {
			return false, nil
		}
		if err := s.FailErasure(ctx, o.SpaceID, o.ID, reason); err != nil {
			if f := fault.As(err); f != nil && f.Code == "invalid_transition" {
				return false, nil // finished between the read and the move
			}
			return false, err
		}
		return true, nil
	case WorkflowExport:
		return s.failExportIfRunning(ctx, o.SpaceID, o.ID, reason)
	case WorkflowAgentMemoryExport:
		res, err := s.DB.NewUpdate().Model((*models.AgentMemoryExport)(nil)).Set("status = 'failed'").Set("failure = ?", reason).
			Set("package = NULL").Where("id = ? AND space_id = ? AND status = 'running'", o.ID, o.SpaceID).Exec(ctx)
		if err != nil {
			return false, fmt.Errorf("compliance: fail export file: %w", err)
		}
		n, err := res.RowsAffected()
		return n == 1, err
	case WorkflowDistill:
		if s.Proposals == nil {
			return false, nil
		}
		var row models.NoteProposal
		if err := s.DB.NewSelect().Model(&row).Column("status").Where("id = ?", o.ID).Scan(ctx); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return false, nil
			}
			return false, err
		}
		if row.Status != "drafting" {
			return false, nil
		}
		if err := s.Proposals(ctx, o.ID, reason); err != nil {
			if f := fault.As(err); f != nil && f.Kind == fault.Conflict {
				return false, nil // decided or failed meanwhile
			}
			return false, err
		}
		return true, nil
	}
	return false, fmt.Errorf("unknown workflow kind %q", o.Kind)
}

func scoped(q *bun.SelectQuery, spaceID string) *bun.SelectQuery {
	if spaceID != "" {
		q = q.Where("space_id = ?", spaceID)
	}
	return q
}
