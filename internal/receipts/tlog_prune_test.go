package receipts_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// checkpointSizes lists the sizes of the log's stored checkpoints, ascending.
func checkpointSizes(t *testing.T, d *bun.DB) []int64 {
	t.Helper()
	var sizes []int64
	require.NoError(t, d.NewRaw("SELECT size FROM receipt_checkpoints ORDER BY size").Scan(context.Background(), &sizes))
	return sizes
}

// Checkpoint retention: checkpoints signed more than the retention ago are pruned, the
// latest always stays (even when it is older than the retention), 0 prunes nothing, and
// after pruning every receipt still proves its inclusion, consistency proofs still verify
// and the log still verifies.
func TestPruneCheckpoints(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		signer, verifiers := logKeys(t)
		at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
		var cps []receipts.Checkpoint
		for i := range 4 { // checkpoints of sizes 2, 4, 6, 8 signed at +0, +10, +20, +30 min
			appendN(t, d, "sp_a", 2, at)
			cps = append(cps, catchUp(t, d, signer, at.Add(time.Duration(i)*10*time.Minute)))
		}
		require.Equal(t, []int64{2, 4, 6, 8}, checkpointSizes(t, d))

		n, err := receipts.PruneCheckpoints(ctx, d, 0, at.Add(time.Hour))
		require.NoError(t, err)
		require.Zero(t, n, "0 keeps every checkpoint")
		n, err = receipts.PruneCheckpoints(ctx, d, 15*time.Minute, at.Add(35*time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 2, n, "those signed before +20 min")
		require.Equal(t, []int64{6, 8}, checkpointSizes(t, d))
		n, err = receipts.PruneCheckpoints(ctx, d, time.Minute, at.Add(24*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.Equal(t, []int64{8}, checkpointSizes(t, d), "the latest stays, however old")

		for _, id := range ids(t, d, "sp_a") {
			p, err := receipts.Prove(ctx, d, "sp_a", id)
			require.NoError(t, err)
			require.NotNil(t, p.Log)
			require.NoError(t, p.VerifyInLog(verifiers))
		}
		c, err := receipts.ProveConsistency(ctx, d, cps[0].Size, 0)
		require.NoError(t, err)
		require.NoError(t, receipts.VerifyConsistency(cps[0], cps[3], c, verifiers), "a client's old checkpoint still proves consistent")
		c, err = receipts.ProveConsistency(ctx, d, 2, 4)
		require.NoError(t, err)
		require.Nil(t, c.Checkpoint, "a pruned size has no stored checkpoint")
		v, err := receipts.VerifyLog(ctx, d, verifiers, &cps[1])
		require.NoError(t, err)
		require.True(t, v.OK, v.Reason)
	})
}
