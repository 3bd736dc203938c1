package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/migrations"
	"github.com/agentmemory/agentmemory/models"
)

// The migration's frozen hash and notes.ContentHash agree, so backfilled rows are found as
// duplicates by new writes.
func TestNoteContentHashV1MatchesNotes(t *testing.T) {
	cases := []struct {
		name                   string
		kind, vis, title, body string
		tags                   []string
	}{
		{name: "plain", kind: "procedure", vis: "source", title: "Refunds", body: "Ask for the order first.", tags: []string{"refund"}},
		{name: "spaces and order", kind: "pitfall", vis: "", title: "  Two\tspaces ", body: "line one\n\n line two ", tags: []string{"b", "a"}},
		{name: "decomposed accent", kind: "tool_note", vis: "space", title: "Cafe\u0301", body: "x", tags: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, notes.ContentHash(c.kind, c.vis, c.title, c.body, c.tags),
				migrations.NoteContentHashV1(c.kind, c.vis, c.title, c.body, c.tags))
		})
	}
}

// The backfill gives active notes stored before migration 20261201000050 the hash
// notes.ContentHash computes, and leaves retired versions alone.
func TestBackfillNoteContentHash(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		spaceID, _, err := spaces.Create(ctx, db, "backfill", now)
		require.NoError(t, err)
		row := func(id, status string) models.Note {
			return models.Note{ID: id, SpaceID: spaceID, LineageID: id, Version: 1, SourceID: "shop-bot", Vendor: "acme",
				Kind: "procedure", Title: " Refunds", Body: "Ask  for the order.", Tags: `["refund","billing"]`, TagsText: "refund billing",
				Visibility: "source", Origin: "agent", Status: status, ActorKind: "agent", CreatedAt: now, UpdatedAt: now}
		}
		for _, r := range []models.Note{row("note_a", "active"), row("note_r", "retired")} {
			_, err := db.NewInsert().Model(&r).Exec(ctx)
			require.NoError(t, err)
		}
		require.NoError(t, migrations.BackfillNoteContentHash(ctx, db))
		var got []models.Note
		require.NoError(t, db.NewSelect().Model(&got).Order("id").Scan(ctx))
		require.Len(t, got, 2)
		require.Equal(t, notes.ContentHash("procedure", "source", "Refunds", "Ask for the order.", []string{"billing", "refund"}), got[0].ContentHash)
		require.Empty(t, got[1].ContentHash, "retired versions are not read")
	})
}

// Bases stored before read grants existed were read by every agent of their space: the
// backfill gives each an explicit "space" grant, leaves a base with grants alone, and a second
// run changes nothing.
func TestBackfillKnowledgeReaders(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		for _, id := range []string{"kb_old", "kb_granted"} {
			_, err := db.NewInsert().Model(&models.KnowledgeBase{ID: id, SpaceID: "sp_1", Name: id, Settings: "{}", CreatedBy: "key_1", CreatedAt: now}).Exec(ctx)
			require.NoError(t, err)
		}
		_, err := db.NewInsert().Model(&models.KnowledgeReader{SpaceID: "sp_1", KBID: "kb_granted", Kind: "agent", Name: "support-bot"}).Exec(ctx)
		require.NoError(t, err)
		for range 2 {
			require.NoError(t, migrations.BackfillKnowledgeReaders(ctx, db))
		}
		var got []models.KnowledgeReader
		require.NoError(t, db.NewSelect().Model(&got).Order("kb_id").Scan(ctx))
		require.Equal(t, []models.KnowledgeReader{
			{SpaceID: "sp_1", KBID: "kb_granted", Kind: "agent", Name: "support-bot"},
			{SpaceID: "sp_1", KBID: "kb_old", Kind: "space", Name: ""},
		}, got)
	})
}
