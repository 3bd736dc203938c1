package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/models"
)

// ageChanges moves the change time of spaceID's records up to cursor last back by age.
func ageChanges(t *testing.T, d *bun.DB, spaceID string, last int64, age time.Duration) {
	t.Helper()
	_, err := d.NewUpdate().Model((*models.FeedChange)(nil)).Set("changed_us = changed_us - ?", age.Microseconds()).
		Where("space_id = ? AND position <= ?", spaceID, last).Exec(context.Background())
	require.NoError(t, err)
}

// TestFeedPruneKeepsWhatASinkHasNotAcknowledged: records older than the retention go only
// once every configured sink acknowledged past them: a sink that never delivered holds
// everything, the slowest sink's cursor bounds the cut, and with no sinks the window alone
// decides (records younger than it stay). A reader below the pruned range gets
// *feed.ExpiredError naming the oldest cursor, from which it reads on without a gap.
func TestFeedPruneKeepsWhatASinkHasNotAcknowledged(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		seedRows(t, d, "spc_a") // 13 records
		all := readAll(t, d, "spc_a", 0, 100)
		require.Len(t, all, 13)
		ageChanges(t, d, "spc_a", 10, 48*time.Hour) // 1..10 are two days old, 11..13 new
		before := time.Now().Add(-24 * time.Hour)

		n, err := feed.Prune(ctx, d, "spc_a", []string{"lake", "stream"}, before)
		require.NoError(t, err)
		require.Zero(t, n, "no sink has acknowledged anything: nothing goes")

		now := time.Now()
		require.NoError(t, feed.RecordDelivery(ctx, d, "spc_a", "lake", feed.KindDirectory, 12, true, "", now))
		require.NoError(t, feed.RecordDelivery(ctx, d, "spc_a", "stream", feed.KindKafka, 4, true, "", now))
		n, err = feed.Prune(ctx, d, "spc_a", []string{"lake", "stream"}, before)
		require.NoError(t, err)
		require.EqualValues(t, 4, n, "the slowest sink's cursor bounds the cut")
		oldest, err := feed.Oldest(ctx, d, "spc_a")
		require.NoError(t, err)
		require.EqualValues(t, 4, oldest)

		n, err = feed.Prune(ctx, d, "spc_a", nil, before)
		require.NoError(t, err)
		require.EqualValues(t, 6, n, "no sinks: the window alone; the records younger than it stay")
		oldest, err = feed.Oldest(ctx, d, "spc_a")
		require.NoError(t, err)
		require.EqualValues(t, 10, oldest)

		for _, after := range []int64{0, 9} {
			_, err = feed.Read(ctx, d, nil, "spc_a", feed.Query{After: after, Limit: 100})
			var exp *feed.ExpiredError
			require.ErrorAs(t, err, &exp, "after %d", after)
			require.Equal(t, feed.ExpiredError{After: after, Oldest: 10}, *exp)
		}
		rest := readAll(t, d, "spc_a", oldest, 100)
		require.Equal(t, all[10:], rest, "from the oldest cursor on, nothing is missing")

		more := touchState(t, d)
		got := readAll(t, d, "spc_a", 13, 100)
		require.Len(t, got, more, "new changes go on numbering after the head")
		require.EqualValues(t, 14, got[0].Cursor)
	})
}

// touchState changes one row of spc_a (an upsert) and returns how many records it made.
func touchState(t *testing.T, d *bun.DB) int {
	t.Helper()
	_, err := d.NewUpdate().Model((*models.AgentState)(nil)).Set("version = 2").Where("id = 'st_1'").Exec(context.Background())
	require.NoError(t, err)
	return 1
}
