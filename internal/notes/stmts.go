package notes

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/models"
)

// The statements every note write runs are written with ? placeholders and, inside a bun.Tx
// (the batch's transaction, an approval's), prepared once per pool and run with their
// values bound (db.Exec, db.Query): bun interpolates values into the text, so each
// of its statements is new to the database (SQLite compiles it, PostgreSQL parses it; issue
// 16). Elsewhere (a bun.IDB that is not a bun.Tx) they go through bun's formatting.

// execStmt runs q (? placeholders) inside idb (db.Exec).
func execStmt(ctx context.Context, idb bun.IDB, q string, args ...any) error {
	_, err := db.Exec(ctx, idb, q, args...)
	return err
}

// queryStmt runs q (? placeholders) inside idb (db.Query) and scans its first row into dest;
// sql.ErrNoRows when there is none.
func queryStmt(ctx context.Context, idb bun.IDB, q string, dest []any, args ...any) error {
	rows, err := db.Query(ctx, idb, q, args...)
	if err != nil {
		return err
	}
	return db.ScanFirst(rows, dest...)
}

// timeArg is t bound as bun stores it in a timestamp column of idb's database (db.TimeArg).
func timeArg(idb bun.IDB, t time.Time) any {
	return db.TimeArg(idb.NewSelect().DB(), t)
}

// noteRows are the rows of stored notes besides each note's own: their tags, their search
// rows (SQLite's FTS5 table; PostgreSQL's search column is generated from the note's row)
// and their note_created events, in the notes' order. A note batch collects those of its
// stored writes and inserts them at its end, each kind in one statement (issue 16: one
// statement per batch instead of one per write, and on SQLite no FTS5 flush at every later
// statement of the batch); an approval's note stores its own at once (insertNote).
type noteRows struct {
	tags   []any // note_id, tag, space_id of each tag
	ntags  int
	fts    []any // note_id, title, body, tags of each note
	nfts   int
	events []events.Event // each with its OccurredAt
}

// add adds the rows of note r (tags its tags, e its event at now).
func (nr *noteRows) add(r *models.Note, tags []string, e events.Event, now time.Time) {
	for _, t := range tags {
		nr.tags = append(nr.tags, r.ID, t, r.SpaceID)
	}
	nr.ntags += len(tags)
	nr.fts = append(nr.fts, r.ID, r.Title, r.Body, r.TagsText)
	nr.nfts++
	e.OccurredAt = now.UTC().Truncate(time.Microsecond)
	nr.events = append(nr.events, e)
}

// merge adds o's rows after nr's.
func (nr *noteRows) merge(o *noteRows) {
	nr.tags, nr.ntags = append(nr.tags, o.tags...), nr.ntags+o.ntags
	nr.fts, nr.nfts = append(nr.fts, o.fts...), nr.nfts+o.nfts
	nr.events = append(nr.events, o.events...)
}

// store inserts nr's rows inside idb and empties nr: the tags and the search rows each in
// multi-row inserts, the events at the space's next positions (events.EnqueueAll).
func (nr *noteRows) store(ctx context.Context, idb bun.IDB) error {
	if err := insertRows(ctx, idb, "INSERT INTO note_tags (note_id, tag, space_id) VALUES ", "(?, ?, ?)", nr.tags, nr.ntags); err != nil {
		return fmt.Errorf("notes: insert tags: %w", err)
	}
	if db.IsSQLite(idb) {
		if err := insertRows(ctx, idb, "INSERT INTO notes_fts (note_id, title, body, tags) VALUES ", "(?, ?, ?, ?)", nr.fts, nr.nfts); err != nil {
			return fmt.Errorf("notes: index: %w", err)
		}
	}
	if _, err := events.EnqueueAll(ctx, idb, nr.events, time.Time{}); err != nil { // each event has its time
		return err
	}
	*nr = noteRows{}
	return nil
}

// maxRowsPerInsert is the most rows one statement of insertRows holds: a text is prepared per
// pool for each row count (at most this many per table).
const maxRowsPerInsert = 64

// insertRows runs prefix followed by n copies of row (its ? placeholders) inside idb, args
// holding every row's values in order, in statements of at most maxRowsPerInsert rows.
func insertRows(ctx context.Context, idb bun.IDB, prefix, row string, args []any, n int) error {
	if n == 0 {
		return nil
	}
	per := len(args) / n
	for from := 0; from < n; from += maxRowsPerInsert {
		to := min(from+maxRowsPerInsert, n)
		var q strings.Builder
		q.WriteString(prefix)
		for i := from; i < to; i++ {
			if i > from {
				q.WriteString(", ")
			}
			q.WriteString(row)
		}
		if err := execStmt(ctx, idb, q.String(), args[from*per:to*per]...); err != nil {
			return err
		}
	}
	return nil
}
