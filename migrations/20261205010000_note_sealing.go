package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Note sealing (issue 29 §1, ER-1): notes.sealed and note_proposals.sealed hold the title and
// body sealed under the note lineage's (or the proposal's) own key, which a source erasure or
// a note's hard delete destroys, so a backup restored after it no longer opens them. Rows
// stored before stay in clear (sealed NULL) until `agentmemory restore` seals them. On
// PostgreSQL the notes' search column stops being generated from the (now empty) title and
// body: its values are kept and every write sets it from the clear text (derived data that
// the restore procedure rebuilds from what still unseals).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := execDDL(ctx, db, `ALTER TABLE notes ADD COLUMN sealed {{blob}};
ALTER TABLE note_proposals ADD COLUMN sealed {{blob}}`); err != nil {
			return err
		}
		if db.Dialect().Name() == dialect.PG {
			return execDDL(ctx, db, `ALTER TABLE notes ALTER COLUMN search DROP EXPRESSION`)
		}
		return nil
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() == dialect.PG {
			if err := execDDL(ctx, db, `ALTER TABLE notes DROP COLUMN search;
ALTER TABLE notes ADD COLUMN search tsvector GENERATED ALWAYS AS
	(to_tsvector('simple', title || ' ' || body || ' ' || tags_text)) STORED;
CREATE INDEX notes_search ON notes USING GIN (search)`); err != nil {
				return err
			}
		}
		return execDDL(ctx, db, `ALTER TABLE notes DROP COLUMN sealed;
ALTER TABLE note_proposals DROP COLUMN sealed`)
	})
}
