package noterows

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/models"
)

// The note insert. The statements are written with ? placeholders and, inside a bun.Tx (a
// note batch's transaction, an approval's), prepared once per pool and run with their values
// bound (db.Exec, db.Query; issue 16).
//
// The cap (features.agent_memory.max_notes_per_source) counts a source's active, unexpired
// notes. note_source_counts (migration 20261202320000) keeps per space and source the number
// of its notes whose status is active, changed in the same transaction as every change of
// it: +1 for a new note (CountActive), -1 for a retired one, minus the active notes an
// erasure deletes. Expired notes stay active until retired, so the count is at least what the
// cap counts: a write whose count is under the cap is under it, and only a source at the cap
// by its count is counted exactly (CheckCapExact). Every change is a delta applied under the
// row's lock, so the count stays exact when transactions of several replicas change it at once.

// queryOne runs q inside idb (db.Query) and scans its first row into dest; sql.ErrNoRows
// when there is none.
func queryOne(ctx context.Context, idb bun.IDB, q string, dest []any, args ...any) error {
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

// nullTimeArg is timeArg of *t, or NULL for nil.
func nullTimeArg(idb bun.IDB, t *time.Time) any {
	if t == nil {
		return nil
	}
	return timeArg(idb, *t)
}

// StoredText is what the title and body columns of r hold: empty when r is sealed.
func StoredText(r *models.Note) (title, body string) {
	if r.Sealed != nil {
		return "", ""
	}
	return r.Title, r.Body
}

// SearchText is the clear text PostgreSQL's search column is built from (as SQLite's FTS5 row).
func SearchText(r *models.Note) string { return r.Title + " " + r.Body + " " + r.TagsText }

// AddActive adds delta to source sourceID's count of active notes in space spaceID inside
// idb, the transaction of the change, and returns the count after it.
func AddActive(ctx context.Context, idb bun.IDB, spaceID, sourceID string, delta int64) (int64, error) {
	var n int64
	if err := queryOne(ctx, idb, `INSERT INTO note_source_counts (space_id, source_id, active) VALUES (?, ?, ?)
ON CONFLICT (space_id, source_id) DO UPDATE SET active = note_source_counts.active + excluded.active RETURNING active`,
		[]any{&n}, spaceID, sourceID, delta); err != nil {
		return 0, fmt.Errorf("notes: active count: %w", err)
	}
	return n, nil
}

// CountActive counts a new note of source sourceID (space spaceID) among its active notes
// inside tx, before the note is inserted, and refuses it when the source already has max
// active, unexpired notes at now: fault.Conflict note_cap_reached (the caller rolls the count
// back with the write). The notes are counted only when the count before this one reaches max.
func CountActive(ctx context.Context, tx bun.IDB, spaceID, sourceID string, max int, now time.Time) error {
	n, err := AddActive(ctx, tx, spaceID, sourceID, 1)
	if err != nil {
		return err
	}
	if n <= int64(max) {
		return nil
	}
	return CheckCapExact(ctx, tx, spaceID, sourceID, max, now)
}

const insertNoteCols = `INSERT INTO notes (id, space_id, lineage_id, version, supersedes_note_id, source_id, vendor, kind,
title, body, tags, tags_text, visibility, evidence_kind, evidence_id, origin, status, valid_until, content_hash,
proposal_id, actor_key_id, actor_kind, agent_version, created_at, updated_at, retired_at, sealed`

// insertNoteSQL inserts a note on SQLite; insertNotePGSQL on PostgreSQL, also setting the
// search column from the clear text (its last value): it is not generated from the row since
// the title and body are sealed (migration 20261205010000).
const (
	insertNoteSQL = insertNoteCols + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertNotePGSQL = insertNoteCols + `, search)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, to_tsvector('simple', ?))`
)

// InsertNote inserts note row r inside idb: its title and body in clear or, when r.Sealed
// is set, the sealed bytes and empty columns (StoredText). The caller has counted it
// (CountActive) or retired the version it supersedes.
func InsertNote(ctx context.Context, idb bun.IDB, r *models.Note) error {
	title, body := StoredText(r)
	args := []any{r.ID, r.SpaceID, r.LineageID, r.Version, r.SupersedesNoteID, r.SourceID, r.Vendor,
		r.Kind, title, body, r.Tags, r.TagsText, r.Visibility, r.EvidenceKind, r.EvidenceID, r.Origin, r.Status,
		nullTimeArg(idb, r.ValidUntil), r.ContentHash, r.ProposalID, r.ActorKeyID, r.ActorKind, r.AgentVersion,
		timeArg(idb, r.CreatedAt), timeArg(idb, r.UpdatedAt), nullTimeArg(idb, r.RetiredAt), r.Sealed}
	var err error
	if db.IsSQLite(idb) {
		_, err = db.Exec(ctx, idb, insertNoteSQL, args...)
	} else {
		_, err = db.Exec(ctx, idb, insertNotePGSQL, append(args, SearchText(r))...)
	}
	return err
}

// countAndInsertSQL is CountActive's count and InsertNote's insert of a new note in one
// PostgreSQL statement (data-modifying CTEs, all run): the source's count of active notes
// goes up by one and the note is inserted when the count after it is at most the cap (the
// last placeholder); it answers the count and whether the note was inserted. The times and
// the version are cast: in an INSERT ... SELECT a placeholder's type is not the column's.
const countAndInsertSQL = `WITH cnt AS (INSERT INTO note_source_counts (space_id, source_id, active) VALUES (?, ?, 1)
ON CONFLICT (space_id, source_id) DO UPDATE SET active = note_source_counts.active + excluded.active RETURNING active),
ins AS (INSERT INTO notes (id, space_id, lineage_id, version, supersedes_note_id, source_id, vendor, kind,
title, body, tags, tags_text, visibility, evidence_kind, evidence_id, origin, status, valid_until, content_hash,
proposal_id, actor_key_id, actor_kind, agent_version, created_at, updated_at, retired_at, sealed, search)
SELECT ?, ?, ?, CAST(? AS INTEGER), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS TIMESTAMPTZ), ?, ?, ?, ?, ?,
CAST(? AS TIMESTAMPTZ), CAST(? AS TIMESTAMPTZ), CAST(? AS TIMESTAMPTZ), CAST(? AS BYTEA), to_tsvector('simple', CAST(? AS TEXT))
FROM cnt WHERE cnt.active <= ? RETURNING 1)
SELECT cnt.active, EXISTS (SELECT 1 FROM ins) FROM cnt`

// CountAndInsert is CountActive then InsertNote for new note r on PostgreSQL inside tx,
// with one round trip while the source's count stays at most max (issue 16): the count and
// the note in one statement (countAndInsertSQL). A count over max counts the source's notes
// exactly (CheckCapExact: fault.Conflict note_cap_reached, the caller rolling the count back
// with the write) and inserts the note when it is under the cap.
func CountAndInsert(ctx context.Context, tx bun.IDB, r *models.Note, max int, now time.Time) error {
	var n int64
	var inserted bool
	title, body := StoredText(r)
	if err := queryOne(ctx, tx, countAndInsertSQL, []any{&n, &inserted}, r.SpaceID, r.SourceID,
		r.ID, r.SpaceID, r.LineageID, r.Version, r.SupersedesNoteID, r.SourceID, r.Vendor, r.Kind, title, body,
		r.Tags, r.TagsText, r.Visibility, r.EvidenceKind, r.EvidenceID, r.Origin, r.Status, nullTimeArg(tx, r.ValidUntil),
		r.ContentHash, r.ProposalID, r.ActorKeyID, r.ActorKind, r.AgentVersion,
		timeArg(tx, r.CreatedAt), timeArg(tx, r.UpdatedAt), nullTimeArg(tx, r.RetiredAt), r.Sealed, SearchText(r), max); err != nil {
		return fmt.Errorf("notes: count and insert: %w", err)
	}
	if inserted {
		return nil
	}
	if err := CheckCapExact(ctx, tx, r.SpaceID, r.SourceID, max, now); err != nil {
		return err
	}
	if err := InsertNote(ctx, tx, r); err != nil {
		return fmt.Errorf("notes: insert: %w", err)
	}
	return nil
}
