package proposals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/models"
)

// ReasonWorkflowUnavailable is why AbandonDistillProposal ends a proposal: its distillation
// workflow could not be started and the caller was told to try again.
const ReasonWorkflowUnavailable = "workflow_unavailable"

// DraftRequest starts a distilled proposal (AM-9): the source agent and the evidence it is
// distilled from. ActorKey is the key that asked for the distillation (receipts).
type DraftRequest struct {
	SpaceID  string
	SourceID string
	Vendor   string
	ActorKey string
	// AgentVersion is the Agent-Version header of the distillation request (MS-5), "" when none.
	AgentVersion string
	Evidence     notes.Evidence
	// IdemKey is the keyed hash of the request's Idempotency-Key ("" for none) and BodyHash
	// the hash of the request it answers: with a key, the proposal's id is remembered in
	// note_requests in the same transaction, and a repeat returns it instead of a new one.
	IdemKey  string
	BodyHash string
}

var errReplayed = errors.New("proposals: replayed")

// CreateDistillProposal starts a distillation (AM-9): it checks the feature and the caller
// (an agent with agent_memory:write distils for itself, naming no other source_id; a person
// with role admin or integration names source_id, an agent of the space), and stores a
// drafting proposal of origin "distilled" whose evidence is scope, with its admin receipt
// and event (Draft). It returns the proposal's id; the workflow input then carries only
// that id.
//
// Errors: fault.Forbidden feature_disabled / scope_required / role_required /
// source_mismatch, fault.Invalid (source_id, evidence ids), fault.TooMany note_rate_limited
// with RetryAfter when the source agent already had noterows.RateLimit (20) distillations in
// the hour.
func (s *Service) CreateDistillProposal(ctx context.Context, p auth.Principal, scope turns.Scope, sourceID string) (string, error) {
	id, _, err := s.CreateDistillProposalOnce(ctx, p, scope, sourceID, "")
	return id, err
}

// CreateDistillProposalOnce is CreateDistillProposal under the request's Idempotency-Key
// idemKey ("" for none; otherwise 1 to notes.MaxIdempotencyKey printable ASCII characters,
// else fault.Invalid invalid_header): the proposal's id is remembered with the proposal, per
// acting key, and a retry with the same key and request returns it with replayed true,
// storing nothing (issue 11 §3: a client retrying after 503 gets the same proposal, never a
// second one). The same key with a different request is fault.Conflict
// idempotency_key_reused. The key is stored as a keyed hash only.
func (s *Service) CreateDistillProposalOnce(ctx context.Context, p auth.Principal, scope turns.Scope, sourceID, idemKey string) (string, bool, error) {
	if err := notes.CheckIdempotencyKey(idemKey); err != nil {
		return "", false, err
	}
	if _, err := noterows.Features(ctx, s.Docs, p.SpaceID); err != nil {
		return "", false, err
	}
	sourceID, vendor, err := s.distillSource(ctx, p, sourceID)
	if err != nil {
		return "", false, err
	}
	d := DraftRequest{SpaceID: p.SpaceID, SourceID: sourceID, Vendor: vendor, ActorKey: p.KeyID, AgentVersion: p.AgentVersion,
		Evidence: notes.Evidence{ConversationID: scope.ConversationID, TaskID: scope.TaskID}}
	if idemKey != "" {
		d.IdemKey = noterows.IdemHash(s.Hasher, p.SpaceID, idemKey)
		d.BodyHash = noterows.HashRequest("distill", struct {
			Scope    turns.Scope `json:"scope"`
			SourceID string      `json:"source_id"`
		}{scope, sourceID})
		// A retry answered from the record without taking the space's write lock.
		if id, found, err := noterows.RecallProposal(ctx, s.DB, d.SpaceID, d.ActorKey, d.IdemKey, d.BodyHash); found || err != nil {
			return id, found && err == nil, err
		}
	}
	return s.draft(ctx, d)
}

// AuthorizeDistill is the one authorisation of a distillation request (AM-9, AM-10), which
// the API's route also runs before it reads the body: an agent key needs scope
// agent_memory:write (fault.Forbidden scope_required), a person role admin or integration
// (fault.Forbidden role_required).
func AuthorizeDistill(p auth.Principal) error {
	if p.IsAgent() {
		if !p.HasScope(auth.ScopeAgentMemoryWrite) {
			return fault.New(fault.Forbidden, notes.CodeScopeRequired, "this key lacks scope agent_memory:write")
		}
		return nil
	}
	return p.RequireRole(auth.RoleAdmin, auth.RoleIntegration)
}

// distillSource authorises p (AuthorizeDistill) and resolves whose notes the distillation
// makes: an agent distils for itself (naming another source_id is fault.Forbidden
// source_mismatch); a person names source_id, an agent of the space, whose vendor comes from
// that agent's key (fault.Invalid invalid_member or unknown_source). It returns the source
// and its vendor.
func (s *Service) distillSource(ctx context.Context, p auth.Principal, sourceID string) (string, string, error) {
	if err := AuthorizeDistill(p); err != nil {
		return "", "", err
	}
	if p.IsAgent() {
		if sourceID != "" && sourceID != p.Agent {
			return "", "", fault.New(fault.Forbidden, notes.CodeSourceMismatch, "an agent distils notes for itself; leave source_id out").With("member", "source_id")
		}
		return p.Agent, p.Vendor, nil
	}
	vendor, err := noterows.SourceVendor(ctx, s.DB, p.SpaceID, sourceID)
	return sourceID, vendor, err
}

// Draft stores a proposal in status drafting with origin "distilled", its admin receipt and
// its note_created event (AM-13), and returns its id. The distillation workflow fills it with
// MarkPending or ends it with MarkFailed. At most noterows.RateLimit distillations per source
// agent per hour (fault.TooMany note_rate_limited with RetryAfter, counted from stored
// proposals); fault.Invalid for bad evidence ids.
func (s *Service) Draft(ctx context.Context, d DraftRequest) (string, error) {
	id, _, err := s.draft(ctx, d)
	return id, err
}

// draft is Draft reporting whether d.IdemKey matched an earlier distillation (then nothing is
// written and that proposal's id is returned; a different request under the same key is
// fault.Conflict idempotency_key_reused).
func (s *Service) draft(ctx context.Context, d DraftRequest) (string, bool, error) {
	ev := d.Evidence
	if _, err := (notes.ProposedNote{Kind: notes.KindProcedure, Title: "-", Body: "-"}).Validate(&ev, s.now()); err != nil {
		return "", false, err
	}
	now := s.now()
	id := auth.NewID("prop")
	ek, eid := noterows.EvidenceColumns(&ev)
	var replayedID string
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// The receipt first: its chain head row serialises the space's writers, so the
		// idempotency re-check and the hourly limit below are exact across replicas.
		if _, err := receipts.Append(ctx, tx, d.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "proposal.draft", ActorKey: d.ActorKey, ObjectIDs: []string{id},
			Detail: map[string]any{"source_id": d.SourceID, "origin": notes.OriginDistilled},
		}, now); err != nil {
			return err
		}
		if d.IdemKey != "" {
			prev, found, err := noterows.RecallProposal(ctx, tx, d.SpaceID, d.ActorKey, d.IdemKey, d.BodyHash)
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
			ID: id, SpaceID: d.SpaceID, SourceID: d.SourceID, Vendor: d.Vendor, Origin: notes.OriginDistilled,
			Status: StatusDrafting, Tags: "[]", EvidenceKind: ek, EvidenceID: eid, ActorKeyID: d.ActorKey,
			AgentVersion: d.AgentVersion, ActorKind: "workflow", CreatedAt: now, UpdatedAt: now, Kinds: "[]",
		}
		if err := noterows.InsertProposal(ctx, tx, s.Keys, &r); err != nil { // no text yet: nothing sealed
			return err
		}
		if d.IdemKey != "" {
			return noterows.RememberProposal(ctx, tx, d.SpaceID, d.ActorKey, d.IdemKey, d.BodyHash, id, now)
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

// checkDistillRate refuses a distillation when the source agent already has noterows.RateLimit
// distilled proposals created in the hour before now (counted from stored proposals, so it
// holds across replicas): fault.TooMany note_rate_limited with RetryAfter.
func checkDistillRate(ctx context.Context, tx bun.IDB, spaceID, sourceID string, now time.Time) error {
	var times []time.Time
	if err := tx.NewSelect().Model((*models.NoteProposal)(nil)).Column("created_at").
		Where("space_id = ? AND source_id = ? AND origin = ? AND created_at > ?", spaceID, sourceID, notes.OriginDistilled, now.Add(-noterows.RateWindow)).
		Scan(ctx, &times); err != nil {
		return fmt.Errorf("proposals: distill rate: %w", err)
	}
	return noterows.RateLimited(times, now, "an agent is distilled at most %d times per hour; retry after %d s")
}

// AbandonDistillProposal ends drafting proposal id failed with reason workflow_unavailable
// (with its proposal.fail receipt), so that nothing runs it later on its own: the API calls it
// when a distillation sent without Idempotency-Key could not start its workflow and answered
// 503 (issue 11 §3); the client's retry makes a new proposal. A proposal no longer drafting is
// left as it is (fault.Conflict proposal_not_pending).
func (s *Service) AbandonDistillProposal(ctx context.Context, id string) error {
	return s.MarkFailed(ctx, id, ReasonWorkflowUnavailable, nil)
}

// Distillation returns the space of proposal id and the evidence it distils (a
// conversation or a task id). fault.NotFound proposal_not_found.
func (s *Service) Distillation(ctx context.Context, id string) (string, notes.Evidence, error) {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return "", notes.Evidence{}, err
	}
	ev := evidence(pr)
	if ev == nil {
		return pr.SpaceID, notes.Evidence{}, nil
	}
	return pr.SpaceID, *ev, nil
}

// SetLastError records code (e.g. model_unreachable) as why drafting proposal id is still
// drafting; a proposal no longer drafting is left as it is.
func (s *Service) SetLastError(ctx context.Context, id, code string) error {
	_, err := s.DB.NewUpdate().Model((*models.NoteProposal)(nil)).
		Set("last_error = ?, updated_at = ?", code, s.now()).
		Where("id = ? AND status = ?", id, StatusDrafting).Exec(ctx)
	if err != nil {
		return fmt.Errorf("proposals: last error: %w", err)
	}
	return nil
}

// MarkPending fills drafting proposal id with n and makes it pending (clearing its last
// error), with a proposal.propose admin receipt. A distilled note is visible to its source
// only and has no expiry (n's visibility and valid_until are not used). The caller has
// passed n through the gate (notes.Service.Check); MarkPending validates it against AM-1's
// limits (fault.Invalid otherwise, the proposal untouched). A proposal already pending is
// left as it is (a retried activity); any other status is fault.Conflict
// proposal_not_pending; fault.NotFound proposal_not_found.
func (s *Service) MarkPending(ctx context.Context, id string, n notes.ProposedNote) error {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return err
	}
	if pr.Status == StatusPending {
		return nil
	}
	if pr.Status != StatusDrafting {
		return notPending(pr.Status)
	}
	n.Visibility, n.ValidUntil = notes.VisibilitySource, nil
	n, err = n.Validate(evidence(pr), s.now())
	if err != nil {
		return err
	}
	return s.pend(ctx, pr, n)
}

// pend stores note n (validated and gated) in drafting proposal pr and makes it pending,
// clearing its last error, with a proposal.propose admin receipt, in one transaction.
func (s *Service) pend(ctx context.Context, pr models.NoteProposal, n notes.ProposedNote) error {
	now := s.now()
	return s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := receipts.Append(ctx, tx, pr.SpaceID, receipts.Entry{
			Kind: receipts.KindAdmin, Action: "proposal.propose", ActorKey: pr.ActorKeyID, ObjectIDs: []string{pr.ID},
			Detail: map[string]any{"kind": n.Kind},
		}, now); err != nil {
			return err
		}
		sealed := models.NoteProposal{ID: pr.ID, Title: n.Title, Body: n.Body}
		if err := s.seal(ctx, &sealed); err != nil { // under the proposal's own key (issue 29 §1)
			return err
		}
		res, err := tx.NewUpdate().Model((*models.NoteProposal)(nil)).
			Set("status = ?, kind = ?, title = ?, body = ?, sealed = ?, tags = ?, visibility = ?, updated_at = ?, last_error = ''",
				StatusPending, n.Kind, sealed.Title, sealed.Body, sealed.Sealed, noterows.EncodeTags(n.Tags), n.Visibility, now).
			Where("id = ? AND space_id = ? AND status = ?", pr.ID, pr.SpaceID, StatusDrafting).Exec(ctx)
		if err != nil {
			return fmt.Errorf("proposals: propose: %w", err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return notPending("decided")
		}
		return nil
	})
}

// MarkFailed ends drafting proposal id failed with reason (no_turns, unconfirmed_link,
// model_error, nothing_to_propose, personal_data, instruction, workflow_unavailable) and,
// for personal_data, the kinds found (for instruction, the classes; never values), with a proposal.fail admin receipt. A
// proposal already failed is left as it is; any other status is fault.Conflict
// proposal_not_pending; fault.NotFound proposal_not_found.
func (s *Service) MarkFailed(ctx context.Context, id, reason string, kinds []string) error {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return err
	}
	if pr.Status == StatusFailed {
		return nil
	}
	_, err = s.transition(ctx, move{spaceID: pr.SpaceID, actorKey: pr.ActorKeyID, id: id, action: "proposal.fail",
		from: StatusDrafting, to: StatusFailed, reason: reason, kinds: kinds})
	return err
}

// ApprovalOutcome is what ApplyApproval did: NoteID of the note written (or, when the
// proposal was approved already, of its note); or, when the approval was refused and the
// proposal stays pending, the refusal's code (personal_data_in_agent_memory,
// note_cap_reached, invalid_member, note_not_active) and, for personal data, its kinds.
type ApprovalOutcome struct {
	NoteID       string
	RefusedCode  string
	RefusedKinds []string
}

// ApplyApproval is the workflow's side of an approval: it writes proposal id's note by the
// key byKey with the edits of staged decision decisionID ("" for none), gated again, in one
// transaction with its receipt, event and the decision's outcome. Approving an approved
// proposal changes nothing and returns its note id. A refusal (personal data, invalid edits,
// the cap) is recorded on the decision and as the proposal's last_error and returned in the
// outcome, not as an error. Errors: fault.NotFound proposal_not_found / decision_not_found,
// fault.Conflict proposal_not_pending (neither pending nor approved), fault.Unavailable
// detector_unavailable (retry).
func (s *Service) ApplyApproval(ctx context.Context, id, decisionID, byKey string) (ApprovalOutcome, error) {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return ApprovalOutcome{}, err
	}
	if pr.Status == StatusApproved {
		return ApprovalOutcome{NoteID: pr.NoteID}, nil
	}
	if pr.Status != StatusPending {
		return ApprovalOutcome{}, notPending(pr.Status)
	}
	var edits *notes.Patch
	if decisionID != "" {
		d, err := s.loadDecision(ctx, id, decisionID)
		if err != nil {
			return ApprovalOutcome{}, err
		}
		if d.Patch != "" {
			edits = &notes.Patch{}
			if err := json.Unmarshal([]byte(d.Patch), edits); err != nil {
				return ApprovalOutcome{}, fmt.Errorf("proposals: decode edits: %w", err)
			}
		}
	}
	c, err := s.approvalContent(ctx, pr, edits)
	if err == nil {
		var out notes.Note
		out, err = s.approve(ctx, pr, c, byKey, edits != nil, decisionID)
		if err == nil {
			return ApprovalOutcome{NoteID: out.ID}, nil
		}
	}
	fe := fault.As(err)
	switch {
	case fe != nil && fe.Code == CodeNotPending:
		// Decided meanwhile: approved by a concurrent call, or not at all.
		cur, lerr := s.loadByID(ctx, s.DB, id)
		if lerr == nil && cur.Status == StatusApproved {
			return ApprovalOutcome{NoteID: cur.NoteID}, nil
		}
		return ApprovalOutcome{}, err
	case fe != nil && (fe.Kind == fault.Unprocessable || fe.Kind == fault.Invalid || fe.Kind == fault.Conflict):
		return s.refuse(ctx, pr, decisionID, fe)
	default:
		return ApprovalOutcome{}, err
	}
}

// refuse records a refused approval: the decision's outcome and the proposal's last_error.
func (s *Service) refuse(ctx context.Context, pr models.NoteProposal, decisionID string, fe *fault.Error) (ApprovalOutcome, error) {
	now := s.now()
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*models.NoteProposal)(nil)).Set("last_error = ?, updated_at = ?", fe.Code, now).
			Where("id = ? AND status = ?", pr.ID, StatusPending).Exec(ctx); err != nil {
			return fmt.Errorf("proposals: refusal: %w", err)
		}
		if decisionID == "" {
			return nil
		}
		return setOutcome(ctx, tx, decisionID, outcomeRefused, fe, now)
	})
	if err != nil {
		return ApprovalOutcome{}, err
	}
	return ApprovalOutcome{RefusedCode: fe.Code, RefusedKinds: refusedKinds(fe)}, nil
}

// ApplyRejection is the workflow's side of a rejection: pending proposal id becomes
// rejected by byKey, with the reason of staged decision decisionID ("" for none), its
// receipt and the decision's outcome, in one transaction. A proposal already rejected is
// left as it is; any other status is fault.Conflict proposal_not_pending; fault.NotFound
// proposal_not_found / decision_not_found.
func (s *Service) ApplyRejection(ctx context.Context, id, decisionID, byKey string) error {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return err
	}
	if pr.Status == StatusRejected {
		return nil
	}
	m := move{spaceID: pr.SpaceID, actorKey: byKey, id: id, action: "proposal.reject", from: StatusPending,
		to: StatusRejected, decided: true}
	if decisionID != "" {
		d, err := s.loadDecision(ctx, id, decisionID)
		if err != nil {
			return err
		}
		m.reason, m.decisionID = d.Reason, decisionID
	}
	_, err = s.transition(ctx, m)
	return err
}

// Expire ends pending proposal id expired (its approval deadline passed), with a
// proposal.expire admin receipt by "system". A proposal no longer pending (decided
// meanwhile, or expired already) is left as it is; fault.NotFound proposal_not_found.
func (s *Service) Expire(ctx context.Context, id string) error {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return err
	}
	if pr.Status != StatusPending {
		return nil
	}
	_, err = s.transition(ctx, move{spaceID: pr.SpaceID, actorKey: "system", id: id, action: "proposal.expire",
		from: StatusPending, to: StatusExpired})
	if fault.IsCode(err, CodeNotPending) {
		return nil
	}
	return err
}
