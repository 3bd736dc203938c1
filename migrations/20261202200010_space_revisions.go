package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Space revisions (issue 16, several replicas): per space and name, a counter bumped in the
// same transaction as the changes it announces ("profiles": every profile creation and every
// subject erasure that deletes profiles; "notes_erased": every agent-note erasure). A replica
// keeps what it caches for a space under the revision it read and drops it when the stored
// revision differs, so a change made through any replica is in force on every replica's next
// request, without messages between replicas (internal/spaces.Revision).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `CREATE TABLE space_revisions (
	space_id TEXT NOT NULL,
	name TEXT NOT NULL,
	revision BIGINT NOT NULL,
	PRIMARY KEY (space_id, name)
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE space_revisions`)
	})
}
