package receipts_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// Reads of one block name one manifest (issue 32): it is stored once per space, each receipt
// carries its hash and no ids, the chain verifies, and listing resolves every receipt to the
// exact notes delivered. The same manifest in another space is that space's own row.
func TestManifestStoredOnceAndResolved(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
		items := []receipts.ManifestItem{{ID: "note_b", Version: 2}, {ID: "note_a", Version: 1}}
		m := receipts.NewManifest(receipts.ManifestBlock, "support", []string{"billing"}, 800, items)
		require.Len(t, m.Hash, 64)
		require.Equal(t, m.Hash, receipts.NewManifest(receipts.ManifestBlock, "support", []string{"billing"}, 800, items).Hash, "content-addressed: same content, same hash")
		require.NotEqual(t, m.Hash, receipts.NewManifest(receipts.ManifestBlock, "support", []string{"billing"}, 900, items).Hash, "the budget is part of it")

		l := receipts.NewLog(d, nil, time.Hour)
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := l.Record(ctx, "sp_a", receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read", ActorKey: "key_1",
					Manifest: m, Detail: map[string]any{"tokens": 10}}, at)
				require.NoError(t, err)
			}()
		}
		wg.Wait()
		require.NoError(t, receipts.Record(ctx, nil, d, "sp_b", receipts.Entry{Kind: receipts.KindAgentMemory, Action: "block.read",
			ActorKey: "key_2", Manifest: m}, at))

		n, err := d.NewSelect().Table("receipt_manifests").Where("space_id = ?", "sp_a").Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "twenty reads of one block, one manifest")
		n, err = d.NewSelect().Table("receipt_manifests").Where("space_id = ?", "sp_b").Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)

		list, err := receipts.List(ctx, d, "sp_a", 0, 100)
		require.NoError(t, err)
		require.Len(t, list, 20)
		for _, r := range list {
			require.Empty(t, r.ObjectIDs, "the receipt carries the manifest's hash, not the ids")
			require.Equal(t, m.Hash, r.Detail["manifest"])
			require.NotNil(t, r.Manifest)
			require.Equal(t, []string{"note_b", "note_a"}, r.Manifest.IDs(), "resolved to the notes delivered, in block order")
			require.Equal(t, items, r.Manifest.Items)
			require.Equal(t, "support", r.Manifest.View)
			require.Equal(t, 800, r.Manifest.Budget)
		}
		v, err := receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.True(t, v.OK, "%+v", v)

		hashes, err := receipts.ManifestsNaming(ctx, d, "sp_a", []string{"note_a"})
		require.NoError(t, err)
		require.Equal(t, []string{m.Hash}, hashes)
		hashes, err = receipts.ManifestsNaming(ctx, d, "sp_a", []string{"note_c"})
		require.NoError(t, err)
		require.Empty(t, hashes)

		// A stored manifest changed after the fact no longer gives its hash: Manifests refuses
		// it, the listing shows it as stored, and Verify and a Walker over the listing fail.
		_, err = d.ExecContext(ctx, "UPDATE receipt_manifests SET body = REPLACE(body, 'note_a', 'note_x') WHERE space_id = ?", "sp_a")
		require.NoError(t, err)
		_, err = receipts.Manifests(ctx, d, "sp_a", []string{m.Hash})
		require.ErrorContains(t, err, "does not give its hash")
		list, err = receipts.List(ctx, d, "sp_a", 0, 100)
		require.NoError(t, err)
		require.Equal(t, "note_x", list[0].Manifest.Items[1].ID)
		v, err = receipts.Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.False(t, v.OK)
		require.Equal(t, receipts.ReasonManifestMismatch, v.Reason)
		require.Equal(t, list[0].ID, v.Broken.ID)
		batches, err := receipts.BatchesOf(ctx, d, "sp_a", list)
		require.NoError(t, err)
		w := &receipts.Walker{RequireManifests: true}
		require.False(t, walkAll(w, batches, list), "the offline walk over the listing catches it too")
		require.Equal(t, receipts.ReasonManifestMismatch, w.Result(0, "", false).Reason)

		// A manifest removed: the receipts naming it no longer resolve, and Verify says so.
		_, err = d.ExecContext(ctx, "DELETE FROM receipt_manifests WHERE space_id = ?", "sp_b")
		require.NoError(t, err)
		v, err = receipts.Verify(ctx, d, "sp_b")
		require.NoError(t, err)
		require.Equal(t, receipts.ReasonManifestMismatch, v.Reason)
		v, err = receipts.Verify(ctx, d, "sp_c")
		require.NoError(t, err)
		require.True(t, v.OK, "a space without receipts verifies")
	})
}

// walkAll walks batches with the listed receipts they hold, reporting whether all held.
func walkAll(w *receipts.Walker, batches []receipts.Batch, list []receipts.Receipt) bool {
	for _, b := range batches {
		var mine []receipts.Receipt
		for _, r := range list {
			if r.Seq >= b.FirstSeq && r.Seq <= b.Seq {
				mine = append(mine, r)
			}
		}
		if !w.Next(b, mine) {
			return false
		}
	}
	return true
}
