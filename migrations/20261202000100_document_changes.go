package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Change requests of space documents (issue 15): document_changes holds each proposed
// document, the version and text it was proposed against, and its decision. spaces.direct_put
// is the choice made when a space is created (whether a direct PUT of its documents is allowed
// while the features document does not say): spaces created before this migration keep
// direct PUT, as they had it; spaces created later refuse it unless created with it.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
ALTER TABLE spaces ADD COLUMN direct_put BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE spaces SET direct_put = TRUE;
CREATE TABLE document_changes (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	name TEXT NOT NULL,
	body {{json}} NOT NULL,
	base_body {{json}} NOT NULL,
	base_version BIGINT NOT NULL,
	status TEXT NOT NULL,
	proposed_by TEXT NOT NULL,
	proposer_name TEXT NOT NULL,
	decided_by TEXT,
	reason TEXT,
	applied_version BIGINT,
	created_at {{ts}} NOT NULL,
	decided_at {{ts}}
);
CREATE INDEX document_changes_space_name ON document_changes (space_id, name, status, created_at)
`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
DROP TABLE document_changes;
ALTER TABLE spaces DROP COLUMN direct_put
`)
	})
}
