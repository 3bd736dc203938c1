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
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/models"
)

// Decisions a reviewer stages for a distilled proposal's workflow.
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
)

// Outcomes of a staged decision once the workflow applied it.
const (
	DecisionApproved = "approved"
	DecisionRejected = "rejected"
	// DecisionRefused: the approval was refused (personal data in the edits, the cap
	// reached); the proposal stays pending.
	DecisionRefused = "refused"
)

// CodeDecisionNotFound is the code of a staged decision that does not exist.
const CodeDecisionNotFound = "decision_not_found"

// CreateDistillProposal starts a distillation (AM-9; api.DistillProposals): it checks the
// feature and the caller (an agent with agent_memory:write distils for itself, naming no
// other source_id; a person with role admin or integration names source_id, an agent of the
// space), and stores a drafting proposal of origin "distilled" whose evidence is scope, with
// its admin receipt and event (Draft). It returns the proposal's id; the workflow input
// then carries only that id.
//
// Errors: fault.Forbidden feature_disabled / scope_required / role_required /
// source_mismatch, fault.Invalid (source_id, evidence ids), fault.TooMany note_rate_limited
// with RetryAfter when the source agent already had RateLimit (20) distillations in the hour.
func (s *Service) CreateDistillProposal(ctx context.Context, p auth.Principal, scope turns.Scope, sourceID string) (string, error) {
	id, _, err := s.CreateDistillProposalOnce(ctx, p, scope, sourceID, "")
	return id, err
}

// CreateDistillProposalOnce is CreateDistillProposal under the request's Idempotency-Key
// idemKey ("" for none; otherwise 1 to MaxIdempotencyKey printable ASCII characters, else
// fault.Invalid invalid_header): the proposal's id is remembered with the proposal, per
// acting key, and a retry with the same key and request returns it with replayed true,
// storing nothing (issue 11 §3: a client retrying after 503 gets the same proposal, never a
// second one). The same key with a different request is fault.Conflict
// idempotency_key_reused. The key is stored as a keyed hash only.
func (s *Service) CreateDistillProposalOnce(ctx context.Context, p auth.Principal, scope turns.Scope, sourceID, idemKey string) (string, bool, error) {
	if err := CheckIdempotencyKey(idemKey); err != nil {
		return "", false, err
	}
	if _, err := s.features(ctx, p.SpaceID); err != nil {
		return "", false, err
	}
	var vendor string
	if p.IsAgent() {
		if !p.HasScope(auth.ScopeAgentMemoryWrite) {
			return "", false, fault.New(fault.Forbidden, CodeScopeRequired, "this key lacks scope agent_memory:write")
		}
		if sourceID != "" && sourceID != p.Agent {
			return "", false, fault.New(fault.Forbidden, CodeSourceMismatch, "an agent distils notes for itself; leave source_id out").With("member", "source_id")
		}
		sourceID, vendor = p.Agent, p.Vendor
	} else {
		if err := p.RequireRole(auth.RoleAdmin, auth.RoleIntegration); err != nil {
			return "", false, err
		}
		v, err := s.sourceVendor(ctx, p.SpaceID, sourceID)
		if err != nil {
			return "", false, err
		}
		vendor = v
	}
	d := DraftRequest{SpaceID: p.SpaceID, SourceID: sourceID, Vendor: vendor, ActorKey: p.KeyID,
		Evidence: Evidence{ConversationID: scope.ConversationID, TaskID: scope.TaskID}}
	if idemKey != "" {
		d.IdemKey = s.idemHash(p.SpaceID, idemKey)
		d.BodyHash = hashOf("distill", struct {
			Scope    turns.Scope `json:"scope"`
			SourceID string      `json:"source_id"`
		}{scope, sourceID})
		// A retry answered from the record without taking the space's write lock.
		if id, found, err := distillReplay(ctx, s.DB, d); found || err != nil {
			return id, found && err == nil, err
		}
	}
	return s.draft(ctx, d)
}

// ReasonWorkflowUnavailable is why AbandonDistillProposal ends a proposal: its distillation
// workflow could not be started and the caller was told to try again.
const ReasonWorkflowUnavailable = "workflow_unavailable"

// AbandonDistillProposal ends drafting proposal id failed with reason workflow_unavailable
// (with its proposal.fail receipt), so that nothing runs it later on its own: the API calls it
// when a distillation sent without Idempotency-Key could not start its workflow and answered
// 503 (issue 11 §3); the client's retry makes a new proposal. A proposal no longer drafting is
// left as it is (fault.Conflict proposal_not_pending).
func (s *Service) AbandonDistillProposal(ctx context.Context, id string) error {
	return s.MarkFailed(ctx, id, ReasonWorkflowUnavailable, nil)
}

// loadByID loads a proposal by its id alone (ids are unique across spaces); the
// distillation's activities know nothing else. fault.NotFound proposal_not_found.
func (s *Service) loadByID(ctx context.Context, idb bun.IDB, id string) (models.NoteProposal, error) {
	var r models.NoteProposal
	err := idb.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fault.New(fault.NotFound, CodeProposalNotFound, "no proposal with that id")
	}
	if err != nil {
		return r, fmt.Errorf("notes: load proposal: %w", err)
	}
	return r, nil
}

// Distillation returns the space of proposal id and the evidence it distils (a
// conversation or a task id). fault.NotFound proposal_not_found.
func (s *Service) Distillation(ctx context.Context, id string) (string, Evidence, error) {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return "", Evidence{}, err
	}
	ev := evidenceOf(pr.EvidenceKind, pr.EvidenceID)
	if ev == nil {
		return pr.SpaceID, Evidence{}, nil
	}
	return pr.SpaceID, *ev, nil
}

// SetLastError records code (e.g. model_unreachable) as why drafting proposal id is still
// drafting; a proposal no longer drafting is left as it is.
func (s *Service) SetLastError(ctx context.Context, id, code string) error {
	_, err := s.DB.NewUpdate().Model((*models.NoteProposal)(nil)).
		Set("last_error = ?, updated_at = ?", code, s.now()).
		Where("id = ? AND status = ?", id, ProposalDrafting).Exec(ctx)
	if err != nil {
		return fmt.Errorf("notes: last error: %w", err)
	}
	return nil
}

// MarkPending fills drafting proposal id with n and makes it pending (clearing its last
// error), with a proposal.propose admin receipt. The caller has passed n through the gate
// (Check); MarkPending validates it against AM-1's limits (fault.Invalid otherwise, the
// proposal untouched). A proposal already pending is left as it is (a retried activity);
// any other status is fault.Conflict proposal_not_pending.
func (s *Service) MarkPending(ctx context.Context, id string, n DistilledNote) error {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return err
	}
	if pr.Status == ProposalPending {
		return nil
	}
	if pr.Status != ProposalDrafting {
		return notPending(pr.Status)
	}
	c := content{Kind: n.Kind, Title: n.Title, Body: n.Body, Tags: n.Tags, Visibility: VisibilitySource,
		Evidence: evidenceOf(pr.EvidenceKind, pr.EvidenceID)}
	if err := c.validate(s.now()); err != nil {
		return err
	}
	return s.pend(ctx, pr, c)
}

// MarkFailed ends drafting proposal id failed with reason (no_turns, unconfirmed_link,
// model_error, nothing_to_propose, personal_data) and, for personal_data, the kinds found
// (never values), with a proposal.fail admin receipt. A proposal already failed is left as
// it is; any other status is fault.Conflict proposal_not_pending.
func (s *Service) MarkFailed(ctx context.Context, id, reason string, kinds []string) error {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return err
	}
	if pr.Status == ProposalFailed {
		return nil
	}
	_, err = s.transition(ctx, move{spaceID: pr.SpaceID, actorKey: pr.ActorKeyID, id: id, action: "proposal.fail",
		from: ProposalDrafting, to: ProposalFailed, reason: reason, kinds: kinds})
	return err
}

// Staged is StageDecision's answer: DecisionID names the stored decision the workflow is to
// apply; Note is set instead when an approve found the proposal already approved (its note;
// nothing was stored).
type Staged struct {
	DecisionID string
	Note       *Note
}

// StageDecision checks and stores a reviewer's decision on proposal id for its
// distillation workflow, which the caller then signals with the decision's id only. It
// checks the role (admin, or reviewer when the space lets reviewers approve) and the state
// (only a pending proposal is decided: fault.Conflict proposal_not_pending otherwise); an
// approve of an approved proposal returns its note and stores nothing. An approval's edits
// are validated and gated, and the cap checked, before anything is stored, so the reviewer
// gets 400/422/409/503 at once; a rejection's reason (at most 200 characters) is gated too.
func (s *Service) StageDecision(ctx context.Context, p auth.Principal, id, decision string, edits *Patch, reason string) (Staged, error) {
	if err := s.mayDecide(ctx, p); err != nil {
		return Staged{}, err
	}
	pr, err := s.loadProposal(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return Staged{}, err
	}
	if decision == DecisionApprove && pr.Status == ProposalApproved {
		n, err := s.noteOf(ctx, pr)
		return Staged{Note: &n}, err
	}
	if pr.Status != ProposalPending {
		return Staged{}, notPending(pr.Status)
	}
	d := models.ProposalDecision{ID: auth.NewID("dec"), SpaceID: p.SpaceID, ProposalID: id, Decision: decision,
		ByKeyID: p.KeyID, RefusedKinds: "[]"}
	switch decision {
	case DecisionApprove:
		if _, err := s.approvalContent(ctx, pr, edits); err != nil {
			return Staged{}, err
		}
		if pr.SupersedesNoteID == "" {
			f, err := s.Docs.Features(ctx, p.SpaceID)
			if err != nil {
				return Staged{}, err
			}
			if err := checkCap(ctx, s.DB, p.SpaceID, pr.SourceID, f.NotesCap(), s.now()); err != nil {
				return Staged{}, err
			}
		}
		if edits != nil {
			b, err := json.Marshal(edits)
			if err != nil {
				return Staged{}, fmt.Errorf("notes: encode edits: %w", err)
			}
			d.Patch = string(b)
		}
	case DecisionReject:
		if err := s.checkReason(ctx, p.SpaceID, reason); err != nil {
			return Staged{}, err
		}
		d.Reason = reason
	default:
		return Staged{}, invalid("decision", "decision must be approve or reject")
	}
	d.CreatedAt, d.UpdatedAt = s.now(), s.now()
	if _, err := s.DB.NewInsert().Model(&d).Exec(ctx); err != nil {
		return Staged{}, fmt.Errorf("notes: store decision: %w", err)
	}
	return Staged{DecisionID: d.ID}, nil
}

// checkReason validates and gates a rejection's reason.
func (s *Service) checkReason(ctx context.Context, spaceID, reason string) error {
	if len([]rune(reason)) > 200 {
		return invalid("reason", "reason is at most 200 characters")
	}
	if reason == "" {
		return nil
	}
	return s.Check(ctx, spaceID, reason)
}

func (s *Service) loadDecision(ctx context.Context, proposalID, decisionID string) (models.ProposalDecision, error) {
	var d models.ProposalDecision
	err := s.DB.NewSelect().Model(&d).Where("id = ? AND proposal_id = ?", decisionID, proposalID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return d, fault.New(fault.NotFound, CodeDecisionNotFound, "no staged decision with that id for this proposal")
	}
	if err != nil {
		return d, fmt.Errorf("notes: load decision: %w", err)
	}
	return d, nil
}

func setOutcome(ctx context.Context, idb bun.IDB, decisionID, outcome string, refusal *fault.Error, now time.Time) error {
	q := idb.NewUpdate().Model((*models.ProposalDecision)(nil)).Set("outcome = ?, updated_at = ?", outcome, now)
	if refusal != nil {
		kinds, _ := refusal.Details["kinds"].([]string)
		q = q.Set("refused_code = ?, refused_kinds = ?", refusal.Code, encodeTags(kinds))
	}
	if _, err := q.Where("id = ?", decisionID).Exec(ctx); err != nil {
		return fmt.Errorf("notes: decision outcome: %w", err)
	}
	return nil
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
// outcome, not as an error. Errors: fault.NotFound, fault.Conflict proposal_not_pending
// (neither pending nor approved), fault.Unavailable detector_unavailable (retry).
func (s *Service) ApplyApproval(ctx context.Context, id, decisionID, byKey string) (ApprovalOutcome, error) {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return ApprovalOutcome{}, err
	}
	if pr.Status == ProposalApproved {
		return ApprovalOutcome{NoteID: pr.NoteID}, nil
	}
	if pr.Status != ProposalPending {
		return ApprovalOutcome{}, notPending(pr.Status)
	}
	var edits *Patch
	if decisionID != "" {
		d, err := s.loadDecision(ctx, id, decisionID)
		if err != nil {
			return ApprovalOutcome{}, err
		}
		if d.Patch != "" {
			edits = &Patch{}
			if err := json.Unmarshal([]byte(d.Patch), edits); err != nil {
				return ApprovalOutcome{}, fmt.Errorf("notes: decode edits: %w", err)
			}
		}
	}
	c, err := s.approvalContent(ctx, pr, edits)
	if err == nil {
		var n Note
		n, err = s.approve(ctx, pr, c, byKey, edits != nil, decisionID)
		if err == nil {
			return ApprovalOutcome{NoteID: n.ID}, nil
		}
	}
	fe := fault.As(err)
	switch {
	case fe != nil && fe.Code == CodeProposalNotPending:
		// Decided meanwhile: approved by a concurrent call, or not at all.
		cur, lerr := s.loadByID(ctx, s.DB, id)
		if lerr == nil && cur.Status == ProposalApproved {
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
			Where("id = ? AND status = ?", pr.ID, ProposalPending).Exec(ctx); err != nil {
			return fmt.Errorf("notes: refusal: %w", err)
		}
		if decisionID == "" {
			return nil
		}
		return setOutcome(ctx, tx, decisionID, DecisionRefused, fe, now)
	})
	if err != nil {
		return ApprovalOutcome{}, err
	}
	kinds, _ := fe.Details["kinds"].([]string)
	return ApprovalOutcome{RefusedCode: fe.Code, RefusedKinds: kinds}, nil
}

// ApplyRejection is the workflow's side of a rejection: pending proposal id becomes
// rejected by byKey, with the reason of staged decision decisionID ("" for none), its
// receipt and the decision's outcome, in one transaction. A proposal already rejected is
// left as it is; any other status is fault.Conflict proposal_not_pending.
func (s *Service) ApplyRejection(ctx context.Context, id, decisionID, byKey string) error {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return err
	}
	if pr.Status == ProposalRejected {
		return nil
	}
	m := move{spaceID: pr.SpaceID, actorKey: byKey, id: id, action: "proposal.reject", from: ProposalPending,
		to: ProposalRejected, decided: true}
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
// meanwhile, or expired already) is left as it is.
func (s *Service) Expire(ctx context.Context, id string) error {
	pr, err := s.loadByID(ctx, s.DB, id)
	if err != nil {
		return err
	}
	if pr.Status != ProposalPending {
		return nil
	}
	_, err = s.transition(ctx, move{spaceID: pr.SpaceID, actorKey: "system", id: id, action: "proposal.expire",
		from: ProposalPending, to: ProposalExpired})
	if fault.IsCode(err, CodeProposalNotPending) {
		return nil
	}
	return err
}

// Decided reports the state of proposal id for p after a staged decision was signalled:
// the proposal, its note once approved, and, when staged decision decisionID was refused,
// that refusal as the error (fault.Unprocessable personal_data_in_agent_memory with its
// kinds, or fault.Conflict with the refusal's code).
func (s *Service) Decided(ctx context.Context, p auth.Principal, id, decisionID string) (Proposal, *Note, error) {
	pr, err := s.loadProposal(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return Proposal{}, nil, err
	}
	if pr.Status == ProposalApproved {
		n, err := s.noteOf(ctx, pr)
		if err != nil {
			return Proposal{}, nil, err
		}
		return toProposal(pr), &n, nil
	}
	if decisionID != "" {
		d, err := s.loadDecision(ctx, id, decisionID)
		if err != nil {
			return Proposal{}, nil, err
		}
		if d.Outcome == DecisionRefused {
			if d.RefusedCode == CodePersonalData {
				return Proposal{}, nil, refused(decodeTags(d.RefusedKinds))
			}
			return Proposal{}, nil, fault.New(fault.Conflict, d.RefusedCode, "the approval was refused (%s); the proposal stays pending", d.RefusedCode)
		}
	}
	return toProposal(pr), nil, nil
}

// CodeProposalAlreadyDecided is the code of an approval whose staged decision lost to
// another approval of the same proposal, applied first with different edits.
const CodeProposalAlreadyDecided = "proposal_already_decided"

// CheckApplied tells the caller who staged approval decisionID on proposal id, now
// approved, whether its decision is the one applied: (true, nil) when it is (the caller
// approved it: 201); (false, nil) when another decision was applied but with the same edits
// (the caller gets the note: 200); fault.Conflict proposal_already_decided otherwise (its
// edits were not applied).
func (s *Service) CheckApplied(ctx context.Context, id, decisionID string) (bool, error) {
	d, err := s.loadDecision(ctx, id, decisionID)
	if err != nil {
		return false, err
	}
	if d.Outcome == DecisionApproved {
		return true, nil
	}
	var won []models.ProposalDecision
	if err := s.DB.NewSelect().Model(&won).Where("proposal_id = ? AND decision = ? AND outcome = ?", id, DecisionApprove, DecisionApproved).
		Limit(1).Scan(ctx); err != nil {
		return false, fmt.Errorf("notes: applied decision: %w", err)
	}
	applied := ""
	if len(won) > 0 {
		applied = won[0].Patch
	}
	if samePatch(applied, d.Patch) {
		return false, nil
	}
	return false, fault.New(fault.Conflict, CodeProposalAlreadyDecided,
		"another approval of this proposal was applied first with other edits; yours were not applied")
}

// samePatch reports whether two stored edits (JSON of a Patch, "" for none) are the same.
func samePatch(a, b string) bool {
	if a == b {
		return true
	}
	var pa, pb Patch
	if a != "" && json.Unmarshal([]byte(a), &pa) != nil {
		return false
	}
	if b != "" && json.Unmarshal([]byte(b), &pb) != nil {
		return false
	}
	ja, _ := json.Marshal(pa)
	jb, _ := json.Marshal(pb)
	return string(ja) == string(jb)
}
