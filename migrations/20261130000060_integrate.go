package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Distillation meets notes (AM-9): a drafting proposal shows why it is still drafting
// (last_error) and, once failed for personal data, the kinds found (never values); a
// reviewer's decision on a distilled proposal is stored here first, so that the signal to
// the waiting workflow carries only its id (Temporal's history holds no note text).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
ALTER TABLE note_proposals ADD COLUMN last_error TEXT NOT NULL DEFAULT '';
ALTER TABLE note_proposals ADD COLUMN kinds {{json}} NOT NULL DEFAULT '[]';
CREATE TABLE proposal_decisions (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	proposal_id TEXT NOT NULL,
	decision TEXT NOT NULL,
	patch {{json}} NOT NULL DEFAULT '',
	reason TEXT NOT NULL DEFAULT '',
	by_key_id TEXT NOT NULL,
	outcome TEXT NOT NULL DEFAULT '',
	refused_code TEXT NOT NULL DEFAULT '',
	refused_kinds {{json}} NOT NULL DEFAULT '[]',
	created_at {{ts}} NOT NULL,
	updated_at {{ts}} NOT NULL
);
CREATE INDEX proposal_decisions_proposal ON proposal_decisions (space_id, proposal_id)
`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
DROP TABLE proposal_decisions;
ALTER TABLE note_proposals DROP COLUMN kinds;
ALTER TABLE note_proposals DROP COLUMN last_error
`)
	})
}
