// Package feed is the continuous export feed of a space's tables (issue 33, EXP-1): one
// record per change of an exported row (its table, key, upsert or delete, the row as the API
// would show it, and a cursor strictly increasing per space).
//
// Capture: triggers (migration 20261205050000) insert a feed_changes row in the transaction of
// every insert, update and delete of an exported table, so a record exists if and only if its
// change committed, whichever code path (API, workflow activity, sweep, erasure) wrote it and
// without a lock on the hot paths (a working-state write pays one insert).
//
// Cursor: a committed change gets its position afterwards, from Advance, which numbers the
// space's not yet numbered changes under the space's feed_heads row. Only committed changes
// are visible to it, and every position it gives is past every position given before, so a
// reader paging by position never passes a gap that an in-flight transaction could still fill
// (PostgreSQL's sequence values commit out of order; the positions do not), never sees a
// position twice, on any replica, after any restart. Two changes of one row commit in order
// (the row lock) and their seq follows that order, so per key the records follow commit order.
//
// Content: no row content is copied into the feed's tables. A record's row is read from its
// table when the feed is read, through the owning package's API view; a row gone by then
// (deleted, erased) reads as a delete with its key only, so an erased row's content never
// leaves after its erasure, and sealing or erasing the table's rows needs nothing of the feed.
package feed

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/models"
)

// Operations of a record.
const (
	OpUpsert = "upsert"
	OpDelete = "delete"
)

// Record is one record of the feed: Cursor is its position in the space (1, 2, 3... with no
// gaps), Table the table's feed name (Tables), Key the row's primary key, Op OpUpsert or
// OpDelete, Row the row as exported (nil for a delete: a tombstone carries the key only) and
// ChangedAt the time of the change (UTC, microseconds; milliseconds on SQLite).
type Record struct {
	Cursor    int64           `json:"cursor"`
	Table     string          `json:"table"`
	Key       string          `json:"key"`
	Op        string          `json:"op"`
	Row       json.RawMessage `json:"row,omitempty"`
	ChangedAt time.Time       `json:"changed_at"`
}

// advanceBatch is the most changes one Advance transaction numbers.
const advanceBatch = 1000

// maxAdvanceRounds bounds the batches one Read numbers before reading (a backlog past
// maxAdvanceRounds*advanceBatch is numbered by the following reads).
const maxAdvanceRounds = 20

// Advance numbers the committed changes of spaceID that have no position yet, oldest first,
// at most advanceBatch of them, and returns how many it numbered. It runs in one transaction
// that first takes the space's feed_heads row (so numberings of the space, on any replica,
// run one at a time and each sees what the previous one committed). A space with nothing to
// number is answered by one read, without a write.
func Advance(ctx context.Context, d *bun.DB, spaceID string) (int, error) {
	pending, err := d.NewSelect().Model((*models.FeedChange)(nil)).
		Where("space_id = ? AND position IS NULL", spaceID).Limit(1).Exists(ctx)
	if err != nil {
		return 0, fmt.Errorf("feed: advance: %w", err)
	}
	if !pending {
		return 0, nil
	}
	var n int
	err = d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		n, err = number(ctx, tx, spaceID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("feed: advance: %w", err)
	}
	return n, nil
}

// number is Advance's transaction: lock the head (creating it at 0), find the last seq of the
// batch, give the changes up to it the positions after the head in seq order, move the head.
// The head's statement is a write, so on SQLite the transaction holds the write lock from its
// first statement (no snapshot to upgrade), and on PostgreSQL the rows are read by later
// statements, whose snapshots see what a previous numbering committed.
func number(ctx context.Context, tx bun.Tx, spaceID string) (int, error) {
	rows, err := db.Query(ctx, tx, `INSERT INTO feed_heads (space_id, position) VALUES (?, 0)
ON CONFLICT (space_id) DO UPDATE SET position = feed_heads.position RETURNING position`, spaceID)
	var head int64
	if err == nil {
		err = db.ScanFirst(rows, &head)
	}
	if err != nil {
		return 0, fmt.Errorf("head: %w", err)
	}
	var seqs []int64
	if err := tx.NewSelect().Model((*models.FeedChange)(nil)).Column("seq").
		Where("space_id = ? AND position IS NULL", spaceID).Order("seq ASC").Limit(advanceBatch).
		Scan(ctx, &seqs); err != nil {
		return 0, fmt.Errorf("pending: %w", err)
	}
	if len(seqs) == 0 {
		return 0, nil
	}
	// A change with a seq below the last one that committed since the read above is numbered
	// too (after the head, in seq order): nothing is left behind a position already given.
	var positions []int64
	if err := tx.NewRaw(`UPDATE feed_changes SET position = ? + r.rn FROM
(SELECT seq, ROW_NUMBER() OVER (ORDER BY seq) AS rn FROM feed_changes WHERE space_id = ? AND position IS NULL AND seq <= ?) AS r
WHERE feed_changes.seq = r.seq RETURNING feed_changes.position`, head, spaceID, seqs[len(seqs)-1]).
		Scan(ctx, &positions); err != nil {
		return 0, fmt.Errorf("number: %w", err)
	}
	last := head + int64(len(positions))
	if _, err := tx.NewUpdate().Model((*models.FeedHead)(nil)).Set("position = ?", last).
		Where("space_id = ?", spaceID).Exec(ctx); err != nil {
		return 0, fmt.Errorf("move head: %w", err)
	}
	return len(positions), nil
}

// AdvanceAll numbers every pending change of spaceID, in batches, up to maxAdvanceRounds
// batches.
func AdvanceAll(ctx context.Context, d *bun.DB, spaceID string) error {
	for range maxAdvanceRounds {
		n, err := Advance(ctx, d, spaceID)
		if err != nil {
			return err
		}
		if n < advanceBatch {
			return nil
		}
	}
	return nil
}

// Query selects a page of the feed: records past After (a cursor; 0 from the start), of the
// Tables named (every table when empty), at most Limit.
type Query struct {
	After  int64
	Tables []string
	Limit  int
}

// ErrUnknownTable is returned by Read for a table name that is not in Tables.
var ErrUnknownTable = errors.New("feed: unknown table")

// Read numbers what is pending (AdvanceAll) and returns the page q of spaceID's feed, in
// cursor order, each record with its row as exported now (Tables); an upsert whose row is
// gone, or whose sealed content no longer opens with the key store ks, reads as a delete.
// Errors: ErrUnknownTable (wrapped, with the name); *ExpiredError when q.After is below the
// pruned range (Prune); the database's and the key store's.
func Read(ctx context.Context, d *bun.DB, ks keystore.Store, spaceID string, q Query) ([]Record, error) {
	for _, t := range q.Tables {
		if _, ok := tableByName[t]; !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownTable, t)
		}
	}
	if err := AdvanceAll(ctx, d, spaceID); err != nil {
		return nil, err
	}
	var rows []models.FeedChange
	sel := d.NewSelect().Model(&rows).Where("space_id = ? AND position > ?", spaceID, q.After)
	if len(q.Tables) > 0 {
		sel = sel.Where("tbl IN (?)", bun.In(q.Tables))
	}
	if err := sel.Where("position IS NOT NULL").Order("position ASC").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("feed: read: %w", err)
	}
	if err := checkExpired(ctx, d, spaceID, q.After); err != nil {
		return nil, err
	}
	return render(ctx, d, ks, spaceID, rows)
}

// Head returns spaceID's last assigned cursor (0 before any) and how many committed changes
// wait for a position.
func Head(ctx context.Context, idb bun.IDB, spaceID string) (last, pending int64, err error) {
	if err := idb.NewSelect().Model((*models.FeedHead)(nil)).Column("position").Where("space_id = ?", spaceID).
		Scan(ctx, &last); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, 0, fmt.Errorf("feed: head: %w", err)
	}
	pending, err = idb.NewSelect().Model((*models.FeedChange)(nil)).Where("space_id = ? AND position IS NULL", spaceID).Count(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("feed: head: %w", err)
	}
	return last, pending, nil
}
