package models

import (
	"time"

	"github.com/uptrace/bun"
)

// WebhookDelivery is the delivery state of one event to its space's webhook (AM-13). State is
// "pending" (waiting for NextAttemptAt), "delivered", "failed" (attempts exhausted) or
// "cancelled" (the space removed its webhook URL before delivery). Payload is the event JSON
// (ids only, never note text); Seq is the event's outbox sequence.
type WebhookDelivery struct {
	bun.BaseModel `bun:"table:webhook_deliveries"`

	EventID       string     `bun:"event_id,pk"`
	Seq           int64      `bun:"seq"`
	SpaceID       string     `bun:"space_id"`
	Payload       string     `bun:"payload"`
	State         string     `bun:"state"`
	Attempts      int        `bun:"attempts"`
	LastStatus    int        `bun:"last_status"`
	LastError     string     `bun:"last_error"`
	NextAttemptAt time.Time  `bun:"next_attempt_at"`
	DeliveredAt   *time.Time `bun:"delivered_at"`
	CreatedAt     time.Time  `bun:"created_at"`
	UpdatedAt     time.Time  `bun:"updated_at"`
}

// RelayLease names which relay holds a job (e.g. "kafka", "webhook") until ExpiresAt; used on
// SQLite, where row locks do not exist.
type RelayLease struct {
	bun.BaseModel `bun:"table:relay_leases"`

	Name      string    `bun:"name,pk"`
	Holder    string    `bun:"holder"`
	ExpiresAt time.Time `bun:"expires_at"`
}
