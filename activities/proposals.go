package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/notes"
)

// storeError keeps retryable what may pass on retry (fault.Unavailable, database errors) and
// makes every other fault final: a non-retryable application error whose type is the
// fault's code (e.g. proposal_not_pending), so the workflow does not retry a refusal it
// cannot fix (a proposal in the wrong state, a note over AM-1's limits).
func storeError(err error) error {
	fe := fault.As(err)
	if err == nil || fe == nil || fe.Kind == fault.Unavailable {
		return err
	}
	return temporal.NewNonRetryableApplicationError(fe.Message, fe.Code, nil)
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

// distillation returns the proposal's space and the kind and id of the conversation or task
// it distils.
func (a *Activities) distillation(ctx context.Context, proposalID string) (string, notes.Evidence, error) {
	space, ev, err := a.Proposals.Distillation(ctx, proposalID)
	return space, ev, storeError(err)
}

// check runs the whole notes gate over a proposed note (notes.Service.CheckContent: the
// personal-data gate's local layer, then its model layer when configured, then the
// instruction detector): the failure reason and what was found (ReasonPersonalData and
// its kinds, or ReasonInstruction and its classes; "" when it passes), or an error when
// the detector did not answer (retry).
func (a *Activities) check(ctx context.Context, spaceID string, n notes.ProposedNote, ev *notes.Evidence) (string, []string, error) {
	err := a.Proposals.Notes.CheckContent(ctx, spaceID, n.Title, n.Body, n.Tags, ev)
	if cs, ok := notes.RefusedClasses(err); ok {
		return ReasonInstruction, cs, nil
	}
	if fe := fault.As(err); fe != nil && fe.Code == notes.CodePersonalData {
		kinds, _ := fe.Details["kinds"].([]string)
		if len(kinds) == 0 {
			kinds = []string{"personal_data"}
		}
		return ReasonPersonalData, kinds, nil
	}
	return "", nil, err
}
