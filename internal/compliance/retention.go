package compliance

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/quotas"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// Sweep phases, run in this order by RetentionSweepWorkflow (WM-12, MS-3).
const (
	PhaseStates  = "states"  // whole states past retention.state
	PhaseFields  = "fields"  // expired fields inside live states
	PhaseTurns   = "turns"   // turns past their retention (TurnSweeper)
	PhaseExports = "exports" // expired data packages
	// PhaseNotes retires notes past retention.notes (NoteSweeper; issue 34 §1). It runs after
	// PhaseExports in sweeps started by this version (workflow version marker "notes-phase").
	PhaseNotes = "notes"
)

// SweepPhases lists the phases in order.
var SweepPhases = []string{PhaseStates, PhaseFields, PhaseTurns, PhaseExports}

// PhaseVacuum is the sweep's last phase (issue 12 §3): on PostgreSQL it vacuums one table of
// VacuumTables per batch (cursor: the next table's index), so that unsealed derived entries
// erasures and sweeps deleted (keyed hashes, full-text entries) leave the disk; erasures no
// longer vacuum per request. On SQLite (secure_delete) it does nothing. It runs after
// PhaseExports in sweeps started by this version (workflow version marker "vacuum-phase").
const PhaseVacuum = "vacuum"

// VacuumTables returns the tables PhaseVacuum vacuums, one per batch, derived from what
// erasure deletes rows of (issue 29 §4): every table the registered erasers cover, in
// registration order, then the agent-note eraser's (Notes), each once.
func (s *Service) VacuumTables() []string {
	var notes []erasure.Column
	if s.Notes != nil {
		notes = s.Notes.Covers()
	}
	return erasure.Tables(s.Registry().Covers(notes))
}

// vacuumBatch vacuums the table at index cursor (outside any transaction: PostgreSQL refuses
// VACUUM in one) and returns the next cursor.
func (s *Service) vacuumBatch(ctx context.Context, cursor string) (SweepOutcome, error) {
	i := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 {
			return SweepOutcome{}, fault.New(fault.Invalid, "invalid_cursor", "vacuum cursor is a table index")
		}
		i = n
	}
	if db.IsSQLite(s.DB) {
		return SweepOutcome{Done: true}, nil
	}
	tables, err := s.vacuumTables(ctx)
	if err != nil {
		return SweepOutcome{}, err
	}
	if i >= len(tables) {
		return SweepOutcome{Done: true}, nil
	}
	if _, err := s.DB.ExecContext(ctx, "VACUUM "+tables[i]); err != nil {
		return SweepOutcome{}, fmt.Errorf("compliance: vacuum: %w", err)
	}
	return SweepOutcome{Cursor: strconv.Itoa(i + 1), Done: i+1 >= len(tables)}, nil
}

// vacuumTables is VacuumTables that exist in the current schema (a store's SQLite-only
// index, e.g. a full-text table, has no PostgreSQL table), followed by the knowledge store's
// pgvector tables (knowledge_vec_<dims>, one per vector length, created when a length first
// appears, sorted): VACUUM is what takes an erased vector out of the table's pages and the
// HNSW graph.
func (s *Service) vacuumTables(ctx context.Context) ([]string, error) {
	var existing, vec []string
	if err := s.DB.NewRaw("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").Scan(ctx, &existing); err != nil {
		return nil, fmt.Errorf("compliance: vacuum: %w", err)
	}
	if err := s.DB.NewRaw("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename ~ '^knowledge_vec_[0-9]+$' ORDER BY tablename").Scan(ctx, &vec); err != nil {
		return nil, fmt.Errorf("compliance: vacuum: %w", err)
	}
	var out []string
	for _, t := range s.VacuumTables() {
		if slices.Contains(existing, t) {
			out = append(out, t)
		}
	}
	return append(out, vec...), nil
}

// SweepOutcome is what one batch did: how many items it removed, the cursor of the next
// batch of the same phase, and whether the phase is done.
type SweepOutcome struct {
	Removed int
	Cursor  string
	Done    bool
}

// SweepBatch runs one batch of phase over spaceID (every space when empty) at the service's
// clock, in UTC: it removes at most limit items (fields: examines at most limit states after
// cursor) and, in the same transaction, leaves one "retention.sweep" compliance receipt per
// space it removed something from (counts only). Reads never serve expired data even before
// a sweep; the sweep only removes it from storage. An unknown phase is fault.Invalid.
func (s *Service) SweepBatch(ctx context.Context, spaceID, phase, cursor string, limit int) (SweepOutcome, error) {
	if limit <= 0 {
		limit = 500
	}
	if phase == PhaseVacuum {
		return s.vacuumBatch(ctx, cursor)
	}
	now := s.now()
	var out SweepOutcome
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var perSpace map[string]int
		var err error
		perSpace, out, err = s.sweepPhase(ctx, tx, sweepArgs{spaceID: spaceID, phase: phase, cursor: cursor, limit: limit, now: now})
		if err != nil {
			return err
		}
		out.Removed, err = recordSweep(ctx, tx, phase, perSpace, now)
		return err
	})
	if err == nil && phase == PhaseExports && out.Done {
		err = s.PruneFeeds(ctx, spaceID, now)
	}
	return out, err
}

// sweepArgs is one SweepBatch call's batch: the space (every space when empty), the phase,
// the cursor after which it continues, the most items it examines and the sweep's clock.
type sweepArgs struct {
	spaceID, phase, cursor string
	limit                  int
	now                    time.Time
}

// sweepPhase removes one batch of a's phase inside tx and returns how many items it removed
// per space, and the outcome's cursor and done (Removed left to recordSweep). A phase whose
// store is not wired (turns, notes) is done at once; an unknown phase is fault.Invalid.
func (s *Service) sweepPhase(ctx context.Context, tx bun.Tx, a sweepArgs) (map[string]int, SweepOutcome, error) {
	switch a.phase {
	case PhaseStates:
		res, err := s.State.DeleteExpired(ctx, tx, a.spaceID, a.limit, a.now)
		return res.States, SweepOutcome{Done: res.Done}, err
	case PhaseFields:
		res, err := s.State.SweepFields(ctx, tx, a.spaceID, a.cursor, a.limit, a.now)
		return res.Fields, SweepOutcome{Done: res.Done, Cursor: res.Last}, err
	case PhaseTurns:
		if s.TurnSweeps == nil {
			return nil, SweepOutcome{Done: true}, nil
		}
		counts, done, err := s.TurnSweeps.SweepTurns(ctx, tx, a.spaceID, a.now, a.limit)
		return counts, SweepOutcome{Done: done}, err
	case PhaseNotes:
		if s.NoteSweeps == nil {
			return nil, SweepOutcome{Done: true}, nil
		}
		counts, done, err := s.NoteSweeps.SweepNotes(ctx, tx, a.spaceID, a.now, a.limit)
		return counts, SweepOutcome{Done: done}, err
	case PhaseExports:
		return sweepExports(ctx, tx, a)
	default:
		return nil, SweepOutcome{}, fault.New(fault.Invalid, "invalid_phase", "unknown sweep phase %q", a.phase)
	}
}

// sweepExports removes at most a.limit export packages expired at a.now; the batch that
// finds fewer ends the phase, removes the expired agent-memory export files and records the sweep's daily usage sample (issue 34 §1: the
// Console's 30-day chart).
func sweepExports(ctx context.Context, tx bun.Tx, a sweepArgs) (map[string]int, SweepOutcome, error) {
	var rows []models.ExportPackage
	q := tx.NewSelect().Model(&rows).Column("id", "space_id").Where("expires_at <= ?", a.now).Order("id ASC").Limit(int64(a.limit))
	if a.spaceID != "" {
		q = q.Where("space_id = ?", a.spaceID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, SweepOutcome{}, fmt.Errorf("compliance: sweep exports: %w", err)
	}
	out := SweepOutcome{Done: len(rows) < a.limit}
	if out.Done {
		if err := quotas.Sample(ctx, tx, a.spaceID, a.now); err != nil {
			return nil, SweepOutcome{}, err
		}
	}
	perSpace := map[string]int{}
	for _, r := range rows {
		if _, err := tx.NewDelete().Model((*models.ExportPackage)(nil)).Where("id = ?", r.ID).Exec(ctx); err != nil {
			return nil, SweepOutcome{}, fmt.Errorf("compliance: sweep exports: %w", err)
		}
		perSpace[r.SpaceID]++
	}
	if out.Done {
		if err := sweepExportFiles(ctx, tx, a, perSpace); err != nil {
			return nil, SweepOutcome{}, err
		}
	}
	return perSpace, out, nil
}

// sweepExportFiles removes, inside tx, the agent-memory export files (issue 33 §4) expired
// at a.now, counting them into perSpace.
func sweepExportFiles(ctx context.Context, tx bun.Tx, a sweepArgs, perSpace map[string]int) error {
	var rows []models.AgentMemoryExport
	q := tx.NewSelect().Model(&rows).Column("id", "space_id").Where("expires_at <= ?", a.now)
	if a.spaceID != "" {
		q = q.Where("space_id = ?", a.spaceID)
	}
	if err := q.Scan(ctx); err != nil {
		return fmt.Errorf("compliance: sweep export files: %w", err)
	}
	for _, r := range rows {
		if _, err := tx.NewDelete().Model((*models.AgentMemoryExport)(nil)).Where("id = ?", r.ID).Exec(ctx); err != nil {
			return fmt.Errorf("compliance: sweep export files: %w", err)
		}
		perSpace[r.SpaceID]++
	}
	return nil
}

// recordSweep leaves, inside tx, one "retention.sweep" compliance receipt (counts only) per
// space of perSpace that phase removed something from, in space order, and returns the
// total removed.
func recordSweep(ctx context.Context, tx bun.Tx, phase string, perSpace map[string]int, now time.Time) (int, error) {
	removed := 0
	for _, sp := range sweptSpaces(perSpace) {
		removed += perSpace[sp]
		if _, err := receipts.Append(ctx, tx, sp, receipts.Entry{
			Kind: receipts.KindCompliance, Action: "retention.sweep", ActorKey: "system",
			Detail: map[string]any{"phase": phase, "removed": perSpace[sp]},
		}, now); err != nil {
			return 0, err
		}
	}
	return removed, nil
}

// sweptSpaces returns the spaces of perSpace with at least one item removed, sorted.
func sweptSpaces(perSpace map[string]int) []string {
	spaceIDs := make([]string, 0, len(perSpace))
	for sp, n := range perSpace {
		if n > 0 {
			spaceIDs = append(spaceIDs, sp)
		}
	}
	sort.Strings(spaceIDs)
	return spaceIDs
}

// EraseNotes erases every note (all versions) and proposal of source in the space through the
// SourceEraser (AM-12) and leaves a "notes.erase" admin receipt with the counts, in one
// transaction. Subject erasure never calls it. Without one it is fault.Unavailable
// "notes_not_wired".
func (s *Service) EraseNotes(ctx context.Context, spaceID, sourceID, actorKey string) (erasure.NoteCounts, error) {
	if s.Notes == nil {
		return erasure.NoteCounts{}, fault.New(fault.Unavailable, "notes_not_wired", "agent notes are not available in this build")
	}
	var counts erasure.NoteCounts
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if counts, err = s.Notes.EraseSource(ctx, tx, spaceID, sourceID); err != nil {
			return err
		}
		_, err = receipts.Append(ctx, tx, spaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "notes.erase", ActorKey: actorKey, ObjectIDs: []string{sourceID},
			Detail: map[string]any{"notes": counts.Notes, "proposals": counts.Proposals},
		}, s.now())
		return err
	})
	return counts, err
}
