package notes

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
)

// RebuildIndex drops every full-text entry of the notes and rebuilds them from the note rows
// inside idb: the restore procedure's step for notes (issue 29 §1, ER-1: the index is derived
// data, so an entry of a row the restored copy no longer holds drops out). SQLite's notes_fts
// is rebuilt (every version, as written); PostgreSQL's search column is generated from the
// row and needs nothing. It returns how many entries it wrote.
func (s *Service) RebuildIndex(ctx context.Context, idb bun.IDB) (int, error) {
	if !db.IsSQLite(idb) {
		return 0, nil
	}
	if _, err := idb.ExecContext(ctx, "DELETE FROM notes_fts"); err != nil {
		return 0, fmt.Errorf("notes: drop index: %w", err)
	}
	res, err := idb.ExecContext(ctx, "INSERT INTO notes_fts (note_id, title, body, tags) SELECT id, title, body, tags_text FROM notes")
	if err != nil {
		return 0, fmt.Errorf("notes: rebuild index: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("notes: rebuild index: %w", err)
	}
	return int(n), nil
}
