package notes

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// Proposal statuses (AM-8, AM-9). drafting: created by distillation, content not yet there;
// pending: waiting for a person; approved/rejected: decided; failed: distillation gave up
// (Reason says why); expired: nobody decided in time.
const (
	ProposalDrafting = "drafting"
	ProposalPending  = "pending"
	ProposalApproved = "approved"
	ProposalRejected = "rejected"
	ProposalFailed   = "failed"
	ProposalExpired  = "expired"
)

// ProposalStatuses lists every status, in lifecycle order.
var ProposalStatuses = []string{ProposalDrafting, ProposalPending, ProposalApproved, ProposalRejected, ProposalFailed, ProposalExpired}

// Codes of proposal errors.
const (
	CodeProposalNotFound   = "proposal_not_found"
	CodeProposalNotPending = "proposal_not_pending"
)

// Proposal is a proposal as the API shows it (GET /v1/agent-memory/proposals/{id}).
// Note holds the proposed fields once there are some (pending and later; null while
// drafting and when failed); NoteID is set once approved. Reason says why it failed (or
// the reviewer's reason for a rejection); Kinds lists the personal-data kinds (never values)
// of a personal_data failure; LastError is why a drafting proposal is still drafting
// (model_unreachable, model_bad_answer) or why the last approval was refused. Evidence is
// what it was distilled from (or what the agent cited). Dates are RFC 3339 UTC.
type Proposal struct {
	ID               string        `json:"id"`
	Status           string        `json:"status"`
	Reason           *string       `json:"reason"`
	Kinds            []string      `json:"kinds,omitempty"`
	LastError        *string       `json:"last_error"`
	SourceID         string        `json:"source_id"`
	Vendor           string        `json:"vendor"`
	Origin           string        `json:"origin"`
	Evidence         *Evidence     `json:"evidence"`
	SupersedesNoteID *string       `json:"supersedes_note_id"`
	Note             *ProposedNote `json:"note"`
	NoteID           *string       `json:"note_id"`
	DecidedBy        *string       `json:"decided_by"`
	DecidedAt        *time.Time    `json:"decided_at"`
	CreatedAt        time.Time     `json:"created_at"`
	UpdatedAt        time.Time     `json:"updated_at"`
}

// ProposedNote is the note a proposal would write (an approval's edits may still change it).
type ProposedNote struct {
	Kind       string     `json:"kind"`
	Title      string     `json:"title"`
	Body       string     `json:"body"`
	Tags       []string   `json:"tags"`
	Visibility string     `json:"visibility"`
	ValidUntil *time.Time `json:"valid_until"`
}

func toProposal(r models.NoteProposal) Proposal {
	p := Proposal{
		ID: r.ID, Status: r.Status, Reason: strPtr(r.Reason), LastError: strPtr(r.LastError), SourceID: r.SourceID,
		Vendor: r.Vendor, Origin: r.Origin, Evidence: evidenceOf(r.EvidenceKind, r.EvidenceID),
		SupersedesNoteID: strPtr(r.SupersedesNoteID), NoteID: strPtr(r.NoteID), DecidedBy: strPtr(r.DecidedBy),
		DecidedAt: utcPtr(r.DecidedAt), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if ks := decodeTags(r.Kinds); len(ks) > 0 {
		p.Kinds = ks
	}
	if r.Status != ProposalDrafting && r.Status != ProposalFailed && r.Title != "" {
		p.Note = &ProposedNote{Kind: r.Kind, Title: r.Title, Body: r.Body, Tags: decodeTags(r.Tags),
			Visibility: r.Visibility, ValidUntil: utcPtr(r.ValidUntil)}
	}
	return p
}

func proposalRow(w write, id string) models.NoteProposal {
	ek, eid := evidenceCols(w.c.Evidence)
	r := models.NoteProposal{
		ID: id, SpaceID: w.a.p.SpaceID, SourceID: w.a.sourceID, Vendor: w.a.vendor, Origin: w.a.origin(),
		Status: ProposalPending, Kind: w.c.Kind, Title: w.c.Title, Body: w.c.Body, Tags: encodeTags(w.c.Tags),
		Visibility: w.c.Visibility, EvidenceKind: ek, EvidenceID: eid, ValidUntil: w.c.ValidUntil,
		ActorKeyID: w.a.p.KeyID, ActorKind: w.a.kind(), AgentVersion: w.agentVersion, CreatedAt: w.now, UpdatedAt: w.now,
		Kinds: "[]",
	}
	if w.prev != nil {
		r.SupersedesNoteID = w.prev.ID
	}
	return r
}

func proposalContent(r models.NoteProposal) content {
	return content{Kind: r.Kind, Title: r.Title, Body: r.Body, Tags: decodeTags(r.Tags), Visibility: r.Visibility,
		Evidence: evidenceOf(r.EvidenceKind, r.EvidenceID), ValidUntil: utcPtr(r.ValidUntil)}
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

func (s *Service) loadProposal(ctx context.Context, idb bun.IDB, spaceID, id string) (models.NoteProposal, error) {
	var r models.NoteProposal
	err := idb.NewSelect().Model(&r).Where("id = ? AND space_id = ?", id, spaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fault.New(fault.NotFound, CodeProposalNotFound, "no proposal with that id in this space")
	}
	if err != nil {
		return r, fmt.Errorf("notes: load proposal: %w", err)
	}
	return r, nil
}

// ListProposals returns the space's proposals, newest first, optionally of one status, for
// admin or reviewer (fault.Forbidden otherwise; an unknown status is fault.Invalid).
func (s *Service) ListProposals(ctx context.Context, p auth.Principal, status string, limit int) ([]Proposal, error) {
	if err := s.mayDecide(ctx, p); err != nil {
		return nil, err
	}
	if status != "" && !slices.Contains(ProposalStatuses, status) {
		return nil, invalid("status", "status must be one of %s", strings.Join(ProposalStatuses, ", "))
	}
	var rows []models.NoteProposal
	q := s.DB.NewSelect().Model(&rows).Where("space_id = ?", p.SpaceID)
	if status != "" {
		q = q.Where("status = ?", status)
	}
	if err := q.Order("created_at DESC", "id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("notes: list proposals: %w", err)
	}
	out := make([]Proposal, 0, len(rows))
	for _, r := range rows {
		out = append(out, toProposal(r))
	}
	return out, nil
}

// GetProposal returns one proposal for admin or reviewer (fault.NotFound proposal_not_found).
func (s *Service) GetProposal(ctx context.Context, p auth.Principal, id string) (Proposal, error) {
	if err := s.mayDecide(ctx, p); err != nil {
		return Proposal{}, err
	}
	r, err := s.loadProposal(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return Proposal{}, err
	}
	return toProposal(r), nil
}

// Approve turns pending proposal id into a note (AM-8), applying the reviewer's optional
// edits, which pass the personal-data gate again (the whole content is re-checked, since the
// space's known subjects may have changed since it was proposed). The note keeps the
// proposal's source and origin ("agent" or "distilled") and does not count against the
// agent's hourly limit; it counts against the cap. An edit proposal retires the note it
// supersedes. It returns the note and true when this call wrote it; approving an approved
// proposal changes nothing and returns its note (as it is now) and false, whatever the
// edits. This is the direct path (proposals of writes: human_only); a distilled proposal
// is decided through its workflow (StageDecision, ApplyApproval), which ends in the same
// approve.
//
// Errors: fault.Forbidden (role), fault.NotFound proposal_not_found, fault.Conflict
// proposal_not_pending / note_not_active / note_cap_reached, fault.Invalid for edits,
// fault.Unprocessable personal_data_in_agent_memory, fault.Unavailable detector_unavailable.
func (s *Service) Approve(ctx context.Context, p auth.Principal, id string, edits *Patch) (Note, bool, error) {
	if err := s.mayDecide(ctx, p); err != nil {
		return Note{}, false, err
	}
	pr, err := s.loadProposal(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return Note{}, false, err
	}
	if pr.Status == ProposalApproved {
		n, err := s.noteOf(ctx, pr)
		return n, false, err
	}
	if pr.Status != ProposalPending {
		return Note{}, false, notPending(pr.Status)
	}
	c, err := s.approvalContent(ctx, pr, edits)
	if err != nil {
		return Note{}, false, err
	}
	n, err := s.approve(ctx, pr, c, p.KeyID, edits != nil, "")
	if err != nil {
		return Note{}, false, err
	}
	return n, true, nil
}

// noteOf loads the note an approved proposal wrote.
func (s *Service) noteOf(ctx context.Context, pr models.NoteProposal) (Note, error) {
	var r models.Note
	if err := s.DB.NewSelect().Model(&r).Where("id = ? AND space_id = ?", pr.NoteID, pr.SpaceID).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Note{}, noteNotFound()
		}
		return Note{}, fmt.Errorf("notes: load approved note: %w", err)
	}
	return toNote(r), nil
}

// approvalContent is the proposal's content with edits applied, validated and gated.
func (s *Service) approvalContent(ctx context.Context, pr models.NoteProposal, edits *Patch) (content, error) {
	c := proposalContent(pr).apply(edits)
	if err := c.validate(s.now()); err != nil {
		return c, err
	}
	return c, s.Check(ctx, pr.SpaceID, c.gateText())
}

// approve writes pending proposal pr's note with content c (validated and gated) in one
// transaction: the admin receipt, the proposal's compare-and-swap to approved, the note (cap
// checked; an edit retires its predecessor), its tags, search row and event, and, when
// decisionID is set, that decision's outcome.
func (s *Service) approve(ctx context.Context, pr models.NoteProposal, c content, byKey string, edited bool, decisionID string) (Note, error) {
	f, err := s.Docs.Features(ctx, pr.SpaceID)
	if err != nil {
		return Note{}, err
	}
	now := s.now()
	noteID := auth.NewID("note")
	id := pr.ID
	var out Note
	err = s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		objs := []string{id, noteID}
		if pr.SupersedesNoteID != "" {
			objs = append(objs, pr.SupersedesNoteID)
		}
		if _, err := receipts.Append(ctx, tx, pr.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "proposal.approve", ActorKey: byKey, ObjectIDs: objs,
			Detail: map[string]any{"edited": edited, "source_id": pr.SourceID, "origin": pr.Origin},
		}, now); err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*models.NoteProposal)(nil)).
			Set("status = ?, note_id = ?, decided_by = ?, decided_at = ?, updated_at = ?, last_error = ''", ProposalApproved, noteID, byKey, now, now).
			Where("id = ? AND space_id = ? AND status = ?", id, pr.SpaceID, ProposalPending).Exec(ctx)
		if err != nil {
			return fmt.Errorf("notes: approve: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notPending("decided")
		}
		p := auth.Principal{SpaceID: pr.SpaceID, KeyID: byKey, Kind: auth.KindPerson}
		w := write{a: actor{p: p, sourceID: pr.SourceID, vendor: pr.Vendor}, f: f, c: c, agentVersion: pr.AgentVersion, now: now}
		if pr.SupersedesNoteID != "" {
			var prev models.Note
			if err := tx.NewSelect().Model(&prev).Where("id = ? AND space_id = ?", pr.SupersedesNoteID, pr.SpaceID).Scan(ctx); err != nil {
				return fmt.Errorf("notes: load superseded: %w", err)
			}
			w.prev = &prev
		}
		out, err = insertNote(ctx, tx, w, noteID, pr.Origin, id)
		if err != nil {
			return err
		}
		if decisionID != "" {
			return setOutcome(ctx, tx, decisionID, DecisionApproved, nil, now)
		}
		return nil
	})
	if err != nil {
		return Note{}, err
	}
	return out, nil
}

// Reject closes pending proposal id without a note; reason (optional, at most 200
// characters, e.g. "duplicate") is kept. Errors as Approve's. This is the direct path; a
// distilled proposal is rejected through its workflow (StageDecision, ApplyRejection).
func (s *Service) Reject(ctx context.Context, p auth.Principal, id, reason string) (Proposal, error) {
	if err := s.mayDecide(ctx, p); err != nil {
		return Proposal{}, err
	}
	if err := s.checkReason(ctx, p.SpaceID, reason); err != nil {
		return Proposal{}, err
	}
	return s.transition(ctx, move{spaceID: p.SpaceID, actorKey: p.KeyID, id: id, action: "proposal.reject",
		from: ProposalPending, to: ProposalRejected, reason: reason, decided: true})
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
			q = q.Set("kinds = ?", encodeTags(m.kinds))
		}
		if m.decided {
			q = q.Set("decided_by = ?, decided_at = ?", m.actorKey, now)
		}
		res, err := q.Where("id = ? AND space_id = ? AND status = ?", m.id, m.spaceID, m.from).Exec(ctx)
		if err != nil {
			return fmt.Errorf("notes: %s: %w", m.action, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			cur, err := s.loadProposal(ctx, tx, m.spaceID, m.id)
			if err != nil {
				return err
			}
			return notPending(cur.Status)
		}
		if m.decisionID != "" {
			if err := setOutcome(ctx, tx, m.decisionID, DecisionRejected, nil, now); err != nil {
				return err
			}
		}
		return tx.NewSelect().Model(&out).Where("id = ?", m.id).Scan(ctx)
	})
	if err != nil {
		return Proposal{}, err
	}
	return toProposal(out), nil
}

func notPending(status string) error {
	return fault.New(fault.Conflict, CodeProposalNotPending, "the proposal is %s, not pending", status).With("status", status)
}

// DraftRequest starts a distilled proposal (AM-9): the source agent and the evidence it is
// distilled from. ActorKey is the key that asked for the distillation (receipts).
type DraftRequest struct {
	SpaceID  string
	SourceID string
	Vendor   string
	ActorKey string
	Evidence Evidence
	// IdemKey is the keyed hash of the request's Idempotency-Key ("" for none) and BodyHash
	// the hash of the request it answers: with a key, the proposal's id is remembered in
	// note_requests in the same transaction, and a repeat returns it instead of a new one.
	IdemKey  string
	BodyHash string
}

// Draft stores a proposal in status drafting with origin "distilled", its admin receipt and
// its note_created event (AM-13), and returns its id. The distillation workflow fills it with
// Propose or ends it with Fail. At most RateLimit distillations per source agent per hour
// (fault.TooMany note_rate_limited with RetryAfter, counted from stored proposals).
func (s *Service) Draft(ctx context.Context, d DraftRequest) (string, error) {
	id, _, err := s.draft(ctx, d)
	return id, err
}

// draft is Draft reporting whether d.IdemKey matched an earlier distillation (then nothing is
// written and that proposal's id is returned; a different request under the same key is
// fault.Conflict idempotency_key_reused).
func (s *Service) draft(ctx context.Context, d DraftRequest) (string, bool, error) {
	c := content{Kind: KindProcedure, Title: "-", Body: "-", Evidence: &d.Evidence}
	if err := c.validate(s.now()); err != nil {
		return "", false, err
	}
	now := s.now()
	id := auth.NewID("prop")
	ek, eid := evidenceCols(&d.Evidence)
	var replayedID string
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// The receipt first: its chain head row serialises the space's writers, so the
		// idempotency re-check and the hourly limit below are exact across replicas.
		if _, err := receipts.Append(ctx, tx, d.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "proposal.draft", ActorKey: d.ActorKey, ObjectIDs: []string{id},
			Detail: map[string]any{"source_id": d.SourceID, "origin": OriginDistilled},
		}, now); err != nil {
			return err
		}
		if d.IdemKey != "" {
			prev, found, err := distillReplay(ctx, tx, d)
			if err != nil {
				return err
			}
			if found {
				replayedID = prev
				return errReplayed
			}
		}
		if err := checkDistillRate(ctx, tx, d.SpaceID, d.SourceID, now); err != nil {
			return err
		}
		r := models.NoteProposal{
			ID: id, SpaceID: d.SpaceID, SourceID: d.SourceID, Vendor: d.Vendor, Origin: OriginDistilled,
			Status: ProposalDrafting, Tags: "[]", EvidenceKind: ek, EvidenceID: eid, ActorKeyID: d.ActorKey,
			ActorKind: "workflow", CreatedAt: now, UpdatedAt: now, Kinds: "[]",
		}
		if _, err := tx.NewInsert().Model(&r).Exec(ctx); err != nil {
			return fmt.Errorf("notes: insert draft: %w", err)
		}
		if _, err := events.Enqueue(ctx, tx, events.Event{
			Type: events.TypeNoteCreated, SpaceID: d.SpaceID, ProposalID: id, Origin: OriginDistilled, SourceID: d.SourceID,
		}, now); err != nil {
			return err
		}
		if d.IdemKey != "" {
			body, _ := json.Marshal(WriteResult{ProposalID: id})
			if _, err := tx.NewInsert().Model(&models.NoteRequest{
				SpaceID: d.SpaceID, KeyID: d.ActorKey, IdemKey: d.IdemKey, BodyHash: d.BodyHash,
				Status: 202, Response: string(body), CreatedAt: now,
			}).Exec(ctx); err != nil {
				return fmt.Errorf("notes: idempotency record: %w", err)
			}
		}
		return nil
	})
	if errors.Is(err, errReplayed) {
		return replayedID, true, nil
	}
	if err != nil {
		return "", false, err
	}
	return id, false, nil
}

// distillReplay looks up d's Idempotency-Key: (the proposal id first answered, true) for the
// same request, fault.Conflict idempotency_key_reused for a different one.
func distillReplay(ctx context.Context, idb bun.IDB, d DraftRequest) (string, bool, error) {
	var r models.NoteRequest
	err := idb.NewSelect().Model(&r).
		Where("space_id = ? AND key_id = ? AND idem_key = ?", d.SpaceID, d.ActorKey, d.IdemKey).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("notes: idempotency: %w", err)
	}
	var res WriteResult
	if r.BodyHash != d.BodyHash || json.Unmarshal([]byte(r.Response), &res) != nil || res.ProposalID == "" {
		return "", true, fault.New(fault.Conflict, CodeIdempotencyReuse, "this Idempotency-Key was used for a different request")
	}
	return res.ProposalID, true, nil
}

// DistilledNote is what the model proposes for a drafting proposal.
type DistilledNote struct {
	Kind  string   `json:"kind"`
	Title string   `json:"title"`
	Body  string   `json:"body"`
	Tags  []string `json:"tags"`
}

// Propose fills drafting proposal id with n and makes it pending, after validation and the
// personal-data gate. A note over the limits ends the proposal failed with reason
// "invalid_note", one with personal data failed with reason "personal_data"; both return
// the fault as well. fault.Unavailable detector_unavailable leaves it drafting (retry).
func (s *Service) Propose(ctx context.Context, spaceID, id string, n DistilledNote) error {
	pr, err := s.loadProposal(ctx, s.DB, spaceID, id)
	if err != nil {
		return err
	}
	if pr.Status != ProposalDrafting {
		return notPending(pr.Status)
	}
	c := content{Kind: n.Kind, Title: n.Title, Body: n.Body, Tags: n.Tags, Visibility: VisibilitySource,
		Evidence: evidenceOf(pr.EvidenceKind, pr.EvidenceID)}
	if err := c.validate(s.now()); err != nil {
		_, _ = s.Fail(ctx, spaceID, id, "invalid_note")
		return err
	}
	if err := s.Check(ctx, spaceID, c.gateText()); err != nil {
		if fe := fault.As(err); fe != nil && fe.Code == CodePersonalData {
			kinds, _ := fe.Details["kinds"].([]string)
			_ = s.MarkFailed(ctx, id, "personal_data", kinds)
		}
		return err
	}
	return s.pend(ctx, pr, c)
}

// pend stores content c (validated and gated) in drafting proposal pr and makes it pending,
// clearing its last error, with a proposal.propose admin receipt, in one transaction.
func (s *Service) pend(ctx context.Context, pr models.NoteProposal, c content) error {
	now := s.now()
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := receipts.Append(ctx, tx, pr.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "proposal.propose", ActorKey: pr.ActorKeyID, ObjectIDs: []string{pr.ID},
			Detail: map[string]any{"kind": c.Kind},
		}, now); err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*models.NoteProposal)(nil)).
			Set("status = ?, kind = ?, title = ?, body = ?, tags = ?, visibility = ?, updated_at = ?, last_error = ''",
				ProposalPending, c.Kind, c.Title, c.Body, encodeTags(c.Tags), c.Visibility, now).
			Where("id = ? AND space_id = ? AND status = ?", pr.ID, pr.SpaceID, ProposalDrafting).Exec(ctx)
		if err != nil {
			return fmt.Errorf("notes: propose: %w", err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return notPending("decided")
		}
		return nil
	})
}

// Fail ends drafting proposal id as failed with reason (nothing_to_propose, personal_data,
// unconfirmed_link, no_turns, invalid_note). A proposal no longer drafting is
// fault.Conflict proposal_not_pending.
func (s *Service) Fail(ctx context.Context, spaceID, id, reason string) (Proposal, error) {
	pr, err := s.loadProposal(ctx, s.DB, spaceID, id)
	if err != nil {
		return Proposal{}, err
	}
	return s.transition(ctx, move{spaceID: spaceID, actorKey: pr.ActorKeyID, id: id, action: "proposal.fail",
		from: ProposalDrafting, to: ProposalFailed, reason: reason})
}
