package notes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Error codes of writes (besides the gate's and fault.Invalid "invalid_member").
const (
	CodeFeatureDisabled  = noterows.CodeFeatureDisabled
	CodeScopeRequired    = "scope_required"
	CodeRateLimited      = noterows.CodeRateLimited
	CodeCapReached       = noterows.CodeCapReached
	CodeIdempotencyReuse = noterows.CodeIdempotencyReuse
	CodeNotActive        = "note_not_active"
	CodeNotOwner         = "not_note_owner"
	CodeNoteNotFound     = "note_not_found"
	CodeUnknownSource    = noterows.CodeUnknownSource
	CodeSourceMismatch   = "source_mismatch"
)

// MaxIdempotencyKey is the longest Idempotency-Key accepted, in bytes (printable ASCII).
const MaxIdempotencyKey = 200

// CheckIdempotencyKey checks an Idempotency-Key header value: empty (none), or 1 to
// MaxIdempotencyKey printable ASCII characters without spaces (0x21-0x7e). Otherwise it is
// fault.Invalid invalid_header naming Idempotency-Key.
func CheckIdempotencyKey(k string) error {
	if len(k) > MaxIdempotencyKey {
		return fault.New(fault.Invalid, "invalid_header", "Idempotency-Key is at most %d characters", MaxIdempotencyKey).With("member", "Idempotency-Key")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return fault.New(fault.Invalid, "invalid_header", "Idempotency-Key is printable ASCII without spaces").With("member", "Idempotency-Key")
		}
	}
	return nil
}

// idemHash is how an Idempotency-Key is stored and looked up: its keyed hash under the
// server secret, per space (the header may carry anything, an e-mail address included, so
// it is never stored in clear). "" stays "" (no key).
func (s *Service) idemHash(spaceID, key string) string {
	return noterows.IdemHash(s.Hasher, spaceID, key)
}

// WriteResult is the answer of a note write: Note when a note was stored (201), ProposalID
// when the write became a proposal (202, AM-8). Replayed is true when an Idempotency-Key
// matched an earlier write: the first answer is returned and nothing is written.
// DuplicateOf is set when a Create was identical (ContentHash) to an active note of the same
// source (issue 17 §2): Note is that existing note (as it is now), DuplicateOf its id, and
// nothing was written (no note, proposal, receipt, outbox event or idempotency record).
type WriteResult struct {
	Note       *Note  `json:"note,omitempty"`
	ProposalID string `json:"proposal_id,omitempty"`
	// Review lists the gate's kinds (e.g. ["name"]) that sent the write to review (GATE-2);
	// empty when it became a proposal because of writes: human_only alone, or was stored.
	Review      []string `json:"review,omitempty"`
	Replayed    bool     `json:"-"`
	DuplicateOf string   `json:"-"`
}

// Create writes a new note for p (AM-1, AM-6, AM-7, AM-8). idemKey is the Idempotency-Key
// header ("" for none); agentVersion is the Agent-Version header (provenance, MS-5).
//
// Errors: fault.Forbidden (feature_disabled, scope_required, role_required, source_mismatch),
// fault.Invalid naming the member (limits, unknown_source), fault.Unprocessable
// personal_data_in_agent_memory or instruction_in_agent_memory (CheckContent),
// fault.Unavailable detector_unavailable, fault.TooMany
// note_rate_limited (RetryAfter in whole seconds), fault.Conflict note_cap_reached or
// idempotency_key_reused. A refused write stores nothing and does not count.
//
// Duplicates (issue 17 §2): a note whose ContentHash equals that of an active, unexpired note
// of the same source (space, source_id, vendor) answers WriteResult{Note: existing,
// DuplicateOf: its id} and stores nothing: no note, no proposal (under writes: human_only
// too), no receipt, no outbox event, no idempotency record (only stored answers are
// remembered). It is checked after validation and the gate, inside the write's transaction
// before the hourly limit and the cap, so a duplicate answers even at the limit or the cap,
// and two identical writes at once store one note. An Idempotency-Key replay answers as
// before (the first answer), ahead of the duplicate check.
func (s *Service) Create(ctx context.Context, p auth.Principal, agentVersion, idemKey string, in Input) (WriteResult, error) {
	f, err := s.features(ctx, p.SpaceID)
	if err != nil {
		return WriteResult{}, err
	}
	if err := CheckIdempotencyKey(idemKey); err != nil {
		return WriteResult{}, err
	}
	a, err := s.writer(ctx, p, in.SourceID)
	if err != nil {
		return WriteResult{}, err
	}
	now := s.now()
	c := in.content()
	if err := c.validate(now); err != nil {
		return WriteResult{}, err
	}
	w := write{a: a, f: f, c: c, agentVersion: agentVersion, idemKey: s.idemHash(p.SpaceID, idemKey), bodyHash: hashOf("create", in), now: now}
	if res, done, err := s.replay(ctx, w); done || err != nil {
		return res, err
	}
	if w.review, err = s.CheckContent(ctx, p.SpaceID, c.Title, c.Body, c.Tags, c.Evidence, &f); err != nil {
		return WriteResult{}, err
	}
	return s.commit(ctx, w)
}

// NewVersion edits note noteID (AM-1): the previous version is retired and a new one is
// stored with version+1 and supersedes_note_id set; members left out of patch keep their
// value. An agent edits only its own notes (fault.Forbidden not_note_owner; a note it cannot
// see is fault.NotFound note_not_found); a retired note is fault.Conflict note_not_active.
// Otherwise as Create.
func (s *Service) NewVersion(ctx context.Context, p auth.Principal, agentVersion, idemKey, noteID string, patch Patch) (WriteResult, error) {
	f, err := s.features(ctx, p.SpaceID)
	if err != nil {
		return WriteResult{}, err
	}
	if err := requireWrite(p); err != nil {
		return WriteResult{}, err
	}
	if err := CheckIdempotencyKey(idemKey); err != nil {
		return WriteResult{}, err
	}
	prev, err := s.ownNote(ctx, p, noteID)
	if err != nil {
		return WriteResult{}, err
	}
	a := actor{p: p, sourceID: prev.SourceID, vendor: prev.Vendor}
	now := s.now()
	w := write{a: a, f: f, prev: &prev, agentVersion: agentVersion, idemKey: s.idemHash(p.SpaceID, idemKey),
		bodyHash: hashOf("version:"+noteID, patch), now: now}
	if res, done, err := s.replay(ctx, w); done || err != nil {
		return res, err
	}
	if prev.Status != StatusActive {
		return WriteResult{}, notActive()
	}
	w.c = noteContent(prev).apply(&patch)
	if err := w.c.validate(now); err != nil {
		return WriteResult{}, err
	}
	c := w.c
	if w.review, err = s.CheckContent(ctx, p.SpaceID, c.Title, c.Body, c.Tags, c.Evidence, &f); err != nil {
		return WriteResult{}, err
	}
	return s.commit(ctx, w)
}

// Retire retires note noteID (AM-1): it stays readable by id but leaves block and search. The
// owner rules are NewVersion's; an already retired note is fault.Conflict note_not_active.
func (s *Service) Retire(ctx context.Context, p auth.Principal, noteID string) (Note, error) {
	if _, err := s.features(ctx, p.SpaceID); err != nil {
		return Note{}, err
	}
	if err := requireWrite(p); err != nil {
		return Note{}, err
	}
	prev, err := s.ownNote(ctx, p, noteID)
	if err != nil {
		return Note{}, err
	}
	now := s.now()
	var out models.Note
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "note.retire", ActorKey: p.KeyID, ObjectIDs: []string{noteID},
			Detail: map[string]any{"source_id": prev.SourceID},
		}, now); err != nil {
			return err
		}
		if err := retireRow(ctx, tx, p.SpaceID, noteID, now); err != nil {
			return err
		}
		if _, err := noterows.AddActive(ctx, tx, p.SpaceID, prev.SourceID, -1); err != nil {
			return err
		}
		if err := spaces.BumpRevision(ctx, tx, p.SpaceID, spaces.RevisionNotes); err != nil {
			return err
		}
		if err := tx.NewSelect().Model(&out).Where("id = ?", noteID).Scan(ctx); err != nil {
			return err
		}
		return s.openOne(ctx, &out)
	})
	if err != nil {
		return Note{}, err
	}
	return toNote(out), nil
}

// features returns the space's features, or fault.Forbidden feature_disabled when agent
// memory is off (AM-3).
func (s *Service) features(ctx context.Context, spaceID string) (spaces.Features, error) {
	return noterows.Features(ctx, s.Docs, spaceID)
}

// requireWrite: an agent needs scope agent_memory:write; a person role integration (AM-10).
func requireWrite(p auth.Principal) error {
	if p.IsAgent() {
		if !p.HasScope(auth.ScopeAgentMemoryWrite) {
			return fault.New(fault.Forbidden, CodeScopeRequired, "this key lacks scope agent_memory:write")
		}
		return nil
	}
	return p.RequireRole(auth.RoleIntegration)
}

// writer resolves who writes for which source: an agent writes as itself (naming another
// source is fault.Forbidden source_mismatch); a person with integration names source_id, an
// agent of the space whose vendor comes from that agent's key (fault.Invalid unknown_source).
func (s *Service) writer(ctx context.Context, p auth.Principal, sourceID string) (actor, error) {
	if err := requireWrite(p); err != nil {
		return actor{}, err
	}
	if p.IsAgent() {
		if sourceID != "" && sourceID != p.Agent {
			return actor{}, fault.New(fault.Forbidden, CodeSourceMismatch, "an agent writes only its own notes; leave source_id out").With("member", "source_id")
		}
		return actor{p: p, sourceID: p.Agent, vendor: p.Vendor}, nil
	}
	vendor, err := s.sourceVendor(ctx, p.SpaceID, sourceID)
	if err != nil {
		return actor{}, err
	}
	return actor{p: p, sourceID: sourceID, vendor: vendor}, nil
}

// sourceVendor returns the vendor of agent sourceID, from its newest key in the space (a
// statement prepared once per pool: db.QueryOne).
func (s *Service) sourceVendor(ctx context.Context, spaceID, sourceID string) (string, error) {
	return noterows.SourceVendor(ctx, s.DB, spaceID, sourceID)
}

// ownNote loads a note p may change: any note of the space for a person, only its own for an
// agent.
func (s *Service) ownNote(ctx context.Context, p auth.Principal, noteID string) (models.Note, error) {
	var r models.Note
	err := s.DB.NewSelect().Model(&r).Where("id = ? AND space_id = ?", noteID, p.SpaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return r, noteNotFound()
	}
	if err != nil {
		return r, fmt.Errorf("notes: load: %w", err)
	}
	if err := s.openOne(ctx, &r); err != nil {
		return r, err
	}
	if p.IsAgent() {
		v := viewer{spaceID: p.SpaceID, source: p.Agent, vendor: p.Vendor}
		if !v.sees(r) {
			return r, noteNotFound()
		}
		if r.SourceID != p.Agent || r.Vendor != p.Vendor {
			return r, fault.New(fault.Forbidden, CodeNotOwner, "an agent edits and retires only its own notes")
		}
	}
	return r, nil
}

func noteNotFound() error {
	return fault.New(fault.NotFound, CodeNoteNotFound, "no note with that id visible to this key")
}

func notActive() error {
	return fault.New(fault.Conflict, CodeNotActive, "the note is retired or superseded; edit its newest version")
}

// write is one validated, not yet gated or committed, note write.
type write struct {
	a            actor
	f            spaces.Features
	c            content
	prev         *models.Note // the version an edit supersedes
	agentVersion string
	idemKey      string // keyed hash of the Idempotency-Key ("" for none)
	bodyHash     string
	now          time.Time
	// review lists the gate's hits the space sends to review (CheckContent, GATE-2, GATE-3): an
	// agent's write with any becomes a proposal; a person's is stored (the writer is the
	// person review would ask), the kinds named in its receipt.
	review []string
}

// proposal reports whether the write becomes a proposal (AM-8): an agent's write under
// writes: human_only, or with a gate hit the space sends to review (GATE-2).
func (w write) proposal() bool { return w.a.p.IsAgent() && (w.f.HumanOnly() || len(w.review) > 0) }

func hashOf(op string, v any) string { return noterows.HashRequest(op, v) }

var errReplayed = errors.New("notes: replayed")

// replay answers an Idempotency-Key seen before: (first answer, true) for the same request,
// fault.Conflict idempotency_key_reused for a different one.
func (s *Service) replay(ctx context.Context, w write) (WriteResult, bool, error) {
	if w.idemKey == "" {
		return WriteResult{}, false, nil
	}
	return s.lookupRequest(ctx, s.DB, w)
}

// lookupRequest finds w's Idempotency-Key record through idb: (first answer, true) for the
// same request, fault.Conflict idempotency_key_reused for a different one, decodeAnswer's
// errors for an answer that does not open.
func (s *Service) lookupRequest(ctx context.Context, idb bun.IDB, w write) (WriteResult, bool, error) {
	r, found, err := noterows.LookupRequest(ctx, idb, w.a.p.SpaceID, w.a.p.KeyID, w.idemKey)
	if !found || err != nil {
		return WriteResult{}, false, err
	}
	if r.BodyHash != w.bodyHash {
		return WriteResult{}, true, reused()
	}
	res, err := s.decodeAnswer(ctx, r.Response)
	if err != nil {
		return WriteResult{}, true, err
	}
	res.Replayed = true
	return res, true, nil
}

// writeIn stores w inside tx (a batch's transaction, within w's savepoint; commitBatch),
// which holds the space's receipt head (so the limits below are exact across replicas): the
// idempotency re-check (errReplayed with the first answer), for a new note (not an edit) the
// duplicate check (errDuplicate with the existing note), the hourly limit, then the rows (the
// cap checked with the note) and the idempotency record; a stored note's tags, search row
// and outbox event go to later (insertNote), which the caller keeps only when w is stored. It
// returns the write's receipt entry, which the caller appends with the batch's other stored
// writes. On errReplayed, errDuplicate or any other error the caller rolls back w's savepoint.
func (s *Service) writeIn(ctx context.Context, tx bun.Tx, w write, later *noteRows) (WriteResult, receipts.Entry, error) {
	id, rcpt := w.plan()
	if res, err := s.guard(ctx, tx, w); err != nil {
		return res, rcpt, err
	}
	var res WriteResult
	if w.proposal() {
		if err := s.propose(ctx, tx, w, id); err != nil {
			return WriteResult{}, rcpt, err
		}
		res.ProposalID = id
		res.Review = w.review
	} else {
		n, err := s.insertNote(ctx, tx, w, id, w.a.origin(), "", later)
		if err != nil {
			return WriteResult{}, rcpt, err
		}
		res.Note = &n
	}
	if err := s.remember(ctx, tx, w, id, res); err != nil {
		return WriteResult{}, rcpt, err
	}
	return res, rcpt, nil
}

// plan is writeIn's first phase: the id of what w stores (a note, or a proposal under
// writes: human_only or a gate hit sent to review) and its receipt entry (the action, the
// objects it names, kinds and origin; the gate's review kinds, never values).
func (w write) plan() (string, receipts.Entry) {
	id := auth.NewID("note")
	action := "note.create"
	objs := []string{id}
	if w.proposal() {
		id = auth.NewID("prop")
		action = "proposal.create"
		objs = []string{id}
	} else if w.prev != nil {
		action = "note.version"
		objs = []string{id, w.prev.ID}
	}
	if w.proposal() && w.prev != nil {
		objs = append(objs, w.prev.ID)
	}
	rcpt := receipts.Entry{
		Kind: receipts.KindAdmin, Action: action, ActorKey: w.a.p.KeyID, ObjectIDs: objs,
		Detail: map[string]any{"kind": w.c.Kind, "origin": w.a.origin(), "source_id": w.a.sourceID},
	}
	if len(w.review) > 0 {
		rcpt.Detail["gate_review"] = w.review // kinds only, never values
	}
	return id, rcpt
}

// guard is writeIn's checks inside the transaction, in order: the idempotency re-check
// (errReplayed with the first answer), for a new note the duplicate check (errDuplicate with
// the existing note), and an agent's hourly limit (fault.TooMany).
func (s *Service) guard(ctx context.Context, tx bun.Tx, w write) (WriteResult, error) {
	if w.idemKey != "" {
		r, done, err := s.lookupRequest(ctx, tx, w)
		if err != nil {
			return WriteResult{}, err
		}
		if done {
			return r, errReplayed
		}
	}
	if w.prev == nil {
		n, ok, err := s.findDuplicate(ctx, tx, w)
		if err != nil {
			return WriteResult{}, err
		}
		if ok {
			return WriteResult{Note: &n, DuplicateOf: n.ID}, errDuplicate
		}
	}
	if w.a.p.IsAgent() {
		if err := checkRate(ctx, tx, w.a.p.SpaceID, w.a.sourceID, w.now); err != nil {
			return WriteResult{}, err
		}
	}
	return WriteResult{}, nil
}

// remember is writeIn's last phase: with an Idempotency-Key, the answer res (201 for a note,
// 202 for a proposal) is recorded in tx for a retry to find (lookupRequest); a note's answer
// is sealed under its lineage's key (encodeAnswer; issue 29 §1), id being what w stored.
func (s *Service) remember(ctx context.Context, tx bun.Tx, w write, id string, res WriteResult) error {
	if w.idemKey == "" {
		return nil
	}
	lineage := id
	if w.prev != nil {
		lineage = w.prev.LineageID
	}
	body, err := s.encodeAnswer(ctx, res, lineage)
	if err != nil {
		return err
	}
	status := 201
	if res.ProposalID != "" {
		status = 202
	}
	return noterows.Remember(ctx, tx, models.NoteRequest{
		SpaceID: w.a.p.SpaceID, KeyID: w.a.p.KeyID, IdemKey: w.idemKey, BodyHash: w.bodyHash,
		Status: status, Response: body, CreatedAt: w.now,
	})
}

func reused() error { return noterows.Reused() }

// propose stores agent write w as pending proposal id (AM-8: writes: human_only, or a gate
// hit the space sends to review) inside the write's transaction tx, with its note_created
// event (noterows.InsertProposal: sealed under the proposal's own key). Its receipt is the
// write's (plan), appended with the batch's others; from here on the proposal is
// internal/proposals' to decide.
func (s *Service) propose(ctx context.Context, tx bun.IDB, w write, id string) error {
	ek, eid := noterows.EvidenceColumns(w.c.Evidence)
	r := models.NoteProposal{
		ID: id, SpaceID: w.a.p.SpaceID, SourceID: w.a.sourceID, Vendor: w.a.vendor, Origin: w.a.origin(),
		Status: noterows.ProposalPending, Kind: w.c.Kind, Title: w.c.Title, Body: w.c.Body, Tags: noterows.EncodeTags(w.c.Tags),
		Visibility: w.c.Visibility, EvidenceKind: ek, EvidenceID: eid, ValidUntil: w.c.ValidUntil,
		ActorKeyID: w.a.p.KeyID, ActorKind: w.a.kind(), AgentVersion: w.agentVersion,
		CreatedAt: w.now, UpdatedAt: w.now, Kinds: "[]",
	}
	if w.prev != nil {
		r.SupersedesNoteID = w.prev.ID
	}
	return noterows.InsertProposal(ctx, tx, s.Keys, &r)
}

// insertNote retires the superseded version of an edit (compare-and-swap on its status) or
// checks the cap for a new note (countActive; on PostgreSQL countAndInsert, with the note's
// insert in the same statement), keeps the sources' counts of active notes and inserts the
// note. Its tags, its search row and its note_created event go to later, which a
// batch (commitBatch) stores at its end for all its stored writes and which also bumps the
// space's notes revision once there; with later nil (an approval) insertNote stores them
// itself and bumps the revision. Call inside a transaction that already appended the
// receipt; on an error the caller rolls the transaction (or the write's savepoint) back.
func (s *Service) insertNote(ctx context.Context, tx bun.IDB, w write, id, origin, proposalID string, later *noteRows) (Note, error) {
	r := w.row(id, origin, proposalID)
	if err := s.sealNote(ctx, &r); err != nil { // under the lineage's key (issue 29 §1)
		return Note{}, err
	}
	if err := placeNote(ctx, tx, w, &r); err != nil {
		return Note{}, err
	}
	own := later
	if own == nil {
		own = &noteRows{}
	}
	own.add(&r, w.c.Tags, events.Event{
		Type: events.TypeNoteCreated, SpaceID: r.SpaceID, NoteID: id, ProposalID: proposalID, Kind: r.Kind,
		Origin: origin, SourceID: r.SourceID,
	}, w.now)
	if later == nil {
		if err := own.store(ctx, tx); err != nil {
			return Note{}, err
		}
		// Every replica's cached block answers of the space stop being given (issue 16).
		if err := spaces.BumpRevision(ctx, tx, r.SpaceID, spaces.RevisionNotes); err != nil {
			return Note{}, err
		}
	}
	return toNote(r), nil
}

// row is the note row write w stores as note id of origin (proposalID: the proposal an
// approval turns into it, "" for none): version 1 of a new lineage, or the next version of
// the lineage of the note an edit supersedes. Its text is still in clear (sealNote).
func (w write) row(id, origin, proposalID string) models.Note {
	ek, eid := noterows.EvidenceColumns(w.c.Evidence)
	r := models.Note{
		ID: id, SpaceID: w.a.p.SpaceID, LineageID: id, Version: 1, SourceID: w.a.sourceID, Vendor: w.a.vendor,
		Kind: w.c.Kind, Title: w.c.Title, Body: w.c.Body, Tags: noterows.EncodeTags(w.c.Tags), TagsText: joinTags(w.c.Tags),
		Visibility: w.c.Visibility, EvidenceKind: ek, EvidenceID: eid, Origin: origin, Status: StatusActive,
		ValidUntil: w.c.ValidUntil, ContentHash: w.c.hash(), ProposalID: proposalID, ActorKeyID: w.a.p.KeyID, ActorKind: w.a.kind(),
		AgentVersion: w.agentVersion, CreatedAt: w.now, UpdatedAt: w.now,
	}
	if w.prev != nil {
		r.LineageID, r.Version, r.SupersedesNoteID = w.prev.LineageID, w.prev.Version+1, w.prev.ID
	}
	return r
}

// placeNote inserts note row r of write w inside tx with the sources' counts of active notes
// kept: an edit retires the version it supersedes (compare-and-swap on its status; fault.Conflict
// note_not_active) and moves a count only when the source changes; a new note is counted
// against the cap first (noterows.CountActive; on PostgreSQL noterows.CountAndInsert, the
// count and the insert in one round trip).
func placeNote(ctx context.Context, tx bun.IDB, w write, r *models.Note) error {
	switch {
	case w.prev != nil:
		if err := retireRow(ctx, tx, w.a.p.SpaceID, w.prev.ID, w.now); err != nil {
			return err
		}
		if w.prev.SourceID != w.a.sourceID { // an edit keeps its source's count unless it moves
			if _, err := noterows.AddActive(ctx, tx, w.a.p.SpaceID, w.prev.SourceID, -1); err != nil {
				return err
			}
			if _, err := noterows.AddActive(ctx, tx, w.a.p.SpaceID, w.a.sourceID, 1); err != nil {
				return err
			}
		}
	case db.IsSQLite(tx):
		if err := noterows.CountActive(ctx, tx, w.a.p.SpaceID, w.a.sourceID, w.f.NotesCap(), w.now); err != nil {
			return err
		}
	default:
		return noterows.CountAndInsert(ctx, tx, r, w.f.NotesCap(), w.now)
	}
	if err := noterows.InsertNote(ctx, tx, r); err != nil {
		return fmt.Errorf("notes: insert: %w", err)
	}
	return nil
}

func joinTags(tags []string) string {
	out := ""
	for i, t := range tags {
		if i > 0 {
			out += " "
		}
		out += t
	}
	return out
}

// retireRow retires an active note by compare-and-swap on its status and bumps the space's
// notes_removed revision; a note no longer active is fault.Conflict note_not_active.
func retireRow(ctx context.Context, tx bun.IDB, spaceID, noteID string, now time.Time) error {
	res, err := tx.NewUpdate().Model((*models.Note)(nil)).
		Set("status = ?, retired_at = ?, updated_at = ?", StatusRetired, now, now).
		Where("id = ? AND space_id = ? AND status = ?", noteID, spaceID, StatusActive).Exec(ctx)
	if err != nil {
		return fmt.Errorf("notes: retire: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notActive()
	}
	// Block answers decided before it are no longer given (Service.Block).
	return spaces.BumpRevision(ctx, tx, spaceID, spaces.RevisionNotesRemoved)
}

// checkRate refuses the write when the agent already made RateLimit counted writes (notes and
// proposals written with an agent key) in the hour before now: fault.TooMany with RetryAfter
// until enough of them leave the hour. Counted from stored rows, so it holds across replicas.
func checkRate(ctx context.Context, tx bun.IDB, spaceID, sourceID string, now time.Time) error {
	since := now.Add(-RateWindow)
	var times []time.Time
	for _, m := range []any{(*models.Note)(nil), (*models.NoteProposal)(nil)} {
		var ts []time.Time
		if err := tx.NewSelect().Model(m).Column("created_at").
			Where("space_id = ? AND source_id = ? AND actor_kind = ? AND created_at > ?", spaceID, sourceID, auth.KindAgent, since).
			Scan(ctx, &ts); err != nil {
			return fmt.Errorf("notes: rate: %w", err)
		}
		times = append(times, ts...)
	}
	return noterows.RateLimited(times, now, "an agent writes at most %d notes per hour; retry after %d s")
}
