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

// This file is the narrow API internal/proposals, which owns the proposal lifecycle (AM-8,
// AM-9), has into agent memory: the one shape of a proposed note and its validation, the
// approval's two calls (CheckApproval, then InsertApproved inside the approval's
// transaction), the note an approval wrote (Stored), and the hook an agent's write under
// writes: human_only becomes a proposal through (Proposer). The row-level primitives both
// packages need (column codecs, sealing, the cap, idempotency records, the note insert) are
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

// Edit returns n and its evidence ev with the members of edits applied (nil edits: both
// unchanged); members left out keep their value.
func (n ProposedNote) Edit(edits *Patch, ev *Evidence) (ProposedNote, *Evidence) {
	c := n.content(ev).apply(edits)
	return proposedOf(c), c.Evidence
}

// GateText is the text the personal-data gate (Check) reads of n with evidence ev (GateText).
func (n ProposedNote) GateText(ev *Evidence) string { return GateText(n.Title, n.Body, n.Tags, ev) }

// Approved is the note an approval writes (InsertApproved): the proposal's id, space,
// source, vendor and origin ("agent" or "distilled"), the note it supersedes ("" for a new
// note), the agent version it was proposed under, the deciding key, the content after the
// reviewer's edits (validated and gated by the caller) with its evidence, the space's
// features (the cap) and the approval's time.
type Approved struct {
	ProposalID       string
	SpaceID          string
	SourceID         string
	Vendor           string
	Origin           string
	SupersedesNoteID string
	AgentVersion     string
	ByKeyID          string
	Note             ProposedNote
	Evidence         *Evidence
	Features         spaces.Features
	Now              time.Time
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
	n, ev = n.Edit(edits, ev)
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

// InsertApproved writes approved proposal a's note with id noteID inside tx, the approval's
// transaction (internal/proposals), which has appended its receipt: the content is
// validated again (fault.Invalid), the cap checked for a new note (fault.Conflict
// note_cap_reached), the superseded version retired for an edit (fault.Conflict
// note_not_active when it is no longer active), then the note, its tags, its search row and
// its note_created event (AM-13). The note is written by a person (a.ByKeyID) and does not
// count against the agent's hourly limit.
func (s *Service) InsertApproved(ctx context.Context, tx bun.IDB, noteID string, a Approved) (Note, error) {
	c := a.Note.content(a.Evidence)
	if err := c.validate(a.Now); err != nil {
		return Note{}, err
	}
	p := auth.Principal{SpaceID: a.SpaceID, KeyID: a.ByKeyID, Kind: auth.KindPerson}
	w := write{a: actor{p: p, sourceID: a.SourceID, vendor: a.Vendor}, f: a.Features, c: c, agentVersion: a.AgentVersion, now: a.Now}
	if a.SupersedesNoteID != "" {
		var prev models.Note
		if err := tx.NewSelect().Model(&prev).Where("id = ? AND space_id = ?", a.SupersedesNoteID, a.SpaceID).Scan(ctx); err != nil {
			return Note{}, fmt.Errorf("notes: load superseded: %w", err)
		}
		if err := s.openOne(ctx, &prev); err != nil {
			return Note{}, err
		}
		w.prev = &prev
	}
	return s.insertNote(ctx, tx, w, noteID, a.Origin, a.ProposalID, nil)
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
