package proposals

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
	"github.com/agentmemory/agentmemory/internal/noterows"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// Decisions a reviewer makes (Decision.Kind; also the staged decision's kind and the
// workflow's signal, which use the same words).
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
)

// Outcomes of a staged decision once the workflow applied it.
const (
	outcomeApproved = "approved"
	outcomeRejected = "rejected"
	// outcomeRefused: the approval was refused (personal data in the edits, the cap
	// reached); the proposal stays pending.
	outcomeRefused = "refused"
)

// MaxReason is the longest rejection reason, in code points.
const MaxReason = 200

// Decision is a reviewer's decision on a proposal: Kind is DecisionApprove (with optional
// Edits, members left out keep the proposal's value) or DecisionReject (with an optional
// Reason of at most MaxReason characters, e.g. "duplicate").
type Decision struct {
	Kind   string
	Edits  *notes.Patch
	Reason string
}

// Result is what Decide did. For an approval, Note is the approved note (as it is now) and
// Created is true when this call's decision wrote it (201), false when the proposal was
// approved already, by this decision's twin or a repeated call (200). For a rejection,
// Proposal is the rejected proposal (200). Pending is true instead when the decision was
// handed to the proposal's workflow, which has not applied it yet (202): the proposal is
// still pending.
type Result struct {
	Note     *notes.Note
	Created  bool
	Proposal *Proposal
	Pending  bool
}

// Workflow hands a staged decision to the workflow that owns a distilled proposal and waits
// briefly for it (AM-9): the signal carries ids only, never the edited text.
// workflows.Decisions implements it over the Temporal client.
type Workflow interface {
	// Deliver signals proposal proposalID's workflow with decision (DecisionApprove or
	// DecisionReject), the deciding key's id and the staged decision's id, then waits a
	// bounded time for the workflow to end. It reports false, nil when no workflow runs for
	// the proposal any more (the caller decides directly); an error when the workflow
	// service did not answer. Not knowing the outcome after the wait is not an error.
	Deliver(ctx context.Context, proposalID, decision, byKeyID, decisionID string) (bool, error)
}

// Decide is the one entry point of a reviewer's decision on proposal id (AM-8, AM-9, AM-10),
// whatever proposed it. It checks the role (admin, or reviewer when the space lets
// reviewers approve) and that the proposal exists, then chooses the path: a distilled
// proposal, when a Workflow is wired, is decided by its workflow (the state, edits, cap or
// reason are checked first, the decision stored in proposal_decisions, the workflow
// signalled with its id and awaited briefly); any other proposal, or one whose workflow no
// longer exists, directly. An approval re-runs the gate on the whole content and writes the
// note (keeping the proposal's source, origin and evidence) with its receipt and event in
// one transaction; an edit proposal retires the note it supersedes. A repeated approve
// changes nothing and returns the note. Of concurrent approvals through the workflow only
// the one applied is Created; another gets the note when its edits are the applied ones.
//
// Errors: fault.Forbidden role_required; fault.NotFound proposal_not_found; fault.Invalid
// invalid_member (decision kind, edits, reason); fault.Conflict proposal_not_pending (not
// pending; rejecting twice too), note_cap_reached, note_not_active, proposal_already_decided
// (another approval was applied with other edits); fault.Unprocessable
// personal_data_in_agent_memory (kinds, never values) or instruction_in_agent_memory
// (classes); fault.Unavailable
// detector_unavailable or workflows_unavailable (Retry-After).
func (s *Service) Decide(ctx context.Context, p auth.Principal, id string, d Decision) (Result, error) {
	if err := s.mayDecide(ctx, p); err != nil {
		return Result{}, err
	}
	pr, err := s.load(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return Result{}, err
	}
	if d.Kind != DecisionApprove && d.Kind != DecisionReject {
		return Result{}, noterows.Invalid("decision", "decision must be approve or reject")
	}
	if pr.Origin != notes.OriginDistilled || s.Workflow == nil {
		return s.decideDirectly(ctx, p, id, d)
	}
	st, err := s.stage(ctx, p, id, d)
	if err != nil {
		return Result{}, err
	}
	if st.note != nil {
		return Result{Note: st.note}, nil
	}
	sent, err := s.Workflow.Deliver(ctx, id, d.Kind, p.KeyID, st.decisionID)
	if err != nil {
		fe := fault.New(fault.Unavailable, "workflows_unavailable", "the workflow service did not answer; try again")
		fe.RetryAfter = 5 * time.Second
		return Result{}, fe
	}
	if !sent {
		// The workflow is gone (its history lost, or it ended approving another caller's
		// decision): decide directly.
		res, err := s.decideDirectly(ctx, p, id, d)
		if err != nil || d.Kind == DecisionReject || res.Created {
			return res, err
		}
		return s.staged(ctx, *res.Note, id, st.decisionID)
	}
	decisionID := st.decisionID
	if d.Kind == DecisionReject {
		decisionID = ""
	}
	cur, n, err := s.decided(ctx, p, id, decisionID)
	switch {
	case err != nil:
		return Result{}, err
	case n != nil && d.Kind == DecisionApprove:
		return s.staged(ctx, *n, id, st.decisionID)
	case d.Kind == DecisionReject && cur.Status == StatusRejected:
		return Result{Proposal: &cur}, nil
	case cur.Status == StatusPending:
		return Result{Pending: true}, nil
	default:
		return Result{}, notPending(cur.Status)
	}
}

// decideDirectly applies d to proposal id without a workflow.
func (s *Service) decideDirectly(ctx context.Context, p auth.Principal, id string, d Decision) (Result, error) {
	if d.Kind == DecisionReject {
		pr, err := s.reject(ctx, p, id, d.Reason)
		if err != nil {
			return Result{}, err
		}
		return Result{Proposal: &pr}, nil
	}
	n, created, err := s.approveDirectly(ctx, p, id, d.Edits)
	if err != nil {
		return Result{}, err
	}
	return Result{Note: &n, Created: created}, nil
}

// approveDirectly turns pending proposal id into a note with edits (gated again); it
// returns the note and true when this call wrote it, or the note of an approved proposal and
// false (whatever the edits).
func (s *Service) approveDirectly(ctx context.Context, p auth.Principal, id string, edits *notes.Patch) (notes.Note, bool, error) {
	pr, err := s.load(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return notes.Note{}, false, err
	}
	if pr.Status == StatusApproved {
		n, err := s.Notes.Stored(ctx, pr.SpaceID, pr.NoteID)
		return n, false, err
	}
	if pr.Status != StatusPending {
		return notes.Note{}, false, notPending(pr.Status)
	}
	c, err := s.approvalContent(ctx, pr, edits)
	if err != nil {
		return notes.Note{}, false, err
	}
	out, err := s.approve(ctx, pr, c, p.KeyID, edits != nil, "")
	if err != nil {
		return notes.Note{}, false, err
	}
	return out, true, nil
}

// reject closes pending proposal id without a note, keeping reason (validated and gated).
func (s *Service) reject(ctx context.Context, p auth.Principal, id, reason string) (Proposal, error) {
	if err := s.checkReason(ctx, p.SpaceID, reason); err != nil {
		return Proposal{}, err
	}
	return s.transition(ctx, move{spaceID: p.SpaceID, actorKey: p.KeyID, id: id, action: "proposal.reject",
		from: StatusPending, to: StatusRejected, reason: reason, decided: true})
}

// approvalContent is proposal pr's note and evidence with edits applied, validated and gated
// under the space's features: the first of an approval's two calls into notes
// (notes.Service.CheckApproval; the second is approve's InsertApproved). A hit the space sends
// to review (agent_memory.gate, GATE-2: a name under names "review") does not stop the
// approval: the approver is the person review asks, and sees the note (with the edits they
// wrote). Under "refuse" (also when the setting changed after the proposal was made) it is
// refused as every other hit.
func (s *Service) approvalContent(ctx context.Context, pr models.NoteProposal, edits *notes.Patch) (notes.CheckedApproval, error) {
	return s.Notes.CheckApproval(ctx, pr.SpaceID, proposedOf(pr), evidence(pr), edits, s.now())
}

// approve writes pending proposal pr's note c (checked by approvalContent) in one
// transaction: the admin receipt, the proposal's compare-and-swap to approved, the note
// through notes.Service.InsertApproved (the approval's second and last call into notes: cap
// checked under c.Features; an edit retires its predecessor; tags, search row and event),
// and, when decisionID is set, that decision's outcome.
func (s *Service) approve(ctx context.Context, pr models.NoteProposal, c notes.CheckedApproval, byKey string, edited bool, decisionID string) (notes.Note, error) {
	now := s.now()
	noteID := auth.NewID("note")
	var out notes.Note
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		objs := []string{pr.ID, noteID}
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
			Set("status = ?, note_id = ?, decided_by = ?, decided_at = ?, updated_at = ?, last_error = ''", StatusApproved, noteID, byKey, now, now).
			Where("id = ? AND space_id = ? AND status = ?", pr.ID, pr.SpaceID, StatusPending).Exec(ctx)
		if err != nil {
			return fmt.Errorf("proposals: approve: %w", err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return notPending("decided")
		}
		out, err = s.Notes.InsertApproved(ctx, tx, noteID, pr, c, byKey, now)
		if err != nil {
			return err
		}
		if decisionID != "" {
			return setOutcome(ctx, tx, decisionID, outcomeApproved, nil, now)
		}
		return nil
	})
	if err != nil {
		return notes.Note{}, err
	}
	return out, nil
}

// stagedDecision is stage's answer: decisionID names the stored decision the workflow is to
// apply; note is set instead when an approve found the proposal already approved (its note;
// nothing was stored).
type stagedDecision struct {
	decisionID string
	note       *notes.Note
}

// stage checks and stores decision d on proposal id for its distillation workflow. Only a
// pending proposal is decided (fault.Conflict proposal_not_pending otherwise); an approve of
// an approved proposal returns its note and stores nothing. An approval's edits are
// validated and gated, and the cap checked, before anything is stored, so the reviewer gets
// 400/422/409/503 at once; a rejection's reason is validated and gated too.
func (s *Service) stage(ctx context.Context, p auth.Principal, id string, dec Decision) (stagedDecision, error) {
	pr, err := s.load(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return stagedDecision{}, err
	}
	if dec.Kind == DecisionApprove && pr.Status == StatusApproved {
		n, err := s.Notes.Stored(ctx, pr.SpaceID, pr.NoteID)
		return stagedDecision{note: &n}, err
	}
	if pr.Status != StatusPending {
		return stagedDecision{}, notPending(pr.Status)
	}
	d := models.ProposalDecision{ID: auth.NewID("dec"), SpaceID: p.SpaceID, ProposalID: id, Decision: dec.Kind,
		ByKeyID: p.KeyID, RefusedKinds: "[]"}
	switch dec.Kind {
	case DecisionApprove:
		c, err := s.approvalContent(ctx, pr, dec.Edits)
		if err != nil {
			return stagedDecision{}, err
		}
		if pr.SupersedesNoteID == "" {
			if err := noterows.CheckCap(ctx, s.DB, p.SpaceID, pr.SourceID, c.Features.NotesCap(), s.now()); err != nil {
				return stagedDecision{}, err
			}
		}
		if dec.Edits != nil {
			b, err := json.Marshal(dec.Edits)
			if err != nil {
				return stagedDecision{}, fmt.Errorf("proposals: encode edits: %w", err)
			}
			d.Patch = string(b)
		}
	default:
		if err := s.checkReason(ctx, p.SpaceID, dec.Reason); err != nil {
			return stagedDecision{}, err
		}
		d.Reason = dec.Reason
	}
	d.CreatedAt, d.UpdatedAt = s.now(), s.now()
	if _, err := s.DB.NewInsert().Model(&d).Exec(ctx); err != nil {
		return stagedDecision{}, fmt.Errorf("proposals: store decision: %w", err)
	}
	return stagedDecision{decisionID: d.ID}, nil
}

// checkReason validates and gates a rejection's reason.
func (s *Service) checkReason(ctx context.Context, spaceID, reason string) error {
	if len([]rune(reason)) > MaxReason {
		return noterows.Invalid("reason", "reason is at most %d characters", MaxReason)
	}
	if reason == "" {
		return nil
	}
	return s.Notes.Check(ctx, spaceID, reason)
}

func (s *Service) loadDecision(ctx context.Context, proposalID, decisionID string) (models.ProposalDecision, error) {
	var d models.ProposalDecision
	err := s.DB.NewSelect().Model(&d).Where("id = ? AND proposal_id = ?", decisionID, proposalID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return d, fault.New(fault.NotFound, CodeDecisionNotFound, "no staged decision with that id for this proposal")
	}
	if err != nil {
		return d, fmt.Errorf("proposals: load decision: %w", err)
	}
	return d, nil
}

// refusedKinds is what a refusal found: the personal-data kinds, or the instruction
// classes of an instruction refusal (kept in the same column).
func refusedKinds(fe *fault.Error) []string {
	if fe.Code == notes.CodeInstruction {
		cs, _ := fe.Details["classes"].([]string)
		return cs
	}
	kinds, _ := fe.Details["kinds"].([]string)
	return kinds
}

func setOutcome(ctx context.Context, idb bun.IDB, decisionID, outcome string, refusal *fault.Error, now time.Time) error {
	q := idb.NewUpdate().Model((*models.ProposalDecision)(nil)).Set("outcome = ?, updated_at = ?", outcome, now)
	if refusal != nil {
		kinds := refusedKinds(refusal)
		q = q.Set("refused_code = ?, refused_kinds = ?", refusal.Code, noterows.EncodeTags(kinds))
	}
	if _, err := q.Where("id = ?", decisionID).Exec(ctx); err != nil {
		return fmt.Errorf("proposals: decision outcome: %w", err)
	}
	return nil
}

// decided reports the state of proposal id after a staged decision was delivered: the
// proposal, its note once approved, and, when staged decision decisionID was refused, that
// refusal as the error (fault.Unprocessable personal_data_in_agent_memory with its kinds, or
// fault.Conflict with the refusal's code).
func (s *Service) decided(ctx context.Context, p auth.Principal, id, decisionID string) (Proposal, *notes.Note, error) {
	pr, err := s.load(ctx, s.DB, p.SpaceID, id)
	if err != nil {
		return Proposal{}, nil, err
	}
	if pr.Status == StatusApproved {
		n, err := s.Notes.Stored(ctx, pr.SpaceID, pr.NoteID)
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
		if d.Outcome == outcomeRefused {
			if d.RefusedCode == notes.CodePersonalData {
				return Proposal{}, nil, notes.Refused(noterows.DecodeTags(d.RefusedKinds))
			}
			if d.RefusedCode == notes.CodeInstruction {
				return Proposal{}, nil, notes.InstructionRefused(noterows.DecodeTags(d.RefusedKinds))
			}
			return Proposal{}, nil, fault.New(fault.Conflict, d.RefusedCode, "the approval was refused (%s); the proposal stays pending", d.RefusedCode)
		}
	}
	return toProposal(pr), nil, nil
}

// staged answers an approval whose staged decision decisionID found proposal id approved
// with note n: Created when its decision was the one applied; not Created when another was
// applied with the same edits; fault.Conflict proposal_already_decided when another was
// applied with other edits (this caller's edits were not applied).
func (s *Service) staged(ctx context.Context, n notes.Note, id, decisionID string) (Result, error) {
	d, err := s.loadDecision(ctx, id, decisionID)
	if err != nil {
		return Result{}, err
	}
	if d.Outcome == outcomeApproved {
		return Result{Note: &n, Created: true}, nil
	}
	var won []models.ProposalDecision
	if err := s.DB.NewSelect().Model(&won).Where("proposal_id = ? AND decision = ? AND outcome = ?", id, DecisionApprove, outcomeApproved).
		Limit(1).Scan(ctx); err != nil {
		return Result{}, fmt.Errorf("proposals: applied decision: %w", err)
	}
	applied := ""
	if len(won) > 0 {
		applied = won[0].Patch
	}
	if samePatch(applied, d.Patch) {
		return Result{Note: &n}, nil
	}
	return Result{}, fault.New(fault.Conflict, CodeAlreadyDecided,
		"another approval of this proposal was applied first with other edits; yours were not applied")
}

// samePatch reports whether two stored edits (JSON of a Patch, "" for none) are the same.
func samePatch(a, b string) bool {
	if a == b {
		return true
	}
	var pa, pb notes.Patch
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
