package receipts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

// Run's pruning: none without a retention; with one, a pruning at most once per PruneEvery.
func TestPruneDue(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
		for i := range 3 {
			_, err := d.NewInsert().Model(&checkpointRow{Size: int64(i + 1), Hash: "h", Note: "n", At: now.Add(time.Duration(i-3) * time.Hour)}).Exec(ctx)
			require.NoError(t, err)
		}
		count := func() int {
			n, err := d.NewSelect().TableExpr("receipt_checkpoints").Count(ctx)
			require.NoError(t, err)
			return int(n)
		}
		l := NewLog(d, nil, 0)
		require.Equal(t, time.Time{}, l.pruneDue(ctx, time.Time{}, now), "no retention: no pruning")
		require.Equal(t, 3, count())
		l.SetCheckpointRetention(150 * time.Minute)
		_, err := d.NewInsert().Model(&checkpointRow{Size: 4, Hash: "h", Note: "n", At: now}).Exec(ctx)
		require.NoError(t, err)
		recent := now.Add(-PruneEvery / 2)
		require.Equal(t, recent, l.pruneDue(ctx, recent, now), "pruned less than PruneEvery ago: not due")
		require.Equal(t, 4, count())
		require.Equal(t, now, l.pruneDue(ctx, now.Add(-PruneEvery), now))
		require.Equal(t, 3, count(), "the one of -3h is gone; -2h, -1h and the latest stay")
	})
}
