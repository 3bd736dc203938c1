package receipts_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// Issue 16: two processes' group committers (two pools, one database) record reads over six
// spaces, each read expecting the space's notes revision it saw, while writers of both pools
// append a receipt and bump that revision in one transaction (as note writes do: the head
// first). A Record answered nil is in its space's chain after exactly as many writes as the
// revision it expected (its answer was still current when it committed); one answered
// ErrStale is stored nowhere; every chain verifies with nothing unsealed.
func TestRecordsExpectingRevisionsRaceWrites(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			a, b := twoPools(t, engine)
			pools := []*bun.DB{a, b}
			logs := []*receipts.Log{receipts.NewLog(a, nil, 0), receipts.NewLog(b, nil, 0)}
			const nSpaces, readers, reads, writers, writes = 6, 8, 30, 4, 15
			space := func(i int) string { return fmt.Sprintf("sp_%d", i%nSpaces) }
			type answered struct {
				id, space string
				expected  int64
			}
			var mu sync.Mutex
			var kept []answered
			var staleIDs []string
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					ctx := context.Background()
					for i := range writes {
						s := space(w + i)
						require.NoError(t, pools[w%2].RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
							if _, err := receipts.Append(ctx, tx, s, receipts.Entry{Kind: receipts.KindAdmin, Action: "note.create", ActorKey: "key_w"}, t0); err != nil {
								return err
							}
							return spaces.BumpRevision(ctx, tx, s, spaces.RevisionNotes)
						}))
					}
				})
			}
			for r := range readers {
				wg.Go(func() {
					ctx := context.Background()
					d, l := pools[r%2], logs[r%2]
					for i := range reads {
						s := space(r + i)
						rev, err := spaces.Revision(ctx, d, s, spaces.RevisionNotes)
						require.NoError(t, err)
						got, err := l.Record(ctx, s, receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read", ActorKey: "key_r",
							ObjectIDs: []string{fmt.Sprint(r, "-", i)}}, t0, receipts.Expect{Name: spaces.RevisionNotes, Revision: rev})
						mu.Lock()
						switch {
						case errors.Is(err, receipts.ErrStale):
							staleIDs = append(staleIDs, fmt.Sprint(r, "-", i))
						default:
							require.NoError(t, err)
							require.Positive(t, got.Seq)
							kept = append(kept, answered{id: got.ID, space: s, expected: rev})
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()

			ctx := context.Background()
			for i := range nSpaces {
				v, err := receipts.Verify(ctx, b, space(i))
				require.NoError(t, err)
				require.True(t, v.OK, "%s %+v", space(i), v)
				require.Zero(t, v.Unsealed)
			}
			for _, k := range kept {
				var seq int64
				require.NoError(t, a.NewSelect().Model((*models.Receipt)(nil)).Column("seq").Where("id = ?", k.id).Scan(ctx, &seq))
				before, err := a.NewSelect().Model((*models.Receipt)(nil)).
					Where("space_id = ? AND action = ? AND seq < ?", k.space, "note.create", seq).Count(ctx)
				require.NoError(t, err)
				require.EqualValues(t, k.expected, before, "a read answered at notes revision %d follows that many writes in the chain", k.expected)
			}
			for _, obj := range staleIDs {
				n, err := a.NewSelect().Model((*models.Receipt)(nil)).Where("object_ids LIKE ?", `%"`+obj+`"%`).Count(ctx)
				require.NoError(t, err)
				require.Zero(t, n, "a stale read's receipt is not stored")
			}
			require.Len(t, kept, readers*reads-len(staleIDs))
			t.Logf("%d reads kept, %d stale", len(kept), len(staleIDs))
		})
	}
}
