package notes

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// EraseSource erases every note (all versions) and proposal of agent sourceID in space
// spaceID (AM-12; compliance.NoteEraser), inside idb (the caller's transaction, which also
// holds its receipt): their search-index rows (SQLite's notes_fts; PostgreSQL's search
// column goes with the row), tags, the staged decisions of the proposals, the remembered
// idempotent answers that carry their ids, and the rows themselves; then the token counts
// cached under their ids (MS-4). It returns how many notes and proposals it removed; a second
// call finds nothing. Outbox events and receipts stay: they hold ids, never text.
func (s *Service) EraseSource(ctx context.Context, idb bun.IDB, spaceID, sourceID string) (compliance.NoteCounts, error) {
	var noteIDs []string
	if err := idb.NewSelect().Model((*models.Note)(nil)).Column("id").
		Where("space_id = ? AND source_id = ?", spaceID, sourceID).Scan(ctx, &noteIDs); err != nil {
		return compliance.NoteCounts{}, fmt.Errorf("notes: erase: list: %w", err)
	}
	ofNotes := `SELECT n.id FROM notes AS n WHERE n.space_id = ? AND n.source_id = ?`
	ofProposals := `SELECT p.id FROM note_proposals AS p WHERE p.space_id = ? AND p.source_id = ?`
	type stmt struct {
		q    string
		args []any
	}
	own := []any{spaceID, sourceID}
	stmts := []stmt{
		{`DELETE FROM note_tags WHERE note_id IN (` + ofNotes + `)`, own},
		{`DELETE FROM proposal_decisions WHERE proposal_id IN (` + ofProposals + `)`, own},
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
			return compliance.NoteCounts{}, fmt.Errorf("notes: erase: %w", err)
		}
	}
	var out compliance.NoteCounts
	res, err := idb.NewDelete().Model((*models.Note)(nil)).Where("space_id = ? AND source_id = ?", spaceID, sourceID).Exec(ctx)
	if err != nil {
		return out, fmt.Errorf("notes: erase notes: %w", err)
	}
	n, _ := res.RowsAffected()
	out.Notes = int(n)
	res, err = idb.NewDelete().Model((*models.NoteProposal)(nil)).Where("space_id = ? AND source_id = ?", spaceID, sourceID).Exec(ctx)
	if err != nil {
		return out, fmt.Errorf("notes: erase proposals: %w", err)
	}
	n, _ = res.RowsAffected()
	out.Proposals = int(n)
	forgetCounts(noteIDs)
	return out, nil
}

// forgetCounts drops the cached token counts of notes ids.
func forgetCounts(ids []string) {
	tokenCache.Lock()
	defer tokenCache.Unlock()
	for _, id := range ids {
		delete(tokenCache.m, id)
	}
}

// Export is the agent-memory export of a space (AM-12, GOV-3): every note version (retired
// ones too) and every proposal, in the shapes the API shows them.
type Export struct {
	SpaceID    string     `json:"space_id"`
	ExportedAt time.Time  `json:"exported_at"`
	Notes      []Note     `json:"notes"`
	Proposals  []Proposal `json:"proposals"`
}

// Export returns everything of agent memory in p's space for role admin (fault.Forbidden
// otherwise), whether the feature is on or not, and leaves a notes.export admin receipt with
// the counts. Notes come by lineage and version, proposals by creation.
func (s *Service) Export(ctx context.Context, p auth.Principal) (Export, error) {
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
		return Export{}, err
	}
	now := s.now()
	out := Export{SpaceID: p.SpaceID, ExportedAt: now, Notes: []Note{}, Proposals: []Proposal{}}
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var notes []models.Note
		if err := tx.NewSelect().Model(&notes).Where("space_id = ?", p.SpaceID).
			Order("lineage_id", "version").Scan(ctx); err != nil {
			return fmt.Errorf("notes: export notes: %w", err)
		}
		var props []models.NoteProposal
		if err := tx.NewSelect().Model(&props).Where("space_id = ?", p.SpaceID).
			Order("created_at", "id").Scan(ctx); err != nil {
			return fmt.Errorf("notes: export proposals: %w", err)
		}
		for _, r := range notes {
			out.Notes = append(out.Notes, toNote(r))
		}
		for _, r := range props {
			out.Proposals = append(out.Proposals, toProposal(r))
		}
		_, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "notes.export", ActorKey: p.KeyID,
			Detail: map[string]any{"notes": len(out.Notes), "proposals": len(out.Proposals)},
		}, now)
		return err
	})
	if err != nil {
		return Export{}, err
	}
	return out, nil
}
