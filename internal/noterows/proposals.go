package noterows

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/models"
)

// The values of note_proposals.status (AM-8, AM-9), spelled here once, beside the row,
// because the lowest writer of a proposal row needs one: InsertProposal, which
// internal/notes calls for an agent's write under writes: human_only (a pending proposal)
// and internal/proposals for a distillation (a drafting one). internal/proposals gives them
// their public names (proposals.StatusDrafting, ...); every package above it (activities,
// workflows, api) uses those names and declares none of its own (issue 30 §2).
const (
	ProposalDrafting = "drafting"
	ProposalPending  = "pending"
	ProposalApproved = "approved"
	ProposalRejected = "rejected"
	ProposalFailed   = "failed"
	ProposalExpired  = "expired"
)

// InsertProposal stores new proposal row r inside tx, the transaction of the write that
// makes it (which holds its receipt, its limits and its idempotency record): r's title and
// body are sealed under the proposal's own key first (SealProposal: r then holds the sealed
// bytes and empty text; keys nil or no text: in clear), then the row is inserted with its
// note_created outbox event (AM-13; ids, kind, origin and source only, stamped r.CreatedAt).
// It appends no receipt. Errors are the key store's or wrapped database errors; the caller
// rolls its transaction back on any.
func InsertProposal(ctx context.Context, tx bun.IDB, keys keystore.Store, r *models.NoteProposal) error {
	if err := SealProposal(ctx, keys, r); err != nil {
		return err
	}
	if _, err := tx.NewInsert().Model(r).Exec(ctx); err != nil {
		return fmt.Errorf("notes: insert proposal: %w", err)
	}
	_, err := events.Enqueue(ctx, tx, events.Event{
		Type: events.TypeNoteCreated, SpaceID: r.SpaceID, ProposalID: r.ID, Kind: r.Kind,
		Origin: r.Origin, SourceID: r.SourceID,
	}, r.CreatedAt)
	return err
}
