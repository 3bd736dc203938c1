package proposals

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// ActionNoteDelete is the action of the admin receipt a note's hard delete leaves.
const ActionNoteDelete = "note.delete"

// NoteDeletion is the answer of DeleteNote: the ids of every version deleted (oldest first),
// of the proposals deleted with them, and of the receipt recording it.
type NoteDeletion struct {
	NoteIDs     []string `json:"note_ids"`
	ProposalIDs []string `json:"proposal_ids"`
	ReceiptID   string   `json:"receipt_id"`
}

// DeleteNote hard-deletes the note id (any of its versions) with all its versions (issue 29
// §3; role admin), in one transaction: the notes and what indexes and caches them
// (notes.DeleteLineage: search rows, tags, remembered answers, every replica's blocks at its
// next read), the proposals that hold its text — the one whose approval created a version
// (note_id) and any proposing a new version of it (supersedes_note_id), with their decisions
// and the remembered answers naming them —, an admin receipt ActionNoteDelete naming the
// note and proposal ids, and one outbox event events.TypeNoteDeleted per version (ids only).
// Errors: fault.Forbidden role_required without role admin; fault.NotFound note_not_found.
func (s *Service) DeleteNote(ctx context.Context, p auth.Principal, id string) (NoteDeletion, error) {
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
		return NoteDeletion{}, err
	}
	now := s.now()
	var out NoteDeletion
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		l, err := s.Notes.DeleteLineage(ctx, tx, p.SpaceID, id)
		if err != nil {
			return err
		}
		pids, err := s.deleteNoteProposals(ctx, tx, p.SpaceID, l.NoteIDs)
		if err != nil {
			return err
		}
		r, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{Kind: receipts.KindAdmin, Action: ActionNoteDelete, ActorKey: p.KeyID,
			ObjectIDs: append(append([]string{}, l.NoteIDs...), pids...),
			Detail:    map[string]any{"source_id": l.SourceID, "versions": len(l.NoteIDs), "proposals": len(pids)}}, now)
		if err != nil {
			return err
		}
		evs := make([]events.Event, 0, len(l.NoteIDs))
		for _, nid := range l.NoteIDs {
			evs = append(evs, events.Event{Type: events.TypeNoteDeleted, SpaceID: p.SpaceID, NoteID: nid, SourceID: l.SourceID})
		}
		if _, err := events.EnqueueAll(ctx, tx, evs, now); err != nil {
			return err
		}
		out = NoteDeletion{NoteIDs: l.NoteIDs, ProposalIDs: pids, ReceiptID: r.ID}
		return nil
	})
	if err != nil {
		return NoteDeletion{}, err
	}
	return out, nil
}

// deleteNoteProposals deletes, inside idb, the proposals of spaceID that created one of the
// notes ids or propose a new version of one, their decisions and the remembered idempotent
// answers naming them, and returns their ids (in id order).
func (s *Service) deleteNoteProposals(ctx context.Context, idb bun.IDB, spaceID string, ids []string) ([]string, error) {
	pids := []string{}
	if err := idb.NewRaw(`SELECT id FROM note_proposals WHERE space_id = ? AND (note_id IN (?) OR supersedes_note_id IN (?)) ORDER BY id`,
		spaceID, bun.In(ids), bun.In(ids)).Scan(ctx, &pids); err != nil {
		return nil, fmt.Errorf("proposals: delete: list: %w", err)
	}
	if len(pids) == 0 {
		return pids, nil
	}
	return s.deleteProposals(ctx, idb, spaceID, pids)
}

// deleteProposals deletes, inside idb, the proposals pids of spaceID, their decisions and the
// remembered idempotent answers naming them, and returns those of pids that existed (in id
// order).
func (s *Service) deleteProposals(ctx context.Context, idb bun.IDB, spaceID string, pids []string) ([]string, error) {
	var present []string
	if err := idb.NewRaw(`SELECT id FROM note_proposals WHERE space_id = ? AND id IN (?) ORDER BY id`, spaceID, bun.In(pids)).Scan(ctx, &present); err != nil {
		return nil, fmt.Errorf("proposals: delete: list: %w", err)
	}
	if len(present) == 0 {
		return []string{}, nil
	}
	pids = present
	keys := make([]string, 0, len(pids))
	for _, id := range pids {
		keys = append(keys, noterows.ProposalKeyID(id))
	}
	if err := noterows.DestroyKeys(ctx, s.Keys, keys); err != nil { // before the rows (issue 29 §1)
		return nil, err
	}
	stmts := []struct {
		q    string
		args []any
	}{
		{`DELETE FROM note_requests WHERE space_id = ? AND EXISTS (SELECT 1 FROM note_proposals AS p WHERE p.id IN (?) AND note_requests.response LIKE '%"' || p.id || '"%')`,
			[]any{spaceID, bun.In(pids)}},
		{`DELETE FROM proposal_decisions WHERE proposal_id IN (?)`, []any{bun.In(pids)}},
		{`DELETE FROM note_proposals WHERE space_id = ? AND id IN (?)`, []any{spaceID, bun.In(pids)}},
	}
	for _, st := range stmts {
		if _, err := idb.ExecContext(ctx, st.q, st.args...); err != nil {
			return nil, fmt.Errorf("proposals: delete: %w", err)
		}
	}
	return pids, nil
}
