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
	"github.com/agentmemory/agentmemory/models"
)

// poisonSealedInserts makes the database refuse a receipt of action "poison" inserted sealed
// (seq set), as the group commit inserts it, and accept it inserted unsealed, as the insert
// after a failed group does.
func poisonSealedInserts(t *testing.T, d *bun.DB) {
	ctx := context.Background()
	ddl := []string{`CREATE TRIGGER poison BEFORE INSERT ON receipts WHEN NEW.seq IS NOT NULL AND NEW.action = 'poison'
BEGIN SELECT RAISE(ABORT, 'poisoned'); END`}
	if !db.IsSQLite(d) {
		ddl = []string{`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.seq IS NOT NULL AND NEW.action = 'poison' THEN RAISE EXCEPTION 'poisoned'; END IF;
	RETURN NEW;
END $$`, `CREATE TRIGGER poison BEFORE INSERT ON receipts FOR EACH ROW EXECUTE FUNCTION poison()`}
	}
	for _, q := range ddl {
		_, err := d.ExecContext(ctx, q)
		require.NoError(t, err)
	}
}

// Issue 16: a group commit over many spaces whose heads exist (on PostgreSQL the two round
// trips of commitPipelined) that fails in its last statements, after every head was locked
// and the stale members marked: nothing of it is in the chains, which stay as they were and
// verify; its receipts are stored unsealed (the stale ones not at all), every Record of it is
// answered, and a pass sealing the spaces puts each of them in its chain, provable. The
// connection of the failed transaction goes back to the pool usable: the next groups, through
// Record, commit sealed, and the chains verify with nothing unsealed.
func TestGroupFailingLateLeavesChainsWhole(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
		const spaces = 12
		space := func(i int) string { return fmt.Sprintf("sp_%02d", i) }
		for i := range spaces {
			require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				_, err := Append(ctx, tx, space(i), Entry{Kind: KindAdmin, Action: "space.create", ActorKey: "cli"}, at)
				return err
			}))
		}
		_, err := d.ExecContext(ctx, "INSERT INTO space_revisions (space_id, name, revision) VALUES (?, ?, ?)", space(3), "notes", 5)
		require.NoError(t, err)
		poisonSealedInserts(t, d)

		l := NewLog(d, nil, 0)
		var group []*pending
		for i := range 5 * spaces {
			s := space(i % spaces)
			e := Entry{Kind: KindAgentMemory, Action: "block.read", ActorKey: "key_1", ObjectIDs: []string{fmt.Sprint("note_", i)}}
			if i == 5*spaces-1 {
				e.Action = "poison"
			}
			var expect []Expect
			if s == space(3) {
				expect = []Expect{{Name: "notes", Revision: int64(4 + i/spaces%2)}} // three of its five stale
			}
			rec, err := newRecord(d, s, e, at.Add(time.Duration(i)*time.Millisecond))
			require.NoError(t, err)
			group = append(group, &pending{rec: rec, expect: expect, done: make(chan error, 1)})
		}
		require.NoError(t, l.commit(ctx, group, map[string]bool{}), "the receipts are stored unsealed")
		answer(group, nil)

		stale := 0
		for _, p := range group {
			got := <-p.done
			n, err := d.NewSelect().Model((*models.Receipt)(nil)).Where("id = ? AND seq IS NULL", p.rec.r.ID).Count(ctx)
			require.NoError(t, err)
			if p.stale {
				require.ErrorIs(t, got, ErrStale)
				require.Zero(t, n, "a stale receipt is not stored")
				stale++
				continue
			}
			require.NoError(t, got)
			require.Zero(t, p.rec.row.Seq)
			require.EqualValues(t, 1, n, "stored unsealed")
		}
		require.Equal(t, 3, stale)
		for i := range spaces {
			v, err := Verify(ctx, d, space(i))
			require.NoError(t, err)
			require.True(t, v.OK, "%s %+v", space(i), v)
			require.EqualValues(t, 1, v.Count, "the chain as it was")
			require.Positive(t, v.Unsealed)
		}

		// A pass seals them (updated, not inserted: the trigger lets them be).
		all := map[string]bool{}
		for i := range spaces {
			all[space(i)] = true
		}
		require.NoError(t, l.commit(ctx, nil, all))
		for _, p := range group {
			if p.stale {
				continue
			}
			proof, err := Prove(ctx, d, p.rec.r.SpaceID, p.rec.r.ID)
			require.NoError(t, err)
			require.NoError(t, proof.Verify())
		}

		// The pool's connections are usable: groups through Record commit sealed.
		for i := range 3 * spaces {
			r, err := l.Record(ctx, space(i%spaces), Entry{Kind: KindAgentMemory, Action: "search", ActorKey: "key_1"}, at.Add(time.Minute))
			require.NoError(t, err)
			require.Positive(t, r.Seq)
		}
		for i := range spaces {
			v, err := Verify(ctx, d, space(i))
			require.NoError(t, err)
			require.True(t, v.OK, "%s %+v", space(i), v)
			require.Zero(t, v.Unsealed)
		}
	})
}

// Issue 16: a Record whose context has ended returns without waiting for its group (ctx's
// error), yet its receipt is committed with its group and sealed: the chain verifies and
// holds it, in the order recorded.
func TestRecordCancelledStillSealed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
		l := NewLog(d, nil, 0)
		_, err := l.Record(ctx, "sp_a", readEntry(0), at)
		require.NoError(t, err)
		gone, cancel := context.WithCancel(ctx)
		cancel()
		for i := 1; i <= 20; i++ {
			if _, err := l.Record(gone, "sp_a", readEntry(i), at); err != nil { // nil when its group won the race
				require.ErrorIs(t, err, context.Canceled)
			}
		}
		last, err := l.Record(ctx, "sp_a", readEntry(21), at)
		require.NoError(t, err)
		require.EqualValues(t, 22, last.Seq, "after the 20 cancelled Records' receipts, in the order recorded")
		v, err := Verify(ctx, d, "sp_a")
		require.NoError(t, err)
		require.True(t, v.OK, "%+v", v)
		require.EqualValues(t, 22, v.Count)
		require.Zero(t, v.Unsealed)
	})
}

// Issue 16: a group over spaces whose heads exist and one whose head does not yet (on
// PostgreSQL commitPipelined gives the group up after its first round trip, heads locked and
// revisions read, and commitTx commits it): every receipt is sealed once, the stale ones are
// left out, and each space gets one chain entry after what it had.
func TestGroupWithNewSpaceAmongExisting(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		at := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
		for _, s := range []string{"sp_a", "sp_c"} {
			require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				_, err := Append(ctx, tx, s, Entry{Kind: KindAdmin, Action: "space.create", ActorKey: "cli"}, at)
				return err
			}))
		}
		_, err := d.ExecContext(ctx, "INSERT INTO space_revisions (space_id, name, revision) VALUES (?, ?, ?)", "sp_c", "notes", 2)
		require.NoError(t, err)
		l := NewLog(d, nil, 0)
		var group []*pending
		stale := map[string]bool{}
		for i := range 30 {
			s := []string{"sp_a", "sp_b", "sp_c"}[i%3]
			var expect []Expect
			if s == "sp_c" {
				expect = []Expect{{Name: "notes", Revision: int64(1 + i%2)}} // odd i current
			}
			rec, err := newRecord(d, s, readEntry(i), at)
			require.NoError(t, err)
			stale[rec.r.ID] = s == "sp_c" && i%2 == 0
			group = append(group, &pending{rec: rec, expect: expect})
		}
		require.NoError(t, l.commit(ctx, group, map[string]bool{}))
		for _, p := range group {
			require.Equal(t, stale[p.rec.r.ID], p.stale, p.rec.r.ObjectIDs)
			if p.stale {
				continue
			}
			require.Positive(t, p.rec.row.Seq)
			proof, err := Prove(ctx, d, p.rec.r.SpaceID, p.rec.r.ID)
			require.NoError(t, err)
			require.NoError(t, proof.Verify())
		}
		for s, want := range map[string]Verification{
			"sp_a": {OK: true, Count: 11, Batches: 2}, "sp_b": {OK: true, Count: 10, Batches: 1}, "sp_c": {OK: true, Count: 6, Batches: 2},
		} {
			v, err := Verify(ctx, d, s)
			require.NoError(t, err)
			require.Equal(t, want, v, s)
		}
	})
}
