package feed

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/models"
)

// ExpiredError is Read's answer to a cursor below the pruned range of a space's feed (issue
// 33, feed retention): the changes after After up to Oldest are gone, so reading on would
// skip them. Oldest is the oldest cursor a reader can resume after (every record past it is
// still there).
type ExpiredError struct {
	After  int64
	Oldest int64
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("feed: cursor %d expired: the oldest available cursor is %d", e.After, e.Oldest)
}

// Oldest returns the oldest cursor of spaceID's feed a reader can read after: the last
// pruned cursor (0 when nothing was pruned).
func Oldest(ctx context.Context, idb bun.IDB, spaceID string) (int64, error) {
	var pruned int64
	err := idb.NewSelect().Model((*models.FeedHead)(nil)).Column("pruned").Where("space_id = ?", spaceID).Scan(ctx, &pruned)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("feed: oldest: %w", err)
	}
	return pruned, nil
}

// checkExpired is *ExpiredError when after is below spaceID's pruned range, else nil. Read
// calls it after its select, so a prune that committed before the select is seen here.
func checkExpired(ctx context.Context, idb bun.IDB, spaceID string, after int64) error {
	oldest, err := Oldest(ctx, idb, spaceID)
	if err != nil {
		return err
	}
	if after < oldest {
		return &ExpiredError{After: after, Oldest: oldest}
	}
	return nil
}

// Prune removes spaceID's numbered change records that are older than before (changed
// before it) and that every sink named in sinks (the space's configured sinks) has
// acknowledged, and returns how many it removed. It never removes a record a configured
// sink has not acknowledged (a sink with no delivery yet holds everything); with no sinks
// the retention window alone decides. What goes is always a prefix of the feed: the
// records up to the cutoff, the smallest of the sinks' cursors and the cursor before the
// first record changed at or after before. The cutoff becomes the feed's Oldest. It runs
// in one transaction under the space's feed_heads row (serialised with Advance).
func Prune(ctx context.Context, d *bun.DB, spaceID string, sinks []string, before time.Time) (int64, error) {
	var removed int64
	err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		head, pruned, ok, err := lockHead(ctx, tx, spaceID)
		if err != nil || !ok {
			return err
		}
		cutoff, err := pruneCutoff(ctx, tx, spaceID, sinks, head, before)
		if err != nil || cutoff <= pruned {
			return err
		}
		res, err := tx.NewDelete().Model((*models.FeedChange)(nil)).
			Where("space_id = ? AND position IS NOT NULL AND position <= ?", spaceID, cutoff).Exec(ctx)
		if err != nil {
			return err
		}
		removed, _ = res.RowsAffected() // both drivers report it; 0 only skews the count
		_, err = tx.NewUpdate().Model((*models.FeedHead)(nil)).Set("pruned = ?", cutoff).Where("space_id = ?", spaceID).Exec(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("feed: prune: %w", err)
	}
	return removed, nil
}

// lockHead takes spaceID's feed_heads row for the transaction (a write, as number's) and
// returns its position and pruned cursor; ok is false when the space has no feed yet.
func lockHead(ctx context.Context, tx bun.Tx, spaceID string) (head, pruned int64, ok bool, err error) {
	rows, err := db.Query(ctx, tx, `UPDATE feed_heads SET position = position WHERE space_id = ? RETURNING position, pruned`, spaceID)
	if err == nil {
		err = db.ScanFirst(rows, &head, &pruned)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("head: %w", err)
	}
	return head, pruned, true, nil
}

// pruneCutoff is the last cursor Prune may remove: at most head, at most every sink's
// acknowledged cursor, and before the first numbered record changed at or after before.
func pruneCutoff(ctx context.Context, tx bun.Tx, spaceID string, sinks []string, head int64, before time.Time) (int64, error) {
	cutoff := head
	for _, name := range sinks {
		c, err := SinkCursor(ctx, tx, spaceID, name)
		if err != nil {
			return 0, err
		}
		cutoff = min(cutoff, c)
	}
	var young sql.NullInt64
	if err := tx.NewSelect().Model((*models.FeedChange)(nil)).ColumnExpr("MIN(position)").
		Where("space_id = ? AND position IS NOT NULL AND changed_us >= ?", spaceID, before.UnixMicro()).
		Scan(ctx, &young); err != nil {
		return 0, fmt.Errorf("young: %w", err)
	}
	if young.Valid {
		cutoff = min(cutoff, young.Int64-1)
	}
	return cutoff, nil
}
