package notes

import (
	"context"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
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

// nullTimeArg is timeArg of *t, or NULL for nil.
func nullTimeArg(idb bun.IDB, t *time.Time) any {
	if t == nil {
		return nil
	}
	return timeArg(idb, *t)
}

const insertNoteSQL = `INSERT INTO notes (id, space_id, lineage_id, version, supersedes_note_id, source_id, vendor, kind,
title, body, tags, tags_text, visibility, evidence_kind, evidence_id, origin, status, valid_until, content_hash,
proposal_id, actor_key_id, actor_kind, agent_version, created_at, updated_at, retired_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// insertNoteRow inserts note row r inside idb.
func insertNoteRow(ctx context.Context, idb bun.IDB, r *models.Note) error {
	return execStmt(ctx, idb, insertNoteSQL, r.ID, r.SpaceID, r.LineageID, r.Version, r.SupersedesNoteID, r.SourceID, r.Vendor,
		r.Kind, r.Title, r.Body, r.Tags, r.TagsText, r.Visibility, r.EvidenceKind, r.EvidenceID, r.Origin, r.Status,
		nullTimeArg(idb, r.ValidUntil), r.ContentHash, r.ProposalID, r.ActorKeyID, r.ActorKind, r.AgentVersion,
		timeArg(idb, r.CreatedAt), timeArg(idb, r.UpdatedAt), nullTimeArg(idb, r.RetiredAt))
}

// insertTagRows inserts the tags of note noteID of space spaceID inside idb, in one
// statement (one text per number of tags: at most MaxTags).
func insertTagRows(ctx context.Context, idb bun.IDB, spaceID, noteID string, tags []string) error {
	if len(tags) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString("INSERT INTO note_tags (note_id, tag, space_id) VALUES ")
	args := make([]any, 0, 3*len(tags))
	for i, t := range tags {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?)")
		args = append(args, noteID, t, spaceID)
	}
	return execStmt(ctx, idb, q.String(), args...)
}
