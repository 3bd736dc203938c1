package receipts_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/receipts/receiptstest"
	"github.com/agentmemory/agentmemory/models"
)

// appendN appends n receipts to space, one transaction each, then seals them (one entry).
func appendN(t *testing.T, d *bun.DB, space string, n int, at time.Time) {
	t.Helper()
	for i := 0; i < n; i++ {
		err := d.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
			_, err := receipts.Append(ctx, tx, space, receipts.Entry{Kind: receipts.KindAdmin, Action: "test.write", ActorKey: "key_1",
				ObjectIDs: []string{"obj"}, Detail: map[string]any{"n": i}}, at.Add(time.Duration(i)*time.Second))
			return err
		})
		require.NoError(t, err)
	}
	_, err := receipts.Seal(context.Background(), d, space)
	require.NoError(t, err)
}

// rewrite changes the detail of entry seq and recomputes every hash and link from there on,
// moving the head row: what an operator with write access to the database can do.
func rewrite(t *testing.T, d *bun.DB, space string, seq int64) {
	t.Helper()
	require.NoError(t, receiptstest.Rewrite(context.Background(), d, space, seq, map[string]any{"n": 99}))
}

// truncate deletes the entries after seq and moves the head back to seq.
func truncate(t *testing.T, d *bun.DB, space string, seq int64) {
	t.Helper()
	require.NoError(t, receiptstest.Truncate(context.Background(), d, space, seq))
}

// A signed head kept outside the database catches what Verify alone cannot: a chain
// rewritten with recomputed hashes, or truncated back, verifies on its own but not against
// the older head (issue 12 §4).
func TestVerifySinceHead(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

		empty, err := receipts.CurrentHead(ctx, d, "sp_a")
		require.NoError(t, err)
		require.Equal(t, receipts.Head{SpaceID: "sp_a", Seq: 0, Hash: receipts.Genesis}, empty)

		appendN(t, d, "sp_a", 4, at)
		old, err := receipts.CurrentHead(ctx, d, "sp_a")
		require.NoError(t, err)
		require.EqualValues(t, 4, old.Seq)
		require.Equal(t, at.Add(3*time.Second), *old.At)

		// The chain goes on: it extends both the old head and the empty one.
		appendN(t, d, "sp_a", 2, at.Add(time.Minute))
		for _, since := range []*receipts.Head{nil, &old, &empty} {
			v, err := receipts.VerifySince(ctx, d, "sp_a", since)
			require.NoError(t, err)
			require.True(t, v.OK, "since %+v: got %+v, want ok", since, v)
			require.EqualValues(t, 6, v.Count)
		}
		v, err := receipts.VerifySince(ctx, d, "sp_b", &old)
		require.NoError(t, err)
		require.Equal(t, receipts.ReasonHeadOtherSpace, v.Reason)

		// Rewritten at entry 2 with recomputed hashes: consistent alone, not against the head.
		rewrite(t, d, "sp_a", 2)
		v, err = receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.True(t, v.OK, "a consistently rewritten chain verifies alone: got %+v", v)
		v, err = receipts.VerifySince(ctx, d, "sp_a", &old)
		require.NoError(t, err)
		require.False(t, v.OK)
		require.Equal(t, receipts.ReasonHeadRewritten, v.Reason)
		require.EqualValues(t, 4, v.Broken.Seq)

		// Truncated (or rolled back) to before the signed head.
		appendN(t, d, "sp_c", 5, at)
		signed, err := receipts.CurrentHead(ctx, d, "sp_c")
		require.NoError(t, err)
		truncate(t, d, "sp_c", 3)
		v, err = receipts.Verify(ctx, d, "sp_c")
		require.NoError(t, err)
		require.True(t, v.OK, "a truncated chain with its head moved verifies alone: got %+v", v)
		v, err = receipts.VerifySince(ctx, d, "sp_c", &signed)
		require.NoError(t, err)
		require.False(t, v.OK)
		require.Equal(t, receipts.ReasonHeadRolledBack, v.Reason)
	})
}

// The walker keeps Verify's own checks: a changed entry without recomputed hashes fails.
func TestVerifyFindsChangedEntry(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		appendN(t, d, "sp_a", 3, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
		_, err := d.NewUpdate().Model((*models.Receipt)(nil)).Set("detail = ?", `{"n":7}`).
			Where("space_id = ? AND seq = 2", "sp_a").Exec(ctx)
		require.NoError(t, err)
		v, err := receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.False(t, v.OK)
		require.Equal(t, "hash_mismatch", v.Reason)
		require.EqualValues(t, 2, v.Broken.Seq)
	})
}
