package notes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Lineage is what DeleteLineage removed: the ids of every version of one note (oldest first)
// and the agent that wrote it.
type Lineage struct {
	NoteIDs  []string
	SourceID string
}

// DeleteLineage hard-deletes the note of id (any of its versions) with all its versions
// (issue 29 §3), inside idb (the caller's transaction, which also holds its receipt and
// events): their search-index rows (SQLite's notes_fts; PostgreSQL's search column goes with
// the row), tags, the remembered idempotent answers that carry their ids, and the rows, and
// lowers the source's count of active notes; it bumps the space's note-erasure, notes and
// notes-removed revisions, so every replica drops the space's cached blocks and block answers
// at its next block read (as EraseSource does), then this process's caches at once. The
// space's receipt head is locked first (the order of note writes). No note of that id in the
// space is fault.NotFound note_not_found. Proposals are internal/proposals' (DeleteNote).
func (s *Service) DeleteLineage(ctx context.Context, idb bun.IDB, spaceID, id string) (Lineage, error) {
	if _, err := receipts.LockHead(ctx, idb, spaceID); err != nil {
		return Lineage{}, err
	}
	var lineage string
	err := idb.NewSelect().Model((*models.Note)(nil)).Column("lineage_id").Where("space_id = ? AND id = ?", spaceID, id).Scan(ctx, &lineage)
	if errors.Is(err, sql.ErrNoRows) {
		return Lineage{}, fault.New(fault.NotFound, CodeNoteNotFound, "no note with that id in this space")
	}
	if err != nil {
		return Lineage{}, fmt.Errorf("notes: delete: find: %w", err)
	}
	var rows []models.Note
	if err := idb.NewSelect().Model(&rows).Column("id", "source_id", "status").
		Where("space_id = ? AND lineage_id = ?", spaceID, lineage).Order("version ASC").Scan(ctx); err != nil {
		return Lineage{}, fmt.Errorf("notes: delete: list: %w", err)
	}
	out := Lineage{SourceID: rows[0].SourceID}
	var active int64
	for _, r := range rows {
		out.NoteIDs = append(out.NoteIDs, r.ID)
		if r.Status == StatusActive {
			active++
		}
	}
	// The lineage's key first (issue 29 §1): every copy of its versions, backups included,
	// stops opening; a rollback after it leaves rows that no longer open (destroyKeys).
	if err := s.destroyKeys(ctx, []string{NoteKeyID(lineage)}); err != nil {
		return Lineage{}, err
	}
	if err := deleteLineageRows(ctx, idb, spaceID, lineage, out.NoteIDs); err != nil {
		return Lineage{}, err
	}
	if active > 0 {
		if _, err := noterows.AddActive(ctx, idb, spaceID, out.SourceID, -active); err != nil {
			return Lineage{}, err
		}
	}
	for _, rev := range []string{spaces.RevisionNotesErased, spaces.RevisionNotes, spaces.RevisionNotesRemoved} {
		if err := spaces.BumpRevision(ctx, idb, spaceID, rev); err != nil {
			return Lineage{}, err
		}
	}
	forgetCounts(out.NoteIDs)
	forgetBlocks()
	s.answers.forget()
	return out, nil
}

// deleteLineageRows deletes the rows of the versions ids of lineage and what refers to them.
func deleteLineageRows(ctx context.Context, idb bun.IDB, spaceID, lineage string, ids []string) error {
	stmts := []struct {
		q    string
		args []any
	}{
		{`DELETE FROM note_tags WHERE note_id IN (?)`, []any{bun.In(ids)}},
		{`DELETE FROM note_requests WHERE space_id = ? AND EXISTS (SELECT 1 FROM notes AS n WHERE n.space_id = ? AND n.lineage_id = ? AND note_requests.response LIKE '%"' || n.id || '"%')`,
			[]any{spaceID, spaceID, lineage}},
		{`DELETE FROM notes WHERE space_id = ? AND lineage_id = ?`, []any{spaceID, lineage}},
	}
	if db.IsSQLite(idb) {
		if _, err := idb.ExecContext(ctx, `DELETE FROM notes_fts WHERE note_id IN (?)`, bun.In(ids)); err != nil {
			return fmt.Errorf("notes: delete search rows: %w", err)
		}
	}
	for _, st := range stmts {
		if _, err := idb.ExecContext(ctx, st.q, st.args...); err != nil {
			return fmt.Errorf("notes: delete: %w", err)
		}
	}
	return nil
}
