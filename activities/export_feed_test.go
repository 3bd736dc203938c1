package activities_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"gocloud.dev/blob/fileblob"

	"github.com/agentmemory/agentmemory/activities"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// TestDeliverSinkDirectoryAndRemoval: a directory sink configured in features receives the
// feed under Dir/space/name with a verifying manifest, its state is recorded, a kafka sink
// without brokers records "kafka not configured" and fails, and a sink taken out of features
// reads as removed.
func TestDeliverSinkDirectoryAndRemoval(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		now := time.Now().UTC()
		_, err := d.NewInsert().Model(&models.Space{ID: "spc_a", Name: "a", CreatedAt: now}).Exec(ctx)
		require.NoError(t, err)
		features := `{"export": {"sinks": [{"name": "lake", "kind": "directory"}, {"name": "stream", "kind": "kafka"}]}}`
		_, err = d.NewInsert().Model(&models.Document{SpaceID: "spc_a", Name: "features", Body: features, Version: 1, UpdatedAt: now}).Exec(ctx)
		require.NoError(t, err)
		for _, id := range []string{"kb_1", "kb_2", "kb_3"} {
			_, err := d.NewInsert().Model(&models.KnowledgeBase{ID: id, SpaceID: "spc_a", Name: id, Settings: "{}", CreatedAt: now}).Exec(ctx)
			require.NoError(t, err)
		}
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		signer, err := signing.NewSigner(priv, time.Time{})
		require.NoError(t, err)
		a := &activities.FeedActivities{DB: d, Docs: spaces.Documents{DB: d}, Dir: t.TempDir(), Signer: signer, Batch: 2}

		refs, err := a.ConfiguredSinks(ctx)
		require.NoError(t, err)
		require.Equal(t, []activities.SinkRef{{SpaceID: "spc_a", Sink: "lake"}, {SpaceID: "spc_a", Sink: "stream"}}, refs)

		total := 0
		for {
			res, err := a.DeliverSink(ctx, activities.SinkRef{SpaceID: "spc_a", Sink: "lake"})
			require.NoError(t, err)
			if res.Delivered == 0 {
				break
			}
			total += res.Delivered
		}
		want, err := feed.Read(ctx, d, nil, "spc_a", feed.Query{Limit: 100})
		require.NoError(t, err)
		require.Equal(t, len(want), total)
		b, err := fileblob.OpenBucket(filepath.Join(a.Dir, "spc_a", "lake"), nil)
		require.NoError(t, err)
		defer func() { _ = b.Close() }() // read only
		m, err := feed.ReadManifest(ctx, b, signer.Keys())
		require.NoError(t, err)
		recs, err := feed.VerifyParts(ctx, b, m)
		require.NoError(t, err)
		require.Len(t, recs, len(want))

		_, err = a.DeliverSink(ctx, activities.SinkRef{SpaceID: "spc_a", Sink: "stream"})
		require.Error(t, err)
		states, err := feed.Sinks(ctx, d, "spc_a")
		require.NoError(t, err)
		require.Len(t, states, 2)
		require.Equal(t, [3]any{"lake", m.Cursor, ""}, [3]any{states[0].Name, states[0].Cursor, states[0].LastError})
		require.Equal(t, [3]any{"stream", int64(0), "kafka not configured on this server"}, [3]any{states[1].Name, states[1].Cursor, states[1].LastError})

		_, err = d.NewUpdate().Model((*models.Document)(nil)).Set("body = '{}'").Where("space_id = 'spc_a' AND name = 'features'").Exec(ctx)
		require.NoError(t, err)
		res, err := a.DeliverSink(ctx, activities.SinkRef{SpaceID: "spc_a", Sink: "lake"})
		require.NoError(t, err)
		require.True(t, res.Removed)
	})
}
