package notes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/models"
)

// The cap (features.agent_memory.max_notes_per_source) counts a source's active, unexpired
// notes. Counting them reads up to the cap's number of index entries, so a write's cost grew
// with the source's notes (issue 16). note_source_counts (migration 20261202320000) keeps per
// space and source the number of its notes whose status is active, changed in the same
// transaction as every change of it: +1 for a new note (countActive), -1 for a retired one
// (Retire, an edit's superseded version), minus the active notes an erasure deletes
// (EraseSource). Expired notes stay active until retired, so the count is at least what the
// cap counts: a write whose count is under the cap is under it, and only a source at the cap
// by its count is counted exactly. Every change is a delta applied under the row's lock, so
// the count stays exact when transactions of several replicas change it at once.

// addActive adds delta to source sourceID's count of active notes in space spaceID inside
// idb, the transaction of the change, and returns the count after it.
func addActive(ctx context.Context, idb bun.IDB, spaceID, sourceID string, delta int64) (int64, error) {
	var n int64
	if err := queryStmt(ctx, idb, `INSERT INTO note_source_counts (space_id, source_id, active) VALUES (?, ?, ?)
ON CONFLICT (space_id, source_id) DO UPDATE SET active = note_source_counts.active + excluded.active RETURNING active`,
		[]any{&n}, spaceID, sourceID, delta); err != nil {
		return 0, fmt.Errorf("notes: active count: %w", err)
	}
	return n, nil
}

// countActive counts a new note of source sourceID (space spaceID) among its active notes
// inside tx, before the note is inserted, and refuses it when the source already has max
// active, unexpired notes at now: fault.Conflict note_cap_reached (the caller rolls the count
// back with the write). The notes are counted only when the count before this one reaches max.
func countActive(ctx context.Context, tx bun.IDB, spaceID, sourceID string, max int, now time.Time) error {
	n, err := addActive(ctx, tx, spaceID, sourceID, 1)
	if err != nil {
		return err
	}
	if n <= int64(max) {
		return nil
	}
	return checkCapExact(ctx, tx, spaceID, sourceID, max, now)
}

// countAndInsertSQL is countActive's count and insertNoteRow's insert of a new note in one
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

// countAndInsert is countActive then insertNoteRow for new note r on PostgreSQL inside tx,
// with one round trip while the source's count stays at most max (issue 16): the count and
// the note in one statement (countAndInsertSQL). A count over max counts the source's notes
// exactly (checkCapExact: fault.Conflict note_cap_reached, the caller rolling the count back
// with the write) and inserts the note when it is under the cap.
func countAndInsert(ctx context.Context, tx bun.IDB, r *models.Note, max int, now time.Time) error {
	var n int64
	var inserted bool
	title, body := storedText(r)
	if err := queryStmt(ctx, tx, countAndInsertSQL, []any{&n, &inserted}, r.SpaceID, r.SourceID,
		r.ID, r.SpaceID, r.LineageID, r.Version, r.SupersedesNoteID, r.SourceID, r.Vendor, r.Kind, title, body,
		r.Tags, r.TagsText, r.Visibility, r.EvidenceKind, r.EvidenceID, r.Origin, r.Status, nullTimeArg(tx, r.ValidUntil),
		r.ContentHash, r.ProposalID, r.ActorKeyID, r.ActorKind, r.AgentVersion,
		timeArg(tx, r.CreatedAt), timeArg(tx, r.UpdatedAt), nullTimeArg(tx, r.RetiredAt), r.Sealed, searchText(r), max); err != nil {
		return fmt.Errorf("notes: count and insert: %w", err)
	}
	if inserted {
		return nil
	}
	if err := checkCapExact(ctx, tx, r.SpaceID, r.SourceID, max, now); err != nil {
		return err
	}
	if err := insertNoteRow(ctx, tx, r); err != nil {
		return fmt.Errorf("notes: insert: %w", err)
	}
	return nil
}

// checkCap refuses a new note when the source already has max active, unexpired notes:
// fault.Conflict note_cap_reached. It reads the source's count of active notes and counts
// them only when that count reaches max.
func checkCap(ctx context.Context, idb bun.IDB, spaceID, sourceID string, max int, now time.Time) error {
	var n int64
	err := idb.NewRaw(`SELECT active FROM note_source_counts WHERE space_id = ? AND source_id = ?`, spaceID, sourceID).Scan(ctx, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("notes: active count: %w", err)
	}
	if n < int64(max) {
		return nil
	}
	return checkCapExact(ctx, idb, spaceID, sourceID, max, now)
}

// checkCapExact counts the source's active, unexpired notes at now, at most max, on the
// partial index of active notes (migration 20261202310000), and refuses a new note when they
// reach max (capReached).
func checkCapExact(ctx context.Context, idb bun.IDB, spaceID, sourceID string, max int, now time.Time) error {
	active := idb.NewSelect().Model((*models.Note)(nil)).ColumnExpr("1").
		Where("space_id = ? AND source_id = ? AND status = ?", spaceID, sourceID, StatusActive).
		Where("(valid_until IS NULL OR valid_until > ?)", now).Limit(int64(max))
	var n int64
	if err := idb.NewSelect().TableExpr("(?) AS active", active).ColumnExpr("count(*)").Scan(ctx, &n); err != nil {
		return fmt.Errorf("notes: cap: %w", err)
	}
	return capReached(n, max)
}

// capReached is fault.Conflict note_cap_reached when n active notes reach the cap max.
func capReached(n int64, max int) error {
	if n >= int64(max) {
		return fault.New(fault.Conflict, CodeCapReached,
			"this agent has reached the space's cap of %d active notes (features.agent_memory.max_notes_per_source); retire one first", max).
			With("max_notes_per_source", max)
	}
	return nil
}
