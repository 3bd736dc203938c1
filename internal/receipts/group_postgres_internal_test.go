package receipts

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

// Issue 16: on PostgreSQL commitPipelined writes each space's entry and receipts through
// sealStatement, prepared once on the connection and reused by every later group, its values
// bound: on a pool of one connection, three groups over two spaces (text with quotes,
// backslashes, question marks, dollars and non-ASCII; some receipts stale) store each
// receipt column for column as bun stores the same receipt (insertUnsealed), in the group's
// order, the stale ones not at all; the chains verify, every receipt's inclusion proof holds,
// and the connection holds the statement once.
func TestPipelinedGroupsBindWhatBunStores(t *testing.T) {
	ctx := context.Background()
	u := dbtest.URL(t, "postgres")
	m, err := db.Open(ctx, u, dbtest.Shipped()) // migrating takes more than one connection
	require.NoError(t, err)
	_, err = db.Migrate(ctx, m)
	require.NoError(t, err)
	require.NoError(t, m.Close())
	d, err := db.Open(ctx, u, db.Options{MaxOpenConns: 1, MaxIdleConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	at := time.Date(2026, 12, 2, 18, 0, 0, 123456789, time.FixedZone("x", -5*3600))
	for _, s := range []string{"sp_a", "sp_b"} {
		require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			_, err := Append(ctx, tx, s, Entry{Kind: KindAdmin, Action: "space.create", ActorKey: "cli"}, at)
			return err
		}))
	}
	_, err = d.ExecContext(ctx, "INSERT INTO space_revisions (space_id, name, revision) VALUES (?, ?, ?)", "sp_b", "notes", 7)
	require.NoError(t, err)
	type stored struct {
		Kind, Action, ActorKeyID, ObjectIDs, Detail, At, PrevHash string
	}
	read := func(id string) (stored, int64) {
		var s stored
		var n int64
		require.NoError(t, d.NewRaw("SELECT kind, action, actor_key_id, object_ids, detail, CAST(at AS TEXT), prev_hash, n FROM receipts WHERE id = ?", id).
			Scan(ctx, &s.Kind, &s.Action, &s.ActorKeyID, &s.ObjectIDs, &s.Detail, &s.At, &s.PrevHash, &n))
		return s, n
	}
	l := NewLog(d, nil, 0)
	for g := range 3 {
		var group []*pending
		for i := range 40 {
			s, expect := "sp_a", []Expect(nil)
			if i%2 == 1 {
				s, expect = "sp_b", []Expect{{Name: "notes", Revision: int64(7 - i%3/2)}} // every i%3 == 2 stale
			}
			e := Entry{Kind: KindAgentMemory, Action: "block.read", ActorKey: `key_'1"\`,
				ObjectIDs: []string{fmt.Sprint("note_", g, "_", i), `n'"\?$1`},
				Detail:    map[string]any{"q": `"?'\$2 é 日本`, "i": i, "ok": i%4 == 0}}
			rec, err := newRecord(d, s, e, at.Add(time.Duration(i)*time.Microsecond))
			require.NoError(t, err)
			group = append(group, &pending{rec: rec, expect: expect})
		}
		require.NoError(t, l.commit(ctx, group, map[string]bool{}))
		last := map[string]int64{}
		for _, p := range group {
			require.Equal(t, p.rec.r.SpaceID == "sp_b" && len(p.expect) > 0 && p.expect[0].Revision != 7, p.stale)
			if p.stale {
				var n int
				require.NoError(t, d.NewRaw("SELECT COUNT(*) FROM receipts WHERE id = ?", p.rec.r.ID).Scan(ctx, &n))
				require.Zero(t, n, "a stale receipt is not stored")
				continue
			}
			var viaBun Receipt
			require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) (err error) {
				viaBun, err = insertUnsealed(ctx, tx, "sp_z", Entry{Kind: p.rec.r.Kind, Action: p.rec.r.Action,
					ActorKey: p.rec.r.ActorKeyID, ObjectIDs: p.rec.r.ObjectIDs, Detail: p.rec.r.Detail}, p.rec.r.At)
				return err
			}))
			got, n := read(p.rec.r.ID)
			want, _ := read(viaBun.ID)
			require.Equal(t, want, got)
			require.Greater(t, n, last[p.rec.r.SpaceID], "inserted in the group's order")
			last[p.rec.r.SpaceID] = n
			proof, err := Prove(ctx, d, p.rec.r.SpaceID, p.rec.r.ID)
			require.NoError(t, err)
			require.NoError(t, proof.Verify())
			require.Equal(t, p.rec.row.Seq, proof.Receipt.Seq)
		}
	}
	for s, want := range map[string]Verification{
		"sp_a": {OK: true, Count: 1 + 3*20, Batches: 4}, "sp_b": {OK: true, Count: 1 + 3*14, Batches: 4},
	} {
		v, err := Verify(ctx, d, s)
		require.NoError(t, err)
		require.Equal(t, want, v, s)
	}
	var prepared int
	require.NoError(t, d.NewRaw("SELECT COUNT(*) FROM pg_prepared_statements WHERE name = ?", sealStatementName).Scan(ctx, &prepared))
	require.Equal(t, 1, prepared, "prepared once on the pool's one connection, then reused")
}
