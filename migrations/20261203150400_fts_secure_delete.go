package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Full-text secure delete (issue 29 §3, SQLite only): FTS5 keeps a deleted row's terms in its
// index segments until they are merged, so a note (or chunk) deleted or erased stays readable
// in notes_fts_data (and knowledge_chunks_fts_data) as its words. With the tables' persistent
// secure-delete option on, deleting a row removes its terms from the index at once (SQLite
// 3.42+). PostgreSQL's search columns go with their rows.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return ftsSecureDelete(ctx, db, 1)
	}, func(ctx context.Context, db *bun.DB) error {
		return ftsSecureDelete(ctx, db, 0)
	})
}

// ftsSecureDelete sets the secure-delete option of the FTS5 tables to on (1) or off (0).
func ftsSecureDelete(ctx context.Context, db *bun.DB, on int) error {
	if db.Dialect().Name() != dialect.SQLite {
		return nil
	}
	for _, table := range []string{"notes_fts", "knowledge_chunks_fts"} {
		if _, err := db.ExecContext(ctx, `INSERT INTO `+table+`(`+table+`, rank) VALUES ('secure-delete', ?)`, on); err != nil {
			return err
		}
	}
	return nil
}
