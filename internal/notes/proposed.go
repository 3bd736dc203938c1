package notes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// This file is the whole of the narrow API internal/proposals, which owns the proposal
// lifecycle (AM-8, AM-9), has into agent memory for proposals' own sake: the one shape of a
// proposed note and its validation (ProposedNote, Validate), the approval's two calls and
// what the first hands the second (CheckApproval -> CheckedApproval -> InsertApproved, inside
// the approval's transaction), and the note an approval wrote (Stored: a repeated approval's
// answer, no write). An approval crosses the seam exactly twice, whichever path decides it
// (Decide directly, or the distillation workflow's ApplyApproval):
//
//  1. proposals.approvalContent -> notes.Service.CheckApproval (edits, validation, gate);
//  2. proposals.approve -> notes.Service.InsertApproved (the note, its tags, search row and
//     event, in the approval's transaction).
//
// TestApprovalSeam (internal/proposals) pins it. notes holds no hook back into proposals:
// an agent's write under writes: human_only stores its pending proposal through
// noterows.InsertProposal. The row-level primitives both packages need (column codecs,
// sealing, the cap, idempotency records, the note and proposal inserts) are
// internal/noterows'. proposals imports notes, never the reverse.

// ProposedNote is the one shape of a proposed note, whatever proposed it (an agent's write
// under writes: human_only, a distillation's model, the console): kind, title, body, tags,
// visibility ("" reads "source") and valid_until (nil: no expiry). An approval's edits may
// still change it. It is also the "note" member of GET /v1/agent-memory/proposals/{id}.
type ProposedNote struct {
	Kind       string     `json:"kind"`
	Title      string     `json:"title"`
	Body       string     `json:"body"`
	Tags       []string   `json:"tags"`
	Visibility string     `json:"visibility"`
	ValidUntil *time.Time `json:"valid_until"`
}

func (n ProposedNote) content(ev *Evidence) content {
	return content{Kind: n.Kind, Title: n.Title, Body: n.Body, Tags: n.Tags, Visibility: n.Visibility, Evidence: ev, ValidUntil: n.ValidUntil}
}

func proposedOf(c content) ProposedNote {
	return ProposedNote{Kind: c.Kind, Title: c.Title, Body: c.Body, Tags: c.Tags, Visibility: c.Visibility, ValidUntil: c.ValidUntil}
}

// Validate checks n, with evidence ev (nil for none), against AM-1's limits and the block's
// fence rules, as every write path does (REST, MCP, distillation, approval), and returns it
// normalised (nil tags become [], an empty visibility "source", valid_until UTC at
// microseconds). Errors: fault.Invalid invalid_member naming the member. Text is never
// truncated.
func (n ProposedNote) Validate(ev *Evidence, now time.Time) (ProposedNote, error) {
	c := n.content(ev)
	if err := c.validate(now); err != nil {
		return n, err
	}
	return proposedOf(c), nil
}

// edit returns n and its evidence ev with the members of edits applied (nil edits: both
// unchanged); members left out keep their value.
func (n ProposedNote) edit(edits *Patch, ev *Evidence) (ProposedNote, *Evidence) {
	c := n.content(ev).apply(edits)
	return proposedOf(c), c.Evidence
}

// CheckedApproval is what CheckApproval found: the note an approval is to write (the edits
// applied, validated and normalised), its evidence, and the space's features it was gated
// under (InsertApproved's cap).
type CheckedApproval struct {
	Note     ProposedNote
	Evidence *Evidence
	Features spaces.Features
}

// CheckApproval is the first of an approval's two calls into notes (issue 30 §2; the second
// is InsertApproved): it applies edits to proposed note n with evidence ev (nil edits: as
// proposed), validates the result at now (fault.Invalid invalid_member) and runs the gate on
// the whole content under the space's features (CheckContent). A hit the space sends to
// review does not stop the approval: the approver is the person review asks. Errors:
// fault.Invalid, fault.Unprocessable personal_data_in_agent_memory or
// instruction_in_agent_memory, fault.Unavailable detector_unavailable, the space documents'.
func (s *Service) CheckApproval(ctx context.Context, spaceID string, n ProposedNote, ev *Evidence, edits *Patch, now time.Time) (CheckedApproval, error) {
	n, ev = n.edit(edits, ev)
	n, err := n.Validate(ev, now)
	out := CheckedApproval{Note: n, Evidence: ev}
	if err != nil {
		return out, err
	}
	if out.Features, err = s.Docs.Features(ctx, spaceID); err != nil {
		return out, err
	}
	_, err = s.CheckContent(ctx, spaceID, n.Title, n.Body, n.Tags, ev, &out.Features)
	return out, err
}

// InsertApproved is the second and last of an approval's calls into notes: it writes the
// note of proposal pr (its row as internal/proposals loaded it, whose id, space, source,
// vendor, origin, superseded note and agent version the note keeps) with content c
// (CheckApproval's answer, its features giving the cap) as note noteID, approved by key
// byKey at now, inside tx, the approval's transaction, which has appended its receipt and
// moved the proposal to approved. The content is validated again (fault.Invalid), the cap
// checked for a new note (fault.Conflict note_cap_reached), the superseded version retired
// for an edit (fault.Conflict note_not_active when it is no longer active), then the note,
// its tags, its search row and its note_created event (AM-13). The note is written by a
// person (byKey) and does not count against the agent's hourly limit.
func (s *Service) InsertApproved(ctx context.Context, tx bun.IDB, noteID string, pr models.NoteProposal, c CheckedApproval, byKey string, now time.Time) (Note, error) {
	content := c.Note.content(c.Evidence)
	if err := content.validate(now); err != nil {
		return Note{}, err
	}
	p := auth.Principal{SpaceID: pr.SpaceID, KeyID: byKey, Kind: auth.KindPerson}
	w := write{a: actor{p: p, sourceID: pr.SourceID, vendor: pr.Vendor}, f: c.Features, c: content, agentVersion: pr.AgentVersion, now: now}
	if pr.SupersedesNoteID != "" {
		var prev models.Note
		if err := tx.NewSelect().Model(&prev).Where("id = ? AND space_id = ?", pr.SupersedesNoteID, pr.SpaceID).Scan(ctx); err != nil {
			return Note{}, fmt.Errorf("notes: load superseded: %w", err)
		}
		if err := s.openOne(ctx, &prev); err != nil {
			return Note{}, err
		}
		w.prev = &prev
	}
	return s.insertNote(ctx, tx, w, noteID, pr.Origin, pr.ID, nil)
}

// Stored returns note noteID of space spaceID as it is now, whoever may see it (for the
// proposal lifecycle: the note an approval wrote). fault.NotFound note_not_found.
func (s *Service) Stored(ctx context.Context, spaceID, noteID string) (Note, error) {
	var r models.Note
	if err := s.DB.NewSelect().Model(&r).Where("id = ? AND space_id = ?", noteID, spaceID).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Note{}, noteNotFound()
		}
		return Note{}, fmt.Errorf("notes: load note: %w", err)
	}
	if err := s.openOne(ctx, &r); err != nil {
		return Note{}, err
	}
	return toNote(r), nil
}
