package receipts_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// batchN writes n unsealed receipts to space (as the group committer does), then seals them:
// one chain entry of n receipts.
func batchN(t *testing.T, d *bun.DB, space string, n int, at time.Time) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for i := range n {
			if _, err := receipts.InsertUnsealed(ctx, tx, space, receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read",
				ActorKey: "key_1", ObjectIDs: []string{"note_1"}, Detail: map[string]any{"n": i}}, at.Add(time.Duration(i)*time.Second)); err != nil {
				return err
			}
		}
		return nil
	}))
	_, err := receipts.Seal(ctx, d, space)
	require.NoError(t, err)
}

// Issue 16 acceptance: a receipt changed inside a batch is detected by verify (named, when
// its stored leaf hash no longer matches; by its entry's root when that was recomputed too)
// and by its inclusion proof.
func TestBatchTamperedReceiptDetected(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		batchN(t, d, "sp_a", 7, t0) // one entry of 7 receipts: an odd-sized tree
		v, err := receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.Equal(t, receipts.Verification{OK: true, Count: 7, Batches: 1}, v)

		all, err := receipts.List(ctx, d, "sp_a", 0, 100)
		require.NoError(t, err)
		for _, r := range all {
			p, err := receipts.Prove(ctx, d, "sp_a", r.ID)
			require.NoError(t, err)
			require.NoError(t, p.Verify(), "seq %d", r.Seq)
			require.EqualValues(t, 7, p.Batch.Count)
		}
		honest, err := receipts.Prove(ctx, d, "sp_a", all[2].ID)
		require.NoError(t, err)

		// The detail of receipt 3 changed in the database.
		_, err = d.NewUpdate().Model((*models.Receipt)(nil)).Set("detail = ?", `{"n":70}`).
			Where("space_id = ? AND seq = 3", "sp_a").Exec(ctx)
		require.NoError(t, err)
		v, err = receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.False(t, v.OK)
		require.Equal(t, receipts.ReasonHashMismatch, v.Reason)
		require.EqualValues(t, 3, v.Broken.Seq)
		require.EqualValues(t, 7, v.BrokenBatch.Seq)
		// Its proof, now or as kept from before, no longer verifies with the changed receipt.
		p, err := receipts.Prove(ctx, d, "sp_a", all[2].ID)
		require.NoError(t, err)
		require.Error(t, p.Verify())
		honest.Receipt = p.Receipt
		require.ErrorContains(t, honest.Verify(), "changed")

		// With its stored leaf hash recomputed too, the entry's root gives it away.
		_, err = d.NewUpdate().Model((*models.Receipt)(nil)).Set("hash = ?", p.Receipt.LeafHash()).
			Where("space_id = ? AND seq = 3", "sp_a").Exec(ctx)
		require.NoError(t, err)
		v, err = receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.Equal(t, receipts.ReasonRootMismatch, v.Reason)
		require.EqualValues(t, 7, v.BrokenBatch.Seq)
	})
}

// A receipt deleted from a batch is detected: inside the entry verify names the receipt after
// the gap; the entry's last one, the entry.
func TestBatchDeletedReceiptDetected(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		batchN(t, d, "sp_a", 5, t0)
		batchN(t, d, "sp_b", 5, t0)
		del := func(space string, seq int) {
			_, err := d.NewDelete().Model((*models.Receipt)(nil)).Where("space_id = ? AND seq = ?", space, seq).Exec(ctx)
			require.NoError(t, err)
		}
		del("sp_a", 2)
		v, err := receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.False(t, v.OK)
		require.Equal(t, receipts.ReasonMissingEntry, v.Reason)
		require.EqualValues(t, 3, v.Broken.Seq)

		del("sp_b", 5)
		v, err = receipts.Verify(ctx, d, "sp_b")
		require.NoError(t, err)
		require.Equal(t, receipts.ReasonMissingEntry, v.Reason)
		require.EqualValues(t, 5, v.BrokenBatch.Seq)

		// A whole entry removed, the head moved back: the receipts past it are named.
		batchN(t, d, "sp_c", 3, t0)
		batchN(t, d, "sp_c", 2, t0.Add(time.Hour))
		_, err = d.NewDelete().Model((*models.ReceiptBatch)(nil)).Where("space_id = ? AND seq = 5", "sp_c").Exec(ctx)
		require.NoError(t, err)
		h, err := receipts.ListBatches(ctx, d, "sp_c", 0, 10)
		require.NoError(t, err)
		_, err = d.NewRaw("UPDATE receipt_heads SET seq = 3, hash = ? WHERE space_id = ?", h[0].Hash, "sp_c").Exec(ctx)
		require.NoError(t, err)
		v, err = receipts.Verify(ctx, d, "sp_c")
		require.NoError(t, err)
		require.Equal(t, receipts.ReasonTruncated, v.Reason)
		require.EqualValues(t, 4, v.Broken.Seq)
	})
}

// reopen opens a second, independent pool on a fresh migrated database of the engine and
// returns both pools.
func twoPools(t *testing.T, engine string) (*bun.DB, *bun.DB) {
	u := dbtest.URL(t, engine)
	ctx := context.Background()
	a, err := db.Open(ctx, u, dbtest.Shipped())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close(a) })
	_, err = db.Migrate(ctx, a)
	require.NoError(t, err)
	b, err := db.Open(ctx, u, dbtest.Shipped())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close(b) })
	return a, b
}

// Two processes' worth of writers on one database (two independent pools, each with its
// Log): receipts appended in transactions and recorded through the group committers, from
// many goroutines, with sealers racing. The chain never forks: every receipt is sealed
// exactly once, at one seq of 1..N, the entries follow each other, and verify holds.
func TestConcurrentAppendersNeverFork(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			a, b := twoPools(t, engine)
			logs := []*receipts.Log{receipts.NewLog(a, nil, 0), receipts.NewLog(b, nil, 0)}
			pools := []*bun.DB{a, b}
			const workers, each = 8, 25
			var wg sync.WaitGroup
			ids := make(chan string, workers*each*2)
			for w := range workers {
				wg.Go(func() {
					ctx := context.Background()
					d, l := pools[w%2], logs[w%2]
					for i := range each {
						e := receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read", ActorKey: "key_r", ObjectIDs: []string{fmt.Sprint(w, "-", i)}}
						r, err := l.Record(ctx, "sp_a", e, t0)
						require.NoError(t, err)
						require.NotZero(t, r.Seq, "a recorded receipt is sealed when Record returns")
						ids <- r.ID
						err = d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
							r, err := receipts.Append(ctx, tx, "sp_a", receipts.Entry{Kind: receipts.KindAdmin, Action: "note.create", ActorKey: "key_w"}, t0)
							ids <- r.ID
							return err
						})
						require.NoError(t, err)
						if i%10 == 0 {
							_, err := receipts.Seal(ctx, d, "sp_a")
							require.NoError(t, err)
						}
					}
				})
			}
			wg.Wait()
			close(ids)
			ctx := context.Background()
			_, err := receipts.Seal(ctx, a, "sp_a")
			require.NoError(t, err)
			v, err := receipts.Verify(ctx, b, "sp_a")
			require.NoError(t, err)
			require.True(t, v.OK, "%+v", v)
			require.EqualValues(t, workers*each*2, v.Count)
			require.Zero(t, v.Unsealed)

			var rows []models.Receipt
			require.NoError(t, a.NewSelect().Model(&rows).Column("id", "seq").Where("space_id = ?", "sp_a").Order("seq").Scan(ctx))
			seen := map[string]bool{}
			for i, r := range rows {
				require.EqualValues(t, i+1, r.Seq, "seqs are contiguous, each once")
				seen[r.ID] = true
			}
			for id := range ids {
				require.True(t, seen[id], "receipt %s is in the chain", id)
			}
			require.Len(t, rows, workers*each*2)
		})
	}
}

// AppendSealed puts its receipt alone in its own entry, after the space's earlier unsealed
// receipts, inside the caller's transaction (the erasure certificate's position).
func TestAppendSealedOwnEntry(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for range 3 { // left unsealed, as by a group commit whose sealing failed
				if _, err := receipts.InsertUnsealed(ctx, tx, "sp_a", receipts.Entry{Kind: receipts.KindAdmin, Action: "x"}, t0); err != nil {
					return err
				}
			}
			return nil
		}))
		v, err := receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.Equal(t, receipts.Verification{OK: true, Unsealed: 3}, v, "unsealed receipts are counted, not in the chain")
		var r receipts.Receipt
		var b receipts.Batch
		require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var err error
			r, b, err = receipts.AppendSealed(ctx, tx, "sp_a", receipts.Entry{Kind: receipts.KindCompliance, Action: "erasure.certificate"}, t0)
			return err
		}))
		require.EqualValues(t, 4, r.Seq)
		require.Equal(t, receipts.Batch{SpaceID: "sp_a", Seq: 4, FirstSeq: 4, Count: 1, Version: receipts.VersionMerkle,
			Root: r.Hash, PrevHash: b.PrevHash, Hash: b.Hash, At: t0}, b)
		h, err := receipts.CurrentHead(ctx, d, "sp_a")
		require.NoError(t, err)
		require.Equal(t, b.Hash, h.Hash)
		v, err = receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.Equal(t, receipts.Verification{OK: true, Count: 4, Batches: 2}, v)
	})
}

// More unsealed receipts than one entry holds are sealed into full entries and a last one,
// by one Seal.
func TestSealSplitsAtMaxBatch(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		batchN(t, d, "sp_a", receipts.MaxBatch+3, t0)
		batches, err := receipts.ListBatches(ctx, d, "sp_a", 0, 10)
		require.NoError(t, err)
		require.Len(t, batches, 2)
		require.EqualValues(t, receipts.MaxBatch, batches[0].Count)
		require.EqualValues(t, 3, batches[1].Count)
		v, err := receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.Equal(t, receipts.Verification{OK: true, Count: receipts.MaxBatch + 3, Batches: 2}, v)
		p, err := receipts.Prove(ctx, d, "sp_a", mustID(t, d, "sp_a", 700))
		require.NoError(t, err)
		require.Len(t, p.Path, 10)
		require.NoError(t, p.Verify())
	})
}

// mustID is the id of the space's receipt at seq.
func mustID(t *testing.T, d *bun.DB, space string, seq int64) string {
	t.Helper()
	rs, err := receipts.List(context.Background(), d, space, seq-1, 1)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	return rs[0].ID
}

// Receipts left unsealed (a group whose sealing failed, a process that stopped) are sealed by
// Run's pass, with no request asking (waited for by polling the chain).
func TestRunSealsLeftovers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, space := range []string{"sp_a", "sp_b"} {
				if _, err := receipts.InsertUnsealed(ctx, tx, space, receipts.Entry{Kind: receipts.KindAgentMemory, Action: "search"}, t0); err != nil {
					return err
				}
			}
			return nil
		}))
		l := receipts.NewLog(d, nil, 10*time.Millisecond)
		var wg sync.WaitGroup
		wg.Go(func() { l.Run(ctx) })
		defer wg.Wait()
		defer cancel()
		for _, space := range []string{"sp_a", "sp_b"} {
			require.Eventually(t, func() bool {
				v, err := receipts.Verify(ctx, d, space)
				return err == nil && v.OK && v.Count == 1 && v.Unsealed == 0
			}, 30*time.Second, 10*time.Millisecond, space)
		}
	})
}

// Issue 16: a receipt recorded with expected revisions commits only while the space's
// revisions are those, through the group committer and without one; a stale one stores
// nothing and is ErrStale, and the receipts of the same group that expect nothing or the
// current revisions still commit.
func TestRecordExpectsRevisions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		require.NoError(t, spaces.BumpRevision(ctx, d, "sp_a", spaces.RevisionNotes))
		require.NoError(t, spaces.BumpRevision(ctx, d, "sp_a", spaces.RevisionNotes)) // notes at 2, config at 0 (no row)
		count := func() (n int) {
			require.NoError(t, d.NewSelect().Model((*models.Receipt)(nil)).ColumnExpr("COUNT(*)").Where("space_id = ?", "sp_a").Scan(ctx, &n))
			return n
		}
		e := receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read", ActorKey: "key_1"}
		current := []receipts.Expect{{Name: spaces.RevisionNotes, Revision: 2}, {Name: spaces.RevisionConfig, Revision: 0}}
		stale := []receipts.Expect{{Name: spaces.RevisionNotes, Revision: 1}, {Name: spaces.RevisionConfig, Revision: 0}}
		l := receipts.NewLog(d, nil, 0)
		for _, log := range []*receipts.Log{l, nil} {
			before := count()
			require.NoError(t, receipts.Record(ctx, log, d, "sp_a", e, t0, current...))
			require.ErrorIs(t, receipts.Record(ctx, log, d, "sp_a", e, t0, stale...), receipts.ErrStale)
			require.ErrorIs(t, receipts.Record(ctx, log, d, "sp_a", e, t0, receipts.Expect{Name: spaces.RevisionConfig, Revision: 1}), receipts.ErrStale)
			require.Equal(t, before+1, count(), "only the current receipt is stored")
		}

		// One group: concurrent receipts, half of them stale.
		var wg sync.WaitGroup
		errs := make([]error, 20)
		for i := range errs {
			wg.Go(func() {
				x := current
				if i%2 == 1 {
					x = stale
				}
				_, errs[i] = l.Record(ctx, "sp_a", e, t0, x...)
			})
		}
		wg.Wait()
		for i, err := range errs {
			if i%2 == 1 {
				require.ErrorIs(t, err, receipts.ErrStale)
			} else {
				require.NoError(t, err)
			}
		}
		require.Equal(t, 12, count())
		v, err := receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.True(t, v.OK, "%+v", v)
		require.EqualValues(t, 12, v.Count)
	})
}

// Issue 16: AppendGroup appends its entries, each at its own time and with a receipt of its
// own, as one chain entry after the head (the group commit of note writes); each proves its
// inclusion; no entries append nothing.
func TestAppendGroupOneEntry(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		batchN(t, d, "sp_a", 2, t0)
		var got []receipts.Receipt
		require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			h, err := receipts.LockHead(ctx, tx, "sp_a")
			if err != nil {
				return err
			}
			none, err := receipts.AppendGroup(ctx, tx, h, nil, nil)
			require.Empty(t, none)
			if err != nil {
				return err
			}
			got, err = receipts.AppendGroup(ctx, tx, h,
				[]receipts.Entry{{Kind: receipts.KindAdmin, Action: "note.create"}, {Kind: receipts.KindAdmin, Action: "note.version"}, {Kind: receipts.KindAdmin, Action: "note.create"}},
				[]time.Time{t0.Add(time.Second), t0.Add(2 * time.Second), t0.Add(3 * time.Second)})
			return err
		}))
		require.Len(t, got, 3)
		for i, r := range got {
			require.EqualValues(t, 3+i, r.Seq)
			require.Equal(t, t0.Add(time.Duration(i+1)*time.Second), r.At)
		}
		batches, err := receipts.ListBatches(ctx, d, "sp_a", 0, 10)
		require.NoError(t, err)
		require.Len(t, batches, 2)
		require.Equal(t, receipts.Batch{SpaceID: "sp_a", Seq: 5, FirstSeq: 3, Count: 3, Version: receipts.VersionMerkle,
			Root: batches[1].Root, PrevHash: batches[0].Hash, Hash: batches[1].Hash, At: t0.Add(3 * time.Second)}, batches[1])
		for _, r := range got {
			p, err := receipts.Prove(ctx, d, "sp_a", r.ID)
			require.NoError(t, err)
			require.NoError(t, p.Verify())
		}
		v, err := receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.Equal(t, receipts.Verification{OK: true, Count: 5, Batches: 2}, v)
	})
}

// Issue 16: AppendGroup appends after the head LockHead returned, without reading it again;
// when the head moved in between (an Append in the same transaction), it fails instead of
// forking the chain, and the chain still verifies.
func TestAppendGroupAfterMovedHeadFails(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		batchN(t, d, "sp_a", 2, t0)
		err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			h, err := receipts.LockHead(ctx, tx, "sp_a")
			if err != nil {
				return err
			}
			if _, err := receipts.Append(ctx, tx, "sp_a", receipts.Entry{Kind: receipts.KindAdmin, Action: "note.retire"}, t0.Add(time.Second)); err != nil {
				return err
			}
			_, err = receipts.AppendGroup(ctx, tx, h,
				[]receipts.Entry{{Kind: receipts.KindAdmin, Action: "note.create"}, {Kind: receipts.KindAdmin, Action: "note.create"}},
				[]time.Time{t0.Add(2 * time.Second), t0.Add(3 * time.Second)})
			return err
		})
		require.Error(t, err)
		v, err := receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.Equal(t, receipts.Verification{OK: true, Count: 2, Batches: 1}, v)
	})
}
