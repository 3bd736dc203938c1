package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Export sinks (issue 33): each configured sink of a space (features export.sinks) keeps here
// the last feed cursor it acknowledged (for a file sink, a copy of its manifest's; for Kafka,
// the cursor the brokers acknowledged), when it last delivered, and its last error (a short
// generic text, never a record).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `CREATE TABLE export_sinks (
	space_id TEXT NOT NULL,
	name TEXT NOT NULL,
	kind TEXT NOT NULL,
	cursor BIGINT NOT NULL DEFAULT 0,
	last_error TEXT NOT NULL DEFAULT '',
	delivered_at {{ts}},
	updated_at {{ts}} NOT NULL,
	PRIMARY KEY (space_id, name)
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE export_sinks`)
	})
}
