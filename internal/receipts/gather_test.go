package receipts_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Issue 16: Records started together are gathered into few groups, and each is still
// answered as its own: on one processor, 32 concurrent Records over two spaces, some stale.
// The first Record starts the drain goroutine, which yields while the others queue theirs
// (without that, on SQLite, the drain mostly commits each receipt alone before the next one
// is queued: a chain entry per receipt). Each stored receipt is answered with its own seq and leaf hash, as
// stored and as its inclusion proof shows; each stale one is ErrStale and stored nowhere;
// the seqs of a space are 1..n; the chains verify.
func TestRecordsGatheredAnswerEachRecord(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		require.NoError(t, spaces.BumpRevision(ctx, d, "sp_a", spaces.RevisionNotes)) // notes at 1
		l := receipts.NewLog(d, nil, 0)
		const n = 32
		space := func(i int) string { return []string{"sp_a", "sp_b"}[i%2] }
		stale := func(i int) bool { return i%8 == 4 } // sp_a only
		got := make([]receipts.Receipt, n)
		errs := make([]error, n)
		procs := runtime.GOMAXPROCS(1)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				var expect []receipts.Expect
				if space(i) == "sp_a" {
					expect = []receipts.Expect{{Name: spaces.RevisionNotes, Revision: 1}}
					if stale(i) {
						expect[0].Revision = 0
					}
				}
				e := receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read", ActorKey: "key_1",
					ObjectIDs: []string{fmt.Sprint("note_", i)}, Detail: map[string]any{"i": i}}
				got[i], errs[i] = l.Record(ctx, space(i), e, t0.Add(time.Duration(i)*time.Millisecond), expect...)
			})
		}
		wg.Wait()
		runtime.GOMAXPROCS(procs)

		seqs := map[string]map[int64]bool{"sp_a": {}, "sp_b": {}}
		for i := range n {
			if stale(i) {
				require.ErrorIs(t, errs[i], receipts.ErrStale, "record %d", i)
				continue
			}
			require.NoError(t, errs[i], "record %d", i)
			r := got[i]
			require.Equal(t, space(i), r.SpaceID)
			require.Equal(t, []string{fmt.Sprint("note_", i)}, r.ObjectIDs, "record %d got another's receipt", i)
			require.False(t, seqs[r.SpaceID][r.Seq], "seq %d of %s answered twice", r.Seq, r.SpaceID)
			seqs[r.SpaceID][r.Seq] = true
			p, err := receipts.Prove(ctx, d, r.SpaceID, r.ID)
			require.NoError(t, err)
			require.NoError(t, p.Verify())
			require.Equal(t, r, p.Receipt, "record %d: answered as stored", i)
			require.Equal(t, r.Hash, p.LeafHash)
		}
		require.Len(t, seqs["sp_a"], n/2-n/8)
		require.Len(t, seqs["sp_b"], n/2)
		var entries int64
		for s, answered := range seqs {
			for seq := range int64(len(answered)) {
				require.True(t, answered[seq+1], "%s: seq %d", s, seq+1)
			}
			stored, err := d.NewSelect().Model((*models.Receipt)(nil)).Where("space_id = ?", s).Count(ctx)
			require.NoError(t, err)
			require.EqualValues(t, len(answered), stored, "%s: a stale receipt is stored nowhere", s)
			v, err := receipts.Verify(ctx, d, s)
			require.NoError(t, err)
			require.True(t, v.OK, "%+v", v)
			require.EqualValues(t, len(answered), v.Count)
			entries += v.Batches
		}
		require.LessOrEqual(t, entries, int64(n/4), "%d chain entries for %d receipts: they were not gathered", entries, n-n/8)
	})
}
