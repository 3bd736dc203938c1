package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Events relay and webhooks (AM-13, GOV-4): the outbox learns whether its webhook was
// scheduled, webhook deliveries keep their state per event, and relay leases let several
// relays share a SQLite file (PostgreSQL uses row locks instead).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
ALTER TABLE outbox ADD COLUMN webhook_state TEXT NOT NULL DEFAULT '';
CREATE INDEX outbox_webhook ON outbox (webhook_state, seq);
CREATE INDEX outbox_space ON outbox (space_id, seq);
CREATE TABLE webhook_deliveries (
	event_id TEXT PRIMARY KEY,
	seq BIGINT NOT NULL,
	space_id TEXT NOT NULL,
	payload {{json}} NOT NULL,
	state TEXT NOT NULL,
	attempts INTEGER NOT NULL DEFAULT 0,
	last_status INTEGER NOT NULL DEFAULT 0,
	last_error TEXT NOT NULL DEFAULT '',
	next_attempt_at {{ts}} NOT NULL,
	delivered_at {{ts}},
	created_at {{ts}} NOT NULL,
	updated_at {{ts}} NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
CREATE TABLE relay_leases (
	name TEXT PRIMARY KEY,
	holder TEXT NOT NULL,
	expires_at {{ts}} NOT NULL
)
`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
DROP TABLE relay_leases;
DROP TABLE webhook_deliveries;
DROP INDEX outbox_space;
DROP INDEX outbox_webhook;
ALTER TABLE outbox DROP COLUMN webhook_state
`)
	})
}
