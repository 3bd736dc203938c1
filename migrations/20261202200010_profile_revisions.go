package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Profile revisions (issue 16, several replicas): one row per space whose profiles changed,
// its revision bumped in the same transaction as every profile creation and every subject
// erasure that deletes profiles. Each replica caches the space's known subjects (the keyed
// hashes the gate and the masking match) under the revision it loaded them at and reloads
// when the stored revision differs, so a profile created or erased through any replica is
// in force on every replica's next request.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `CREATE TABLE profile_revisions (
	space_id TEXT PRIMARY KEY,
	revision BIGINT NOT NULL
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE profile_revisions`)
	})
}
