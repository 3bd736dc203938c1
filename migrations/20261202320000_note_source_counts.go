package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Active notes per source (issue 16, note write p99): every new note is checked against the
// space's cap of active, unexpired notes per source (max_notes_per_source), and counting them
// read up to the cap's number of index entries per write, so a write's cost grew with the
// source's notes (64% of the server's CPU at 10,000 notes on SQLite). note_source_counts
// keeps, per space and source, the number of its notes whose status is active, changed in
// the same transaction as every note insert, retirement and erasure (internal/notes). It is
// at least the number the cap counts (expired notes stay active until retired), so a write
// whose source is under the cap by it needs no count. Backfilled from the stored notes.
//
// The duplicate check of every new note (issue 17 §2) looks for an active note of the source
// with the same content hash: with notes_source_active (20261202310000) matching as many of
// its columns as notes_content_hash, SQLite read every active note of the source for it. It
// gets a partial index of active notes matching all four of its equalities instead.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `CREATE TABLE note_source_counts (
	space_id TEXT NOT NULL,
	source_id TEXT NOT NULL,
	active BIGINT NOT NULL,
	PRIMARY KEY (space_id, source_id)
);
INSERT INTO note_source_counts (space_id, source_id, active)
SELECT space_id, source_id, count(*) FROM notes WHERE status = 'active' GROUP BY space_id, source_id;
DROP INDEX notes_content_hash;
CREATE INDEX notes_content_active ON notes (space_id, source_id, content_hash, vendor) WHERE status = 'active'`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP INDEX notes_content_active;
CREATE INDEX notes_content_hash ON notes (space_id, source_id, content_hash);
DROP TABLE note_source_counts`)
	})
}
