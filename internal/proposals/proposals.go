// Package proposals owns the proposal lifecycle of agent memory (AM-8, AM-9): the tables
// note_proposals and proposal_decisions, every status change with its admin receipt, and
// the one entry point a reviewer's decision goes through, Decide, whatever proposed the note
// (an agent's write under writes: human_only, a distillation, the console). It chooses the
// path itself: a distilled proposal whose workflow runs is decided by that workflow (the
// decision is staged here and handed over through the Workflow interface, which workflows/
// implements); any other is decided directly. Either way an approval writes its note through
// notes.Service.InsertApproved inside the approval's one transaction, with its receipt and
// outbox event.
//
// proposals imports internal/notes, never the reverse, and notes holds no hook into it: an
// agent's write under writes: human_only stores its pending proposal through
// internal/noterows (InsertProposal), which holds the row-level primitives both need (column
// codecs, sealing, the cap, idempotency records, the note and proposal inserts). An approval
// crosses into notes twice (CheckApproval, then InsertApproved; TestApprovalSeam).
// The package never imports gin or Temporal; errors are *fault.Error.
package proposals

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Statuses of a proposal (AM-8, AM-9): the one vocabulary every caller names (activities,
// workflows and the API declare none of their own; TestOneStatusVocabulary). drafting:
// created by distillation, content not yet there; pending: waiting for a person;
// approved/rejected: decided; failed: distillation gave up (Reason says why); expired: nobody
// decided in time. The strings are note_proposals.status's, spelled once beside the row in
// internal/noterows, whose InsertProposal writes the first status of agents' proposals.
// They are also carried in workflow history (DistillWorkflow's Draft result): never change
// a value.
const (
	StatusDrafting = noterows.ProposalDrafting
	StatusPending  = noterows.ProposalPending
	StatusApproved = noterows.ProposalApproved
	StatusRejected = noterows.ProposalRejected
	StatusFailed   = noterows.ProposalFailed
	StatusExpired  = noterows.ProposalExpired
)

// Statuses lists every status, in lifecycle order.
var Statuses = []string{StatusDrafting, StatusPending, StatusApproved, StatusRejected, StatusFailed, StatusExpired}

// Codes of proposal errors.
const (
	CodeNotFound   = "proposal_not_found"
	CodeNotPending = "proposal_not_pending"
	// CodeAlreadyDecided: an approval whose staged decision lost to another approval of the
	// same proposal, applied first with different edits.
	CodeAlreadyDecided = "proposal_already_decided"
	// CodeDecisionNotFound: a staged decision that does not exist.
	CodeDecisionNotFound = "decision_not_found"
)

// Service is the proposal lifecycle. DB, Docs, Hasher and Notes are required: Docs gives the
// space documents (features, AM-10's reviewers), Hasher keys the stored hashes of
// Idempotency-Key values, and Notes is agent memory's narrow API for proposals (the approval's
// CheckApproval and InsertApproved, Stored, the reason's gate, notes' side of deletes,
// exports and erasures). Keys seals proposals' title and body (issue 29 §1; nil: stored in
// clear, package tests). Workflow hands decisions on distilled proposals to their workflows
// (nil: every proposal is decided directly). Now is the clock (nil: Notes.Now, else time.Now).
type Service struct {
	DB       *bun.DB
	Docs     spaces.Documents
	Hasher   keyed.Hasher
	Keys     keystore.Store
	Notes    *notes.Service
	Workflow Workflow
	// ExportTTL is how long an agent-memory export file lives (DefaultExportTTL when zero).
	ExportTTL time.Duration
	Now       func() time.Time
}

var _ erasure.SourceEraser = (*Service)(nil)

// WithWorkflow returns a copy of s whose distilled proposals are decided through w.
func (s *Service) WithWorkflow(w Workflow) *Service {
	c := *s
	c.Workflow = w
	return &c
}

func (s *Service) now() time.Time {
	now := time.Now
	switch {
	case s.Now != nil:
		now = s.Now
	case s.Notes != nil && s.Notes.Now != nil:
		now = s.Notes.Now
	}
	// Stored times keep microseconds (PostgreSQL's precision): answers equal later reads.
	return now().UTC().Truncate(time.Microsecond)
}

// Proposal is a proposal as the API shows it (GET /v1/agent-memory/proposals/{id}).
// Note holds the proposed fields once there are some (pending and later; null while
// drafting and when failed); NoteID is set once approved. Reason says why it failed (or
// the reviewer's reason for a rejection); Kinds lists the personal-data kinds (never values)
// of a personal_data failure; LastError is why a drafting proposal is still drafting
// (model_unreachable, model_bad_answer) or why the last approval was refused. Evidence is
// what it was distilled from (or what the agent cited). Dates are RFC 3339 UTC.
type Proposal struct {
	ID               string              `json:"id"`
	Status           string              `json:"status"`
	Reason           *string             `json:"reason"`
	Kinds            []string            `json:"kinds,omitempty"`
	LastError        *string             `json:"last_error"`
	SourceID         string              `json:"source_id"`
	Vendor           string              `json:"vendor"`
	Origin           string              `json:"origin"`
	Evidence         *notes.Evidence     `json:"evidence"`
	SupersedesNoteID *string             `json:"supersedes_note_id"`
	Note             *notes.ProposedNote `json:"note"`
	NoteID           *string             `json:"note_id"`
	DecidedBy        *string             `json:"decided_by"`
	DecidedAt        *time.Time          `json:"decided_at"`
	// KeyID and AgentVersion are the proposal's provenance (MS-5, QT-2): the key whose
	// write or distillation request made it and that request's Agent-Version header.
	KeyID        string    `json:"key_id"`
	AgentVersion string    `json:"agent_version"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

func toProposal(r models.NoteProposal) Proposal {
	p := Proposal{
		ID: r.ID, Status: r.Status, Reason: strPtr(r.Reason), LastError: strPtr(r.LastError), SourceID: r.SourceID,
		Vendor: r.Vendor, Origin: r.Origin, Evidence: evidence(r),
		SupersedesNoteID: strPtr(r.SupersedesNoteID), NoteID: strPtr(r.NoteID), DecidedBy: strPtr(r.DecidedBy),
		DecidedAt: utcPtr(r.DecidedAt), KeyID: r.ActorKeyID, AgentVersion: r.AgentVersion, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if ks := noterows.DecodeTags(r.Kinds); len(ks) > 0 {
		p.Kinds = ks
	}
	if r.Status != StatusDrafting && r.Status != StatusFailed && r.Title != "" {
		n := proposedOf(r)
		p.Note = &n
	}
	return p
}

// proposedOf is the note stored in proposal r.
func proposedOf(r models.NoteProposal) notes.ProposedNote {
	return notes.ProposedNote{Kind: r.Kind, Title: r.Title, Body: r.Body, Tags: noterows.DecodeTags(r.Tags),
		Visibility: r.Visibility, ValidUntil: utcPtr(r.ValidUntil)}
}

func evidence(r models.NoteProposal) *notes.Evidence {
	return noterows.EvidenceOf(r.EvidenceKind, r.EvidenceID)
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// seal seals r's title and body under its own key (noterows.ProposalKeyID; issue 29 §1) and
// empties the columns' values in r: what an insert then stores.
func (s *Service) seal(ctx context.Context, r *models.NoteProposal) error {
	return noterows.SealProposal(ctx, s.Keys, r)
}

// mayDecide: role admin, or reviewer when the space lets reviewers approve (AM-10).
func (s *Service) mayDecide(ctx context.Context, p auth.Principal) error {
	f, err := s.Docs.Features(ctx, p.SpaceID)
	if err != nil {
		return err
	}
	if p.HasRole(auth.RoleAdmin) || (p.HasRole(auth.RoleReviewer) && f.ReviewersMayApprove()) {
		return nil
	}
	if f.ReviewersMayApprove() {
		return p.RequireRole(auth.RoleAdmin, auth.RoleReviewer)
	}
	return p.RequireRole(auth.RoleAdmin)
}

// open unseals r's title and body in place; a proposal whose key is gone (erased or deleted
// with its note) is fault.NotFound proposal_not_found.
func (s *Service) open(ctx context.Context, r *models.NoteProposal) error {
	ok, err := noterows.OpenProposal(ctx, s.Keys, r)
	if err != nil {
		return err
	}
	if !ok {
		return fault.New(fault.NotFound, CodeNotFound, "no proposal with that id")
	}
	return nil
}

// load loads proposal id of space spaceID: fault.NotFound proposal_not_found.
func (s *Service) load(ctx context.Context, idb bun.IDB, spaceID, id string) (models.NoteProposal, error) {
	var r models.NoteProposal
	err := idb.NewSelect().Model(&r).Where("id = ? AND space_id = ?", id, spaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fault.New(fault.NotFound, CodeNotFound, "no proposal with that id in this space")
	}
	if err != nil {
		return r, fmt.Errorf("proposals: load: %w", err)
	}
	return r, s.open(ctx, &r)
}

// loadByID loads a proposal by its id alone (ids are unique across spaces); the
// distillation's activities know nothing else. fault.NotFound proposal_not_found.
func (s *Service) loadByID(ctx context.Context, idb bun.IDB, id string) (models.NoteProposal, error) {
	var r models.NoteProposal
	err := idb.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fault.New(fault.NotFound, CodeNotFound, "no proposal with that id")
	}
	if err != nil {
		return r, fmt.Errorf("proposals: load: %w", err)
	}
	return r, s.open(ctx, &r)
}

// List returns the space's proposals, newest first, optionally of one status, at most
// limit, for admin or reviewer (fault.Forbidden role_required otherwise; an unknown status is
// fault.Invalid invalid_member naming status).
func (s *Service) List(ctx context.Context, p auth.Principal, status string, limit int) ([]Proposal, error) {
	if err := s.mayDecide(ctx, p); err != nil {
		return nil, err
	}
	if status != "" && !slices.Contains(Statuses, status) {
		return nil, noterows.Invalid("status", "status must be one of %s", strings.Join(Statuses, ", "))
	}
	var rows []models.NoteProposal
	q := s.DB.NewSelect().Model(&rows).Where("space_id = ?", p.SpaceID)
	if status != "" {
		q = q.Where("status = ?", status)
	}
	if err := q.Order("created_at DESC", "id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("proposals: list: %w", err)
	}
	rows, err := noterows.OpenProposals(ctx, s.Keys, rows)
	if err != nil {
		return nil, err
	}
	out := make([]Proposal, 0, len(rows))
	for _, r := range rows {
		out = append(out, toProposal(r))
	}
	return out, nil
}

// Get returns proposal id for admin or reviewer: fault.Forbidden role_required,
// fault.NotFound proposal_not_found.
func (s *Service) Get(ctx context.Context, p auth.Principal, id string) (Proposal, error) {
	if err := s.mayDecide(ctx, p); err != nil {
		return Proposal{}, err
	}
	r, err := s.load(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return Proposal{}, err
	}
	return toProposal(r), nil
}

// move is one status change of a proposal: from -> to by actorKey, with reason, kinds (for
// personal_data failures), decided (sets decided_by/decided_at) and, for a staged decision,
// its id (its outcome is recorded in the same transaction).
type move struct {
	spaceID, actorKey, id, action string
	from, to, reason              string
	kinds                         []string
	decided                       bool
	decisionID                    string
}

// transition applies m (compare-and-swap on the status) with an admin receipt, in one
// transaction. A proposal not in m.from is fault.Conflict proposal_not_pending.
func (s *Service) transition(ctx context.Context, m move) (Proposal, error) {
	now := s.now()
	var out models.NoteProposal
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		detail := map[string]any{"status": m.to, "reason": m.reason}
		if len(m.kinds) > 0 {
			detail["kinds"] = m.kinds
		}
		if _, err := receipts.Append(ctx, tx, m.spaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: m.action, ActorKey: m.actorKey, ObjectIDs: []string{m.id},
			Detail: detail,
		}, now); err != nil {
			return err
		}
		q := tx.NewUpdate().Model((*models.NoteProposal)(nil)).
			Set("status = ?, reason = ?, updated_at = ?, last_error = ''", m.to, m.reason, now)
		if m.kinds != nil {
			q = q.Set("kinds = ?", noterows.EncodeTags(m.kinds))
		}
		if m.decided {
			q = q.Set("decided_by = ?, decided_at = ?", m.actorKey, now)
		}
		res, err := q.Where("id = ? AND space_id = ? AND status = ?", m.id, m.spaceID, m.from).Exec(ctx)
		if err != nil {
			return fmt.Errorf("proposals: %s: %w", m.action, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			cur, err := s.load(ctx, tx, m.spaceID, m.id)
			if err != nil {
				return err
			}
			return notPending(cur.Status)
		}
		if m.decisionID != "" {
			if err := setOutcome(ctx, tx, m.decisionID, outcomeRejected, nil, now); err != nil {
				return err
			}
		}
		if err := tx.NewSelect().Model(&out).Where("id = ?", m.id).Scan(ctx); err != nil {
			return err
		}
		return s.open(ctx, &out)
	})
	if err != nil {
		return Proposal{}, err
	}
	return toProposal(out), nil
}

// notPending is fault.Conflict proposal_not_pending with the proposal's status.
func notPending(status string) error {
	return fault.New(fault.Conflict, CodeNotPending, "the proposal is %s, not pending", status).With("status", status)
}

// Export is the agent-memory export of a space (AM-12, GOV-3): every note version (retired
// ones too) and every proposal, in the shapes the API shows them.
type Export struct {
	SpaceID    string       `json:"space_id"`
	ExportedAt time.Time    `json:"exported_at"`
	Notes      []notes.Note `json:"notes"`
	Proposals  []Proposal   `json:"proposals"`
}

// Export returns everything of agent memory in p's space for role admin (fault.Forbidden
// role_required otherwise), whether the feature is on or not, and leaves a notes.export
// admin receipt with the counts, in one transaction. Notes come by lineage and version,
// proposals by creation.
func (s *Service) Export(ctx context.Context, p auth.Principal) (Export, error) {
	if err := p.RequireRole(auth.RoleAdmin); err != nil {
		return Export{}, err
	}
	now := s.now()
	out := Export{SpaceID: p.SpaceID, ExportedAt: now, Notes: []notes.Note{}, Proposals: []Proposal{}}
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ns, err := s.Notes.ExportNotes(ctx, tx, p.SpaceID)
		if err != nil {
			return err
		}
		var props []models.NoteProposal
		if err := tx.NewSelect().Model(&props).Where("space_id = ?", p.SpaceID).
			Order("created_at", "id").Scan(ctx); err != nil {
			return fmt.Errorf("proposals: export: %w", err)
		}
		if props, err = noterows.OpenProposals(ctx, s.Keys, props); err != nil {
			return err
		}
		out.Notes = append(out.Notes, ns...)
		for _, r := range props {
			out.Proposals = append(out.Proposals, toProposal(r))
		}
		_, err = receipts.Append(ctx, tx, p.SpaceID, receipts.Entry{
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

// Covers lists the tables an agent-note erasure erases (erasure.SourceEraser): the notes and
// their tags, full-text index (SQLite's notes_fts; PostgreSQL's is a column of the row) and
// remembered answers, the proposals and their staged decisions.
func (s *Service) Covers() []erasure.Column {
	return []erasure.Column{
		{Table: "notes", Column: "source_id"}, {Table: "note_tags", Column: "note_id"}, {Table: "notes_fts", Column: "note_id"},
		{Table: "note_requests", Column: "response"}, {Table: "note_proposals", Column: "source_id"},
		{Table: "proposal_decisions", Column: "proposal_id"}, {Table: "agent_memory_exports", Column: "source_id"},
	}
}

// EraseSource erases every note (all versions) and proposal of agent sourceID in space
// spaceID (AM-12; erasure.SourceEraser), inside idb (the erasure's transaction, which also
// holds its receipt): first the notes through notes.Service.EraseSource (which also forgets
// the remembered answers carrying the proposals' ids), then the proposals' staged decisions
// and the proposals. It returns how many notes and proposals it removed; a second call finds
// nothing. Outbox events and receipts stay: they hold ids, never text.
func (s *Service) EraseSource(ctx context.Context, idb bun.IDB, spaceID, sourceID string) (erasure.NoteCounts, error) {
	out, err := s.Notes.EraseSource(ctx, idb, spaceID, sourceID)
	if err != nil {
		return out, err
	}
	if _, err := idb.ExecContext(ctx, `DELETE FROM proposal_decisions WHERE proposal_id IN (SELECT p.id FROM note_proposals AS p WHERE p.space_id = ? AND p.source_id = ?)`,
		spaceID, sourceID); err != nil {
		return out, fmt.Errorf("proposals: erase decisions: %w", err)
	}
	res, err := idb.NewDelete().Model((*models.NoteProposal)(nil)).Where("space_id = ? AND source_id = ?", spaceID, sourceID).Exec(ctx)
	if err != nil {
		return out, fmt.Errorf("proposals: erase: %w", err)
	}
	n, _ := res.RowsAffected()
	out.Proposals = int(n)
	// The agent's export files go too (their key is destroyed with the notes' keys).
	if _, err := idb.NewDelete().Model((*models.AgentMemoryExport)(nil)).Where("space_id = ? AND source_id = ?", spaceID, sourceID).Exec(ctx); err != nil {
		return out, fmt.Errorf("proposals: erase export files: %w", err)
	}
	return out, nil
}
