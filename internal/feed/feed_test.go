package feed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/models"
)

// readAll reads spaceID's whole feed from after, in pages of limit.
func readAll(t *testing.T, d *bun.DB, spaceID string, after int64, limit int, tables ...string) []feed.Record {
	t.Helper()
	var out []feed.Record
	for {
		page, err := feed.Read(context.Background(), d, nil, spaceID, feed.Query{After: after, Limit: limit, Tables: tables})
		require.NoError(t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		after = page[len(page)-1].Cursor
	}
}

// seedRows writes one row of every exported table in spaceID (bun inserts: the capture is
// the triggers', whichever code writes) and returns the keys by feed table.
func seedRows(t *testing.T, d *bun.DB, spaceID string) map[string]string {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	_, err := d.NewInsert().Model(&models.Space{ID: spaceID, Name: spaceID, CreatedAt: now}).Exec(ctx)
	require.NoError(t, err)
	rows := []any{
		&models.Note{ID: "note_1", SpaceID: spaceID, LineageID: "note_1", Version: 1, Title: "Refunds", Body: "Refund within 30 days",
			Tags: "[]", Kind: "policy", Status: "active", CreatedAt: now, UpdatedAt: now},
		&models.NoteProposal{ID: "prop_1", SpaceID: spaceID, Status: "pending", Kinds: "[]", CreatedAt: now, UpdatedAt: now},
		&models.ProposalDecision{ID: "dec_1", SpaceID: spaceID, ProposalID: "prop_1", Decision: "approve", CreatedAt: now, UpdatedAt: now},
		&models.Receipt{SpaceID: spaceID, Seq: 1, ID: "rcpt_1", Kind: "note", Action: "note.create", ObjectIDs: "[]", Detail: "{}", At: now},
		&models.ReceiptBatch{SpaceID: spaceID, Seq: 1, FirstSeq: 1, Version: 2, Root: "r", Hash: "h", At: now},
		&models.KnowledgeBase{ID: "kb_1", SpaceID: spaceID, Name: "faq", Settings: "{}", CreatedAt: now},
		&models.KnowledgeDocument{ID: "kdoc_1", SpaceID: spaceID, KBID: "kb_1", Title: "FAQ", Body: "secret body text", Kinds: "[]",
			Status: "indexed", CreatedAt: now, UpdatedAt: now},
		&models.KnowledgeChunk{ID: "kch_1", SpaceID: spaceID, KBID: "kb_1", DocumentID: "kdoc_1", Text: "chunk text", CreatedAt: now},
		&models.KnowledgeChunk{ID: "kch_2", SpaceID: spaceID, KBID: "kb_1", DocumentID: "kdoc_1", Text: "Ana's phone", SubjectHash: "sh", CreatedAt: now},
		&models.AgentState{ID: "st_1", SpaceID: spaceID, ScopeHash: "sch", ScopeKind: "conversation", Agent: "bot",
			Body: []byte(`{"cart":"the customer's cart"}`), FieldTimes: "{}", Version: 1, Bytes: 30, CreatedAt: now, UpdatedAt: now, ExpiresAt: now},
		&models.APIKey{ID: "key_1", SpaceID: spaceID, Hash: "SECRETHASH", Kind: "person", Name: "ops", Roles: []string{"admin"}, CreatedAt: now},
		&models.DocumentChange{ID: "chg_1", SpaceID: spaceID, Name: "features", Body: "{}", BaseBody: "{}", Status: "pending", CreatedAt: now},
		&models.Document{SpaceID: spaceID, Name: "features", Body: `{"a":1}`, Version: 1, UpdatedAt: now},
	}
	for _, r := range rows {
		if spaceID != "spc_a" {
			suffix(r, spaceID)
		}
		_, err := d.NewInsert().Model(r).Exec(ctx)
		require.NoError(t, err, "%T", r)
	}
	return map[string]string{"notes": "note_1", "proposals": "prop_1", "decisions": "dec_1", "receipts": "rcpt_1",
		"receipt_checkpoints": "1", "knowledge_bases": "kb_1", "knowledge_documents": "kdoc_1", "knowledge_chunks": "kch_1",
		"agent_states": "st_1", "keys": "key_1", "change_requests": "chg_1", "documents": "features"}
}

// suffix makes the ids of r (a row of seedRows) those of another space.
func suffix(r any, spaceID string) {
	switch r := r.(type) {
	case *models.Note:
		r.ID, r.LineageID = r.ID+spaceID, r.LineageID+spaceID
	case *models.NoteProposal:
		r.ID += spaceID
	case *models.ProposalDecision:
		r.ID += spaceID
	case *models.Receipt:
		r.ID += spaceID
	case *models.KnowledgeBase:
		r.ID += spaceID
	case *models.KnowledgeDocument:
		r.ID, r.KBID = r.ID+spaceID, r.KBID+spaceID
	case *models.KnowledgeChunk:
		r.ID, r.KBID, r.DocumentID = r.ID+spaceID, r.KBID+spaceID, r.DocumentID+spaceID
	case *models.AgentState:
		r.ID += spaceID
	case *models.APIKey:
		r.ID, r.Hash = r.ID+spaceID, r.Hash+spaceID
	case *models.DocumentChange:
		r.ID += spaceID
	}
}

func TestFeedCarriesEveryTableWithoutContentItMustNotExport(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		keys := seedRows(t, d, "spc_a")
		seedRows(t, d, "spc_b") // another space: none of its records in spc_a's feed
		recs := readAll(t, d, "spc_a", 0, 5)
		got := map[string]string{}
		for i, r := range recs {
			require.Equal(t, int64(i+1), r.Cursor, "cursors are 1, 2, 3... per space")
			require.Equal(t, feed.OpUpsert, r.Op, "%s %s", r.Table, r.Key)
			if r.Table != "knowledge_chunks" || r.Key == "kch_1" {
				got[r.Table] = r.Key
			}
		}
		require.Equal(t, keys, got)
		require.Len(t, recs, len(keys)+1, "one record per change (two chunks)")
		all := ""
		for _, r := range recs {
			all += string(r.Row) + "\n"
		}
		for _, never := range []string{"SECRETHASH", "the customer's cart", "secret body text", "Ana's phone", "spc_b"} {
			require.NotContains(t, all, never)
		}
		require.Contains(t, all, "Refund within 30 days", "a note's content is exported")
		require.Contains(t, all, "chunk text", "a chunk's text under the refuse or mask policy is exported")

		notes := readAll(t, d, "spc_a", 0, 100, "notes", "keys")
		require.Len(t, notes, 2)
		_, err := feed.Read(context.Background(), d, nil, "spc_a", feed.Query{Tables: []string{"turns"}, Limit: 10})
		require.ErrorIs(t, err, feed.ErrUnknownTable)
	})
}

func TestFeedDeletesAreTombstonesAndGoneRowsReadAsDeletes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		seedRows(t, d, "spc_a")
		first := readAll(t, d, "spc_a", 0, 100)
		last := first[len(first)-1].Cursor

		_, err := d.NewUpdate().Model((*models.AgentState)(nil)).Set("version = 2").Set("body = ?", []byte(`{"cart":"x"}`)).
			Where("id = 'st_1'").Exec(ctx)
		require.NoError(t, err)
		_, err = d.NewDelete().Model((*models.Note)(nil)).Where("id = 'note_1'").Exec(ctx)
		require.NoError(t, err)
		// A key's last-used stamp alone is no change of the key.
		_, err = d.NewUpdate().Model((*models.APIKey)(nil)).Set("last_used_at = ?", time.Now()).Where("id = 'key_1'").Exec(ctx)
		require.NoError(t, err)

		recs := readAll(t, d, "spc_a", last, 100)
		require.Len(t, recs, 2)
		require.Equal(t, []string{"agent_states", "notes"}, []string{recs[0].Table, recs[1].Table})
		require.Equal(t, last+1, recs[0].Cursor)
		var st map[string]any
		require.NoError(t, json.Unmarshal(recs[0].Row, &st))
		require.EqualValues(t, 2, st["version"])
		require.Equal(t, feed.Record{Cursor: last + 2, Table: "notes", Key: "note_1", Op: feed.OpDelete, ChangedAt: recs[1].ChangedAt}, recs[1],
			"a tombstone carries the key only")

		again := readAll(t, d, "spc_a", 0, 100, "notes")
		require.Len(t, again, 2)
		require.Equal(t, feed.OpDelete, again[0].Op, "the note's earlier upsert reads as a delete now that the row is gone")
		require.Nil(t, again[0].Row)
		require.NotContains(t, fmt.Sprint(again), "Refund")
	})
}

func TestFeedHeadCountsPending(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		seedRows(t, d, "spc_a")
		last, pending, err := feed.Head(ctx, d, "spc_a")
		require.NoError(t, err)
		require.Equal(t, int64(0), last)
		require.Equal(t, int64(13), pending)
		require.NoError(t, feed.AdvanceAll(ctx, d, "spc_a"))
		last, pending, err = feed.Head(ctx, d, "spc_a")
		require.NoError(t, err)
		require.Equal(t, [2]int64{13, 0}, [2]int64{last, pending})
		require.True(t, strings.HasPrefix(feed.TableNames()[0], "notes"))
	})
}
