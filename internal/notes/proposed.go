package notes

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// This file is what internal/proposals, which owns the proposal lifecycle (AM-8, AM-9),
// needs from agent memory: the one shape of a proposed note, its validation, the
// transactional insert of an approved note, and the hook an agent's write under
// writes: human_only becomes a proposal through. proposals imports notes, never the reverse.

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

// AgentProposal is an agent's write that became a proposal (AM-8: writes: human_only), as
// Create and NewVersion hand it to the Proposer: its id, the space, source and vendor, the
// proposed note (validated and gated), its evidence, the note an edit supersedes ("" for a
// new note) and who wrote it.
type AgentProposal struct {
	ID               string
	SpaceID          string
	SourceID         string
	Vendor           string
	Origin           string
	Note             ProposedNote
	Evidence         *Evidence
	SupersedesNoteID string
	ActorKeyID       string
	ActorKind        string
	AgentVersion     string
	Now              time.Time
}

// Proposer stores an agent's write as a proposal (AM-8) inside the write's transaction tx,
// after its receipt and limits, with the proposal's note_created event (AM-13), so the write
// commits whole or not at all. It appends no receipt: the write's batch appends its
// receipt with the others' after the head it locked first (receipts.AppendGroup).
// internal/proposals implements it; Service.Proposals must be set wherever a space may use
// writes: human_only.
type Proposer interface {
	InsertAgentProposal(ctx context.Context, tx bun.IDB, p AgentProposal) error
}

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

// Features returns the space's features, or fault.Forbidden feature_disabled when agent
// memory is off (AM-3).
func (s *Service) Features(ctx context.Context, spaceID string) (spaces.Features, error) {
	return s.features(ctx, spaceID)
}

// SourceVendor returns the vendor of agent sourceID of the space, from its newest key:
// fault.Invalid invalid_member when sourceID is empty, fault.Invalid unknown_source when no
// agent of the space has that name.
func (s *Service) SourceVendor(ctx context.Context, spaceID, sourceID string) (string, error) {
	return s.sourceVendor(ctx, spaceID, sourceID)
}

// IdempotencyHash is how an Idempotency-Key is stored and looked up: its keyed hash under
// the server secret, per space ("" stays ""). The header's value is never stored.
func (s *Service) IdempotencyHash(spaceID, key string) string { return s.idemHash(spaceID, key) }

// HashRequest is the hash of request v of operation op an Idempotency-Key's record keeps, so
// the same key with another request is told apart.
func HashRequest(op string, v any) string { return hashOf(op, v) }

// RecallProposal looks up the proposal an earlier request under Idempotency-Key hash
// idemHash of key keyID answered (a distillation): (its id, true) for the same request
// (bodyHash), fault.Conflict idempotency_key_reused for another, ("", false) when the key is
// new. idb may be the caller's transaction.
func RecallProposal(ctx context.Context, idb bun.IDB, spaceID, keyID, idemHash, bodyHash string) (string, bool, error) {
	var r models.NoteRequest
	err := idb.NewSelect().Model(&r).
		Where("space_id = ? AND key_id = ? AND idem_key = ?", spaceID, keyID, idemHash).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("notes: idempotency: %w", err)
	}
	var res WriteResult
	if r.BodyHash != bodyHash || json.Unmarshal([]byte(r.Response), &res) != nil || res.ProposalID == "" {
		return "", true, reused()
	}
	return res.ProposalID, true, nil
}

// RememberProposal records, inside tx, that the request bodyHash under Idempotency-Key hash
// idemHash of key keyID was answered 202 with proposal proposalID (RecallProposal finds it).
func RememberProposal(ctx context.Context, tx bun.IDB, spaceID, keyID, idemHash, bodyHash, proposalID string, now time.Time) error {
	body, _ := json.Marshal(WriteResult{ProposalID: proposalID})
	if _, err := tx.NewInsert().Model(&models.NoteRequest{
		SpaceID: spaceID, KeyID: keyID, IdemKey: idemHash, BodyHash: bodyHash,
		Status: 202, Response: string(body), CreatedAt: now,
	}).Exec(ctx); err != nil {
		return fmt.Errorf("notes: idempotency record: %w", err)
	}
	return nil
}

// CheckCap refuses a new note of source sourceID when it already has max active, unexpired
// notes at now: fault.Conflict note_cap_reached. idb may be a transaction.
func CheckCap(ctx context.Context, idb bun.IDB, spaceID, sourceID string, max int, now time.Time) error {
	return checkCap(ctx, idb, spaceID, sourceID, max, now)
}

// RateLimited is nil while times (the counted writes of the hour before now) are fewer than
// RateLimit; else fault.TooMany note_rate_limited with RetryAfter (whole seconds, at least 1)
// until enough of them leave the hour. format takes the limit and the seconds.
func RateLimited(times []time.Time, now time.Time, format string) error {
	return rateLimited(times, now, format)
}

// EvidenceOf is the evidence stored as kind ("conversation", "task" or "") and id; nil for none.
func EvidenceOf(kind, id string) *Evidence { return evidenceOf(kind, id) }

// EvidenceColumns is how evidence e is stored: its kind ("conversation", "task"; "" for nil)
// and id.
func EvidenceColumns(e *Evidence) (kind, id string) { return evidenceCols(e) }

// Invalid is the fault.Invalid invalid_member error naming member, as the notes validation
// answers.
func Invalid(member, format string, args ...any) error { return invalid(member, format, args...) }

// Refused is the gate's refusal with the kinds found (fault.Unprocessable
// personal_data_in_agent_memory), for a refusal recorded earlier and answered later.
func Refused(kinds []string) error { return refused(kinds) }

// EncodeTags and DecodeTags are how tags and kinds lists are stored: a JSON array ("[]" for none).
func EncodeTags(tags []string) string { return encodeTags(tags) }

// DecodeTags reads a stored JSON array of tags or kinds ([] for none or a bad value).
func DecodeTags(s string) []string { return decodeTags(s) }
