package notes

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// SweepNotes retires, inside idb, up to limit active notes not revised for their space's
// retention.notes (issue 34 §1: off by default, so only spaces that set it) at now, over
// spaceID (every space when empty). Each retirement is receipted ("note.retire" by actor
// "system", reason "retention"), leaves the notes cap's count and bumps the space's block
// revisions as a retirement by hand does. It returns the counts per space and whether fewer
// than limit were due. compliance's retention sweep calls it (phase "notes").
func (s *Service) SweepNotes(ctx context.Context, idb bun.IDB, spaceID string, now time.Time, limit int) (map[string]int, bool, error) {
	due, err := dueNotes(ctx, idb, spaceID, now, limit)
	if err != nil {
		return nil, false, err
	}
	out := map[string]int{}
	for _, n := range due {
		if err := retireForRetention(ctx, idb, n, now); err != nil {
			return nil, false, err
		}
		out[n.SpaceID]++
	}
	return out, len(due) < limit, nil
}

// dueNotes returns up to limit active notes, oldest revision first, of the spaces whose
// features set retention.notes, last revised before now minus it.
func dueNotes(ctx context.Context, idb bun.IDB, spaceID string, now time.Time, limit int) ([]models.Note, error) {
	var docs []models.Document
	q := idb.NewSelect().Model(&docs).Column("space_id", "body").Where("name = ?", spaces.DocFeatures).Order("space_id ASC")
	if spaceID != "" {
		q = q.Where("space_id = ?", spaceID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("notes: retention: features: %w", err)
	}
	var due []models.Note
	for _, d := range docs {
		f, err := spaces.ParseFeatures([]byte(d.Body))
		if err != nil || f.NotesRetention() <= 0 {
			continue // a stored document always parses; off (the default) sweeps nothing
		}
		var rows []models.Note
		if err := idb.NewSelect().Model(&rows).Column("id", "space_id", "source_id").
			Where("space_id = ? AND status = ? AND updated_at < ?", d.SpaceID, StatusActive, now.Add(-f.NotesRetention())).
			Order("updated_at ASC", "id ASC").Limit(int64(limit - len(due))).Scan(ctx); err != nil {
			return nil, fmt.Errorf("notes: retention: %w", err)
		}
		due = append(due, rows...)
		if len(due) >= limit {
			break
		}
	}
	return due, nil
}

// retireForRetention retires note n inside idb with its receipt, as Retire does by hand.
func retireForRetention(ctx context.Context, idb bun.IDB, n models.Note, now time.Time) error {
	if _, err := receipts.Append(ctx, idb, n.SpaceID, receipts.Entry{
		Kind: receipts.KindAdmin, Action: "note.retire", ActorKey: "system", ObjectIDs: []string{n.ID},
		Detail: map[string]any{"source_id": n.SourceID, "reason": "retention"},
	}, now); err != nil {
		return err
	}
	if err := retireRow(ctx, idb, n.SpaceID, n.ID, now); err != nil {
		return err
	}
	if _, err := noterows.AddActive(ctx, idb, n.SpaceID, n.SourceID, -1); err != nil {
		return err
	}
	return spaces.BumpRevision(ctx, idb, n.SpaceID, spaces.RevisionNotes)
}
