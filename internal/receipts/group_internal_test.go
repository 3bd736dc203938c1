package receipts

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/models"
)

// Issue 16: one group commit of 150 receipts over two spaces (more than one multi-row insert
// of insertChunk rows each), some stale: the others are stored, sealed in one chain entry per
// space, the stale ones are not stored at all, the chains verify and every stored receipt's
// inclusion proof holds; a receipt left unsealed before is sealed by a later pass asked for
// its space, after the group's entry.
func TestGroupCommitMultiRowWithStaleMembers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		_, err := d.ExecContext(ctx, "INSERT INTO space_revisions (space_id, name, revision) VALUES (?, ?, ?)", "sp_a", "notes", 3)
		require.NoError(t, err)
		var left Receipt
		require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			left, err = insertUnsealed(ctx, tx, "sp_a", Entry{Kind: KindAgentMemory, Action: "search"}, at)
			return err
		}))

		l := NewLog(d, nil, 0)
		var group []*pending
		stale := map[string]bool{}
		for i := range 150 {
			space, expect := "sp_a", []Expect{{Name: "notes", Revision: 3}}
			if i%3 == 2 {
				space, expect = "sp_b", nil
			}
			if i%37 == 5 {
				expect = []Expect{{Name: "notes", Revision: 2}} // sp_a's notes moved on (sp_b has none)
			}
			r, row, err := newReceipt(space, Entry{Kind: KindAgentMemory, Action: "block.read", ActorKey: "key_1",
				ObjectIDs: []string{"note_1"}, Detail: map[string]any{"i": i, "q": `"?'\`}}, at.Add(time.Duration(i)*time.Millisecond))
			require.NoError(t, err)
			if i%37 == 5 {
				stale[r.ID] = true
			}
			group = append(group, &pending{rec: record{r: r, row: row}, expect: expect})
		}
		require.NoError(t, l.commit(ctx, group, map[string]bool{}))

		stored, storedA := 0, int64(0)
		for _, p := range group {
			require.Equal(t, stale[p.rec.r.ID], p.stale, p.rec.r.ID)
			n, err := d.NewSelect().Model((*models.Receipt)(nil)).Where("id = ?", p.rec.r.ID).Count(ctx)
			require.NoError(t, err)
			if p.stale {
				require.Zero(t, n, "a stale receipt is not stored")
				continue
			}
			require.EqualValues(t, 1, n)
			stored++
			if p.rec.r.SpaceID == "sp_a" {
				storedA++
			}
			proof, err := Prove(ctx, d, p.rec.r.SpaceID, p.rec.r.ID)
			require.NoError(t, err)
			require.NoError(t, proof.Verify())
			require.Equal(t, p.rec.row.Seq, proof.Receipt.Seq)
		}
		require.Equal(t, 150-len(stale), stored)
		require.Len(t, stale, 4)

		// The receipt left unsealed before the group is not in the group's entry; a pass
		// asked for its space seals it after.
		var seq int64
		require.NoError(t, d.NewSelect().Model((*models.Receipt)(nil)).Column("seq").Where("id = ?", left.ID).Scan(ctx, &seq))
		require.Zero(t, seq)
		require.NoError(t, l.commit(ctx, nil, map[string]bool{"sp_a": true}))
		for _, space := range []string{"sp_a", "sp_b"} {
			v, err := Verify(ctx, d, space)
			require.NoError(t, err)
			require.True(t, v.OK, "%s %+v", space, v)
			require.Zero(t, v.Unsealed)
		}
		var entries int64
		entries, err = d.NewSelect().Model((*models.ReceiptBatch)(nil)).Where("space_id = ?", "sp_a").Count(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, entries, "the group's entry, then the leftover's")
		p, err := Prove(ctx, d, "sp_a", left.ID)
		require.NoError(t, err)
		require.NoError(t, p.Verify())
		require.Equal(t, storedA+1, p.Receipt.Seq, "sealed after the group's receipts of sp_a")
	})
}

// A receipt the group committer inserts with the values newRecord bound ahead is stored as
// bun stores the same receipt (insertUnsealed): the same detail, object ids and time, column
// for column, and it verifies.
func TestRecordInsertStoresWhatBunStores(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
		l := NewLog(d, nil, 0)
		type stored struct {
			Kind, Action, ActorKeyID, ObjectIDs, Detail, At, PrevHash string
		}
		read := func(id string) stored {
			var s stored
			require.NoError(t, d.NewRaw("SELECT kind, action, actor_key_id, object_ids, detail, CAST(at AS TEXT), prev_hash FROM receipts WHERE id = ?", id).
				Scan(ctx, &s.Kind, &s.Action, &s.ActorKeyID, &s.ObjectIDs, &s.Detail, &s.At, &s.PrevHash))
			return s
		}
		for _, e := range []Entry{
			{Kind: KindAgentMemory, Action: "block.read", ActorKey: "key_1", ObjectIDs: []string{"note_1", "note_2"},
				Detail: map[string]any{"tokens": 812, "not_modified": true, "source_id": "bench-bot"}},
			{Kind: KindAgentMemory, Action: "search", ActorKey: "key_1", Detail: map[string]any{"q": "<é>", "ratio": 0.5}},
		} {
			direct, err := l.Record(ctx, "sp_a", e, at)
			require.NoError(t, err)
			var viaBun Receipt
			require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) (err error) {
				viaBun, err = insertUnsealed(ctx, tx, "sp_a", e, at)
				return err
			}))
			require.Equal(t, read(viaBun.ID), read(direct.ID))
		}
		_, err := Seal(ctx, d, "sp_a")
		require.NoError(t, err)
		v, err := Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.True(t, v.OK, "%+v", v)
	})
}
