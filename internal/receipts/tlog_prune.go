package receipts

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// PruneEvery is the least time between two prunings of the log's checkpoints by Log.Run.
const PruneEvery = time.Minute

// PruneCheckpoints deletes the log's checkpoints signed more than keep before now, except
// the latest (the one inclusion proofs are given in), which is always kept; keep <= 0 deletes
// nothing (AGENTMEMORY_RECEIPT_CHECKPOINT_RETENTION, issue 32). It returns how many it
// deleted. The tree's leaves and stored hashes are never pruned: every receipt's inclusion
// proof in the latest checkpoint and every consistency proof stay available.
func PruneCheckpoints(ctx context.Context, idb bun.IDB, keep time.Duration, now time.Time) (int64, error) {
	if keep <= 0 {
		return 0, nil
	}
	res, err := idb.NewDelete().TableExpr("receipt_checkpoints").
		Where("at < ?", now.Add(-keep).UTC()).
		Where("size < (SELECT MAX(size) FROM receipt_checkpoints)").
		Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("receipts: prune checkpoints: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("receipts: prune checkpoints: %w", err)
	}
	return n, nil
}

// SetCheckpointRetention sets how long Run keeps the log's checkpoints (PruneCheckpoints,
// at most once per PruneEvery); <= 0 (the default) keeps every one. Call it before Run.
func (l *Log) SetCheckpointRetention(keep time.Duration) {
	l.keepCheckpoints = keep
}

// pruneDue prunes the log's checkpoints when a retention is set and PruneEvery passed since
// last; it returns the time of this pruning, or last when none was due.
func (l *Log) pruneDue(ctx context.Context, last, now time.Time) time.Time {
	if l.keepCheckpoints <= 0 || now.Sub(last) < PruneEvery {
		return last
	}
	if _, err := PruneCheckpoints(ctx, l.db, l.keepCheckpoints, now); err != nil && ctx.Err() == nil {
		l.logger.Warn("receipts: pruning the receipt log's checkpoints failed; the next pass retries", "error", err)
		return last
	}
	return now
}
