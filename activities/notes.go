package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/turns"
)

// NotesStore is the notes side of distillation: ProposalStore and Gate over the one notes
// write path (internal/notes.Service: the same gate, receipts and outbox events as every
// other note write). A refusal the workflow cannot fix by retrying (a proposal in the wrong
// state, a note over AM-1's limits) becomes a non-retryable application error whose type is
// "notes:" and the code; a store or detector that does not answer stays retryable.
type NotesStore struct {
	Notes *notes.Service
}

var (
	_ ProposalStore = NotesStore{}
	_ Gate          = NotesStore{}
)

// storeError keeps retryable what may pass on retry (fault.Unavailable, database errors) and
// makes every other fault final.
func storeError(err error) error {
	fe := fault.As(err)
	if err == nil || fe == nil || fe.Kind == fault.Unavailable {
		return err
	}
	return temporal.NewNonRetryableApplicationError(fe.Message, "notes:"+fe.Code, nil)
}

// keep wraps err with msg unless it is a Temporal application error, whose type and
// retryability only survive unwrapped.
func keep(msg string, err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// Distillation returns the proposal's space and its conversation or task.
func (n NotesStore) Distillation(ctx context.Context, proposalID string) (Distillation, error) {
	space, ev, err := n.Notes.Distillation(ctx, proposalID)
	if err != nil {
		return Distillation{}, storeError(err)
	}
	return Distillation{SpaceID: space, Scope: turns.Scope{ConversationID: ev.ConversationID, TaskID: ev.TaskID}}, nil
}

// SetLastError records why the proposal is still drafting.
func (n NotesStore) SetLastError(ctx context.Context, proposalID, code string) error {
	return storeError(n.Notes.SetLastError(ctx, proposalID, code))
}

// MarkPending stores the proposed note and makes the proposal pending.
func (n NotesStore) MarkPending(ctx context.Context, proposalID string, note ProposedNote) error {
	return storeError(n.Notes.MarkPending(ctx, proposalID, notes.DistilledNote{
		Kind: note.Kind, Title: note.Title, Body: note.Body, Tags: note.Tags,
	}))
}

// MarkFailed ends the proposal failed with reason and kinds.
func (n NotesStore) MarkFailed(ctx context.Context, proposalID, reason string, kinds []string) error {
	return storeError(n.Notes.MarkFailed(ctx, proposalID, reason, kinds))
}

// Approve writes the note of an approved proposal (edits of staged decision editsID).
func (n NotesStore) Approve(ctx context.Context, proposalID, editsID, byKeyID string) (ApproveOutcome, error) {
	out, err := n.Notes.ApplyApproval(ctx, proposalID, editsID, byKeyID)
	if err != nil {
		return ApproveOutcome{}, storeError(err)
	}
	return ApproveOutcome{NoteID: out.NoteID, RefusedKinds: out.RefusedKinds, RefusedCode: out.RefusedCode}, nil
}

// Reject ends the proposal rejected (with the reason of staged decision editsID).
func (n NotesStore) Reject(ctx context.Context, proposalID, editsID, byKeyID string) error {
	return storeError(n.Notes.ApplyRejection(ctx, proposalID, editsID, byKeyID))
}

// Expire ends a pending proposal expired.
func (n NotesStore) Expire(ctx context.Context, proposalID string) error {
	return storeError(n.Notes.Expire(ctx, proposalID))
}

// Check runs the notes gate (local layer, then the model layer when configured): the kinds
// of personal data found, or an error when the detector did not answer (retry).
func (n NotesStore) Check(ctx context.Context, spaceID, text string) ([]string, error) {
	err := n.Notes.Check(ctx, spaceID, text)
	if fe := fault.As(err); fe != nil && fe.Code == notes.CodePersonalData {
		kinds, _ := fe.Details["kinds"].([]string)
		if len(kinds) == 0 {
			kinds = []string{"personal_data"}
		}
		return kinds, nil
	}
	return nil, err
}
