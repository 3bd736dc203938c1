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

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/models"
)

// TypeNoteCreated is emitted for every created note and proposal (AM-13).
const TypeNoteCreated = "agent_memory.note_created"

// Event is the JSON every consumer receives. It carries ids, kind and origin, never a note's
// title, body or tags. A change request's events (internal/changes) carry ChangeID, Document
// (the document's name) and Version (the version proposed against, or the one applied),
// never the document's text.
type Event struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	SpaceID    string    `json:"space_id"`
	NoteID     string    `json:"note_id,omitempty"`
	ProposalID string    `json:"proposal_id,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Origin     string    `json:"origin,omitempty"`
	SourceID   string    `json:"source_id,omitempty"`
	ChangeID   string    `json:"change_id,omitempty"`
	Document   string    `json:"document,omitempty"`
	Version    int64     `json:"version,omitempty"`
	OccurredAt time.Time `json:"occurred_at"`
}

// Enqueue writes e to the outbox inside tx (the transaction of the change it announces), at
// the space's next position. It fills ID and OccurredAt when empty and returns the stored
// event. Callers that also append a receipt append it first (one lock order per space).
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
	// The space's next position, taken under the space's head row (created at 1 the first
	// time, in the same statement): it is held until the transaction ends, so positions
	// follow commit order and never skip (MS-1: a cursor says nothing of other spaces).
	next := tx.NewInsert().Model(&head{SpaceID: e.SpaceID, Position: 1}).
		On("CONFLICT (space_id) DO UPDATE").Set("position = head.position + 1").Returning("position")
	if !db.IsSQLite(tx) {
		// PostgreSQL: the position and the event in one round trip.
		if _, err := tx.NewRaw(`WITH next AS (?) INSERT INTO outbox (id, space_id, position, type, payload, created_at, attempts, last_error)
SELECT ?, ?, next.position, ?, ?, ?, 0, '' FROM next`,
			next, e.ID, e.SpaceID, e.Type, string(payload), e.OccurredAt).Exec(ctx); err != nil {
			return e, fmt.Errorf("events: enqueue: %w", err)
		}
		return e, nil
	}
	var position int64
	if err := next.Scan(ctx, &position); err != nil {
		return e, fmt.Errorf("events: position: %w", err)
	}
	row := &models.OutboxEvent{ID: e.ID, SpaceID: e.SpaceID, Position: position, Type: e.Type, Payload: string(payload), CreatedAt: e.OccurredAt}
	if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
		return e, fmt.Errorf("events: enqueue: %w", err)
	}
	return e, nil
}

// head is a space's last event position.
type head struct {
	bun.BaseModel `bun:"table:event_heads"`

	SpaceID  string `bun:"space_id,pk"`
	Position int64  `bun:"position"`
}
