package compliance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// A data subject's export lists the receipts that touched their notes, block reads included,
// though a read names its notes through a manifest (issue 32), not in its object ids.
func TestTouchedReceiptsFollowManifests(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
		hers := receipts.NewManifest(receipts.ManifestBlock, "", nil, 800, []receipts.ManifestItem{{ID: "note_other", Version: 1}, {ID: "note_hers", Version: 3}})
		others := receipts.NewManifest(receipts.ManifestBlock, "", nil, 800, []receipts.ManifestItem{{ID: "note_other", Version: 1}})
		for _, e := range []receipts.Entry{
			{Kind: receipts.KindAdmin, Action: "note.create", ObjectIDs: []string{"note_hers"}},
			{Kind: receipts.KindAgentMemory, Action: "block.read", Manifest: hers},
			{Kind: receipts.KindAgentMemory, Action: "block.read", Manifest: others},
			{Kind: receipts.KindAgentMemory, Action: "block.read", Manifest: hers},
		} {
			require.NoError(t, receipts.Record(ctx, nil, d, "sp_a", e, at))
		}
		got, err := touchedReceipts(ctx, d, "sp_a", []string{"note_hers"})
		require.NoError(t, err)
		var actions []string
		for _, r := range got {
			actions = append(actions, r.Action)
			if r.Manifest != nil {
				require.Equal(t, hers.Hash, r.Manifest.Hash)
			}
		}
		require.Equal(t, []string{"note.create", "block.read", "block.read"}, actions, "the read of another note's block is not hers")
	})
}
