// Package events is the transactional outbox (GOV-4, AM-13): an event is written in the same
// transaction as the change it announces, so it exists if and only if that change committed;
// a relay delivers pending events at least once, each with a stable id for deduplication.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"agentmemory/internal/auth"
	"agentmemory/models"
)

// TypeNoteCreated is emitted for every created note and proposal (AM-13).
const TypeNoteCreated = "agent_memory.note_created"

// Event is the JSON every consumer receives. It carries ids, kind and origin, never a note's
// title, body or tags.
type Event struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	SpaceID    string    `json:"space_id"`
	NoteID     string    `json:"note_id,omitempty"`
	ProposalID string    `json:"proposal_id,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Origin     string    `json:"origin,omitempty"`
	SourceID   string    `json:"source_id,omitempty"`
	OccurredAt time.Time `json:"occurred_at"`
}

// Enqueue writes e to the outbox inside tx (the transaction of the change it announces). It
// fills ID and OccurredAt when empty and returns the stored event.
func Enqueue(ctx context.Context, tx bun.IDB, e Event, now time.Time) (Event, error) {
	if e.ID == "" {
		e.ID = auth.NewID("evt")
	}
	if e.OccurredAt.IsZero() {
		e.OccurredAt = now.UTC().Truncate(time.Microsecond)
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return e, fmt.Errorf("events: encode: %w", err)
	}
	row := &models.OutboxEvent{ID: e.ID, SpaceID: e.SpaceID, Type: e.Type, Payload: string(payload), CreatedAt: e.OccurredAt}
	if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
		return e, fmt.Errorf("events: enqueue: %w", err)
	}
	return e, nil
}
