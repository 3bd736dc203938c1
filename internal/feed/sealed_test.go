package feed_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/models"
)

// A sealed note (issue 29 §1) leaves in the feed as the API shows it, opened with the key
// store; once its key is destroyed (a delete or an erasure) its record reads as a delete.
func TestFeedOpensSealedNotesAndDropsThoseWhoseKeyIsGone(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		ks, err := keystore.OpenFile(filepath.Join(t.TempDir(), "keys.json"), make([]byte, 32))
		require.NoError(t, err)
		now := time.Now().UTC()
		_, err = d.NewInsert().Model(&models.Space{ID: "spc_a", Name: "a", CreatedAt: now}).Exec(ctx)
		require.NoError(t, err)
		sealed, err := notes.SealText(ctx, ks, notes.NoteKeyID("note_1"), "note:note_1", "Refunds", "Refund within 30 days")
		require.NoError(t, err)
		_, err = d.NewInsert().Model(&models.Note{ID: "note_1", SpaceID: "spc_a", LineageID: "note_1", Version: 1, Sealed: sealed,
			Tags: "[]", Kind: "policy", Status: "active", CreatedAt: now, UpdatedAt: now}).Exec(ctx)
		require.NoError(t, err)

		recs, err := feed.Read(ctx, d, ks, "spc_a", feed.Query{Tables: []string{"notes"}, Limit: 10})
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, feed.OpUpsert, recs[0].Op)
		var row map[string]any
		require.NoError(t, json.Unmarshal(recs[0].Row, &row))
		require.Equal(t, "Refunds", row["title"])
		require.Equal(t, "Refund within 30 days", row["body"])

		require.NoError(t, ks.Destroy(ctx, notes.NoteKeyID("note_1")))
		recs, err = feed.Read(ctx, d, ks, "spc_a", feed.Query{Tables: []string{"notes"}, Limit: 10})
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, feed.OpDelete, recs[0].Op, "a note whose key is gone is erased: its record is a tombstone")
		require.Nil(t, recs[0].Row)
	})
}
