package events

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/models"
)

// Item is one outbox event as GET /v1/events shows it: its position in the space (1, 2, 3...
// in commit order: the paging cursor), the event JSON exactly as consumers receive it, and its
// delivery state.
type Item struct {
	Seq       int64           `json:"seq"`
	Event     json.RawMessage `json:"event"`
	Published Published       `json:"published"`
	// Webhook is set when the event was scheduled for the space's webhook.
	Webhook *WebhookStatus `json:"webhook,omitempty"`
}

// Published is an event's state in the relay to Kafka: State "pending" or "sent"; Attempts
// counts publishes tried; LastError is the last failure (no payload, no secrets).
type Published struct {
	State     string     `json:"state"`
	SentAt    *time.Time `json:"sent_at,omitempty"`
	Attempts  int        `json:"attempts"`
	LastError string     `json:"last_error,omitempty"`
}

// WebhookStatus is an event's delivery to its space's webhook: State is "pending",
// "delivered", "failed" or "cancelled"; LastStatus the last HTTP status (0: no answer).
type WebhookStatus struct {
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	LastStatus    int        `json:"last_status,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
}

// List returns up to limit events of the space whose position is past after, in position
// order, with their delivery state. Positions are the space's own (no gaps left by other
// spaces) and are taken in commit order, so a reader paging with the last position it saw
// never misses an event. Pruned events (sent, older than the retention) are gone.
func List(ctx context.Context, idb bun.IDB, spaceID string, after int64, limit int) ([]Item, error) {
	var rows []models.OutboxEvent
	if err := idb.NewSelect().Model(&rows).Where("space_id = ? AND position > ?", spaceID, after).
		Order("position ASC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("events: list: %w", err)
	}
	items := make([]Item, len(rows))
	ids := make([]string, len(rows))
	for i, row := range rows {
		p := Published{State: "pending", Attempts: row.Attempts, LastError: row.LastError}
		if row.SentAt != nil {
			t := row.SentAt.UTC()
			p.State, p.SentAt = "sent", &t
		}
		items[i] = Item{Seq: row.Position, Event: json.RawMessage(row.Payload), Published: p}
		ids[i] = row.ID
	}
	if len(rows) == 0 {
		return items, nil
	}
	var ds []models.WebhookDelivery
	if err := idb.NewSelect().Model(&ds).Where("space_id = ? AND event_id IN (?)", spaceID, bun.In(ids)).
		Scan(ctx); err != nil {
		return nil, fmt.Errorf("events: list deliveries: %w", err)
	}
	byID := map[string]*WebhookStatus{}
	for _, d := range ds {
		w := &WebhookStatus{State: d.State, Attempts: d.Attempts, LastStatus: d.LastStatus, LastError: d.LastError}
		if d.State == DeliveryPending {
			t := d.NextAttemptAt.UTC()
			w.NextAttemptAt = &t
		}
		if d.DeliveredAt != nil {
			t := d.DeliveredAt.UTC()
			w.DeliveredAt = &t
		}
		byID[d.EventID] = w
	}
	for i := range items {
		items[i].Webhook = byID[ids[i]]
	}
	return items, nil
}

// Backlog returns how many outbox rows wait for the relay to Kafka and when the oldest was
// written (zero when none wait).
func Backlog(ctx context.Context, idb bun.IDB) (int64, time.Time, error) {
	n, err := idb.NewSelect().Model((*models.OutboxEvent)(nil)).Where("sent_at IS NULL").Count(ctx)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("events: backlog: %w", err)
	}
	var oldest models.OutboxEvent
	err = idb.NewSelect().Model(&oldest).Column("created_at").Where("sent_at IS NULL").
		Order("seq ASC").Limit(1).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return int64(n), time.Time{}, nil
	case err != nil:
		return 0, time.Time{}, fmt.Errorf("events: backlog: %w", err)
	}
	return int64(n), oldest.CreatedAt.UTC(), nil
}
