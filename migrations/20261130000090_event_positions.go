package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Event positions (AM-13, MS-1): each space numbers its own events 1, 2, 3... in commit
// order, so GET /v1/events pages by a cursor that reveals nothing of other spaces and never
// skips an event that commits late. Existing rows are numbered in their outbox order.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
ALTER TABLE outbox ADD COLUMN position BIGINT NOT NULL DEFAULT 0;
UPDATE outbox SET position = (SELECT COUNT(*) FROM outbox o2 WHERE o2.space_id = outbox.space_id AND o2.seq <= outbox.seq);
CREATE INDEX outbox_space_position ON outbox (space_id, position);
CREATE TABLE event_heads (
	space_id TEXT PRIMARY KEY,
	position BIGINT NOT NULL
);
INSERT INTO event_heads (space_id, position) SELECT space_id, MAX(position) FROM outbox GROUP BY space_id
`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
DROP TABLE event_heads;
DROP INDEX outbox_space_position;
ALTER TABLE outbox DROP COLUMN position
`)
	})
}
