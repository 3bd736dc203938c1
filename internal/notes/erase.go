package notes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// EraseSource erases every note (all versions) of agent sourceID in space spaceID (AM-12),
// inside idb (the caller's transaction, which also holds its receipt): their search-index
// rows (SQLite's notes_fts; PostgreSQL's search column goes with the row), tags, the
// remembered idempotent answers that carry their ids or the ids of the source's proposals,
// and the rows themselves, and bumps the space's note-erasure and notes revisions (so every
// replica drops the space's cached blocks and block answers at its next block read); then
// this process's token counts cached under their ids and every block and block answer it
// cached (MS-4). The proposals and their
// decisions are internal/proposals' (its EraseSource calls this one first, then erases
// them: erasure.SourceEraser). It returns how many notes it removed (Proposals 0); a second
// call finds nothing. Outbox events and receipts stay: they hold ids, never text.
func (s *Service) EraseSource(ctx context.Context, idb bun.IDB, spaceID, sourceID string) (erasure.NoteCounts, error) {
	// The space's receipt head first, as every note write takes it before the notes and
	// counts it changes (the caller appends its receipt later, under the same lock).
	if _, err := receipts.LockHead(ctx, idb, spaceID); err != nil {
		return erasure.NoteCounts{}, err
	}
	var noteIDs []string
	if err := idb.NewSelect().Model((*models.Note)(nil)).Column("id").
		Where("space_id = ? AND source_id = ?", spaceID, sourceID).Scan(ctx, &noteIDs); err != nil {
		return erasure.NoteCounts{}, fmt.Errorf("notes: erase: list: %w", err)
	}
	// The keys of every lineage and proposal of the source first (issue 29 §1; destroyKeys).
	if err := s.destroySourceKeys(ctx, idb, spaceID, sourceID); err != nil {
		return erasure.NoteCounts{}, err
	}
	if err := eraseSourceRows(ctx, idb, spaceID, sourceID); err != nil {
		return erasure.NoteCounts{}, err
	}
	n, err := deleteSourceNotes(ctx, idb, spaceID, sourceID)
	out := erasure.NoteCounts{Notes: n}
	if err != nil {
		return out, err
	}
	if out.Notes > 0 {
		// Every replica drops the space's cached blocks at its next block read (MS-4).
		for _, rev := range []string{spaces.RevisionNotesErased, spaces.RevisionNotes, spaces.RevisionNotesRemoved} {
			if err := spaces.BumpRevision(ctx, idb, spaceID, rev); err != nil {
				return out, err
			}
		}
	}
	forgetCounts(noteIDs)
	forgetBlocks()
	s.answers.forget()
	return out, nil
}

// eraseSourceRows deletes, inside idb, what refers to the notes of source sourceID before
// the notes themselves: their search rows (SQLite's notes_fts), tags, and the remembered
// idempotent answers carrying the id of one of its notes or proposals.
func eraseSourceRows(ctx context.Context, idb bun.IDB, spaceID, sourceID string) error {
	ofNotes := `SELECT n.id FROM notes AS n WHERE n.space_id = ? AND n.source_id = ?`
	type stmt struct {
		q    string
		args []any
	}
	own := []any{spaceID, sourceID}
	stmts := []stmt{
		{`DELETE FROM note_tags WHERE note_id IN (` + ofNotes + `)`, own},
		{`DELETE FROM note_requests WHERE space_id = ? AND EXISTS (SELECT 1 FROM notes AS n WHERE n.space_id = ? AND n.source_id = ? AND note_requests.response LIKE '%"' || n.id || '"%')`,
			[]any{spaceID, spaceID, sourceID}},
		{`DELETE FROM note_requests WHERE space_id = ? AND EXISTS (SELECT 1 FROM note_proposals AS p WHERE p.space_id = ? AND p.source_id = ? AND note_requests.response LIKE '%"' || p.id || '"%')`,
			[]any{spaceID, spaceID, sourceID}},
	}
	if db.IsSQLite(idb) {
		stmts = append([]stmt{{`DELETE FROM notes_fts WHERE note_id IN (` + ofNotes + `)`, own}}, stmts...)
	}
	for _, st := range stmts {
		if _, err := idb.ExecContext(ctx, st.q, st.args...); err != nil {
			return fmt.Errorf("notes: erase: %w", err)
		}
	}
	return nil
}

// deleteSourceNotes deletes, inside idb, every note version of source sourceID and returns
// how many; the source's count of active notes loses those it had among them (a delta, so a
// note another transaction stores at the same time stays counted).
func deleteSourceNotes(ctx context.Context, idb bun.IDB, spaceID, sourceID string) (int, error) {
	var statuses []string // of the deleted rows
	if err := idb.NewRaw(`DELETE FROM notes WHERE space_id = ? AND source_id = ? RETURNING status`, spaceID, sourceID).
		Scan(ctx, &statuses); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("notes: erase notes: %w", err)
	}
	var active int64
	for _, st := range statuses {
		if st == StatusActive {
			active++
		}
	}
	if active > 0 {
		if _, err := noterows.AddActive(ctx, idb, spaceID, sourceID, -active); err != nil {
			return len(statuses), err
		}
	}
	return len(statuses), nil
}

// forgetCounts drops the cached token counts of notes ids.
func forgetCounts(ids []string) {
	tokenCache.Lock()
	defer tokenCache.Unlock()
	for _, id := range ids {
		delete(tokenCache.m, id)
	}
}

// ExportNotes returns every note version of space spaceID (retired ones too), by lineage and
// version, read through idb (the export's transaction, internal/proposals.Export, which also
// reads the proposals and appends the notes.export receipt).
func (s *Service) ExportNotes(ctx context.Context, idb bun.IDB, spaceID string) ([]Note, error) {
	var rows []models.Note
	if err := idb.NewSelect().Model(&rows).Where("space_id = ?", spaceID).
		Order("lineage_id", "version").Scan(ctx); err != nil {
		return nil, fmt.Errorf("notes: export notes: %w", err)
	}
	rows, err := s.openNotes(ctx, rows)
	if err != nil {
		return nil, err
	}
	out := make([]Note, 0, len(rows))
	for _, r := range rows {
		out = append(out, toNote(r))
	}
	return out, nil
}

// destroySourceKeys destroys the keys of every note lineage and every proposal of agent
// sourceID in space spaceID (read through idb): what a source erasure shreds.
func (s *Service) destroySourceKeys(ctx context.Context, idb bun.IDB, spaceID, sourceID string) error {
	var lineages, proposals []string
	if err := idb.NewRaw(`SELECT DISTINCT lineage_id FROM notes WHERE space_id = ? AND source_id = ?`, spaceID, sourceID).Scan(ctx, &lineages); err != nil {
		return fmt.Errorf("notes: erase: list lineages: %w", err)
	}
	if err := idb.NewRaw(`SELECT id FROM note_proposals WHERE space_id = ? AND source_id = ?`, spaceID, sourceID).Scan(ctx, &proposals); err != nil {
		return fmt.Errorf("notes: erase: list proposals: %w", err)
	}
	keys := make([]string, 0, len(lineages)+len(proposals))
	for _, l := range lineages {
		keys = append(keys, NoteKeyID(l))
	}
	for _, p := range proposals {
		keys = append(keys, noterows.ProposalKeyID(p))
	}
	keys = append(keys, AgentExportKeyID(spaceID, sourceID)) // its export files (issue 33 §4)
	return s.destroyKeys(ctx, keys)
}

// AgentExportKeyID is the key-store id of the key agent sourceID's export files of space
// spaceID are sealed under (issue 33 §4); a source erasure destroys it with the notes' keys.
func AgentExportKeyID(spaceID, sourceID string) string { return "amx_" + spaceID + "_" + sourceID }

// ExportSourceNotes is ExportNotes of agent sourceID's notes only: every version, by lineage
// and version, opened.
func (s *Service) ExportSourceNotes(ctx context.Context, idb bun.IDB, spaceID, sourceID string) ([]Note, error) {
	var rows []models.Note
	if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND source_id = ?", spaceID, sourceID).
		Order("lineage_id", "version").Scan(ctx); err != nil {
		return nil, fmt.Errorf("notes: export notes: %w", err)
	}
	rows, err := s.openNotes(ctx, rows)
	if err != nil {
		return nil, err
	}
	out := make([]Note, 0, len(rows))
	for _, r := range rows {
		out = append(out, toNote(r))
	}
	return out, nil
}
