package receipts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

var flushAt = time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)

func readEntry(i int) Entry {
	return Entry{Kind: KindAgentMemory, Action: "block.read", ActorKey: "key_1", ObjectIDs: []string{fmt.Sprint("note_", i)}}
}

// insertLSN is PostgreSQL's WAL insert position now: past the commit record of every
// transaction committed before.
func insertLSN(ctx context.Context, d *bun.DB) (string, error) {
	var lsn string
	err := d.QueryRowContext(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn)
	return lsn, err
}

// flushedPast reports whether the WAL is flushed at or past lsn.
func flushedPast(ctx context.Context, d *bun.DB, lsn string) (bool, error) {
	var ok bool
	err := d.QueryRowContext(ctx, "SELECT pg_current_wal_flush_lsn() >= ?::pg_lsn", lsn).Scan(&ok)
	return ok, err
}

// Issue 16: on PostgreSQL a group commits asynchronously (its receipt visible and the space's
// head free for another transaction at once) and its Record is answered only after its
// flush, which makes the WAL durable past the group's commit: the space's first group (which
// creates its head row, through commitTx) and the next one (commitPipelined) alike. On SQLite
// the group is answered as it commits, without a flush.
func TestGroupAnsweredAfterItsFlush(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *bun.DB) {
		ctx := context.Background()
		l := NewLog(d, nil, 0)
		if db.IsSQLite(d) {
			l.flush = func(context.Context) error { return errors.New("a SQLite group was flushed") }
			r, err := l.Record(ctx, "sp_a", readEntry(0), flushAt)
			require.NoError(t, err)
			require.EqualValues(t, 1, r.Seq)
			require.NoError(t, Flush(ctx, d), "Flush does nothing on SQLite")
			return
		}
		for seq := int64(1); seq <= 2; seq++ {
			called := make(chan string) // the WAL insert position once the group has committed
			release := make(chan struct{})
			var flushedAtAnswer bool
			l.flush = func(ctx context.Context) error {
				lsn, err := insertLSN(ctx, d)
				if err != nil {
					return err
				}
				var visible int
				if err := d.QueryRowContext(ctx, "SELECT COUNT(*) FROM receipts WHERE space_id = 'sp_a' AND seq = ?", seq).Scan(&visible); err != nil || visible != 1 {
					return fmt.Errorf("the group's receipt is not committed before its flush: %d, %v", visible, err)
				}
				err = d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
					_, err := tx.ExecContext(ctx, "SELECT seq FROM receipt_heads WHERE space_id = 'sp_a' FOR UPDATE NOWAIT")
					return err
				})
				if err != nil {
					return fmt.Errorf("the head is still locked while the group waits for its flush: %w", err)
				}
				called <- lsn
				<-release
				if err := Flush(ctx, d); err != nil {
					return err
				}
				flushedAtAnswer, err = flushedPast(ctx, d, lsn)
				return err
			}
			done := make(chan error, 1)
			go func() {
				r, err := l.Record(ctx, "sp_a", readEntry(int(seq)), flushAt)
				if err == nil && r.Seq != seq {
					err = fmt.Errorf("seq %d, want %d", r.Seq, seq)
				}
				done <- err
			}()
			<-called
			select {
			case err := <-done:
				t.Fatalf("Record answered before its group's flush ended (err %v)", err)
			default:
			}
			close(release)
			require.NoError(t, <-done)
			require.True(t, flushedAtAnswer, "the WAL is flushed past the group's commit when Record answers")
		}
	})
}

// A group whose flush fails is answered with the flush's error, not as stored; the Log goes
// on with the next group.
func TestFailedFlushFailsItsGroup(t *testing.T) {
	dbtest.SkipPostgresShort(t)
	d := dbtest.Open(t, "postgres")
	ctx := context.Background()
	l := NewLog(d, nil, 0)
	lost := errors.New("the WAL could not be flushed")
	l.flush = func(context.Context) error { return lost }
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = l.Record(ctx, "sp_a", readEntry(i), flushAt) })
	}
	wg.Wait()
	for _, err := range errs {
		require.ErrorIs(t, err, lost)
	}
	l.flush = func(ctx context.Context) error { return Flush(ctx, d) }
	r, err := l.Record(ctx, "sp_a", readEntry(9), flushAt)
	require.NoError(t, err)
	require.EqualValues(t, 9, r.Seq, "after the 8 receipts whose flush failed")
}

// The drain commits the next groups while earlier ones wait for their flush, up to
// maxUnflushed of them: each of maxUnflushed Records (recorded one after another, each once
// the previous one's group waits for its flush) is held in its flush until all of them are,
// which only ends because the groups are pipelined; then many concurrent Records never have
// more than maxUnflushed flushes at a time, every one is sealed once, and the chain verifies.
func TestGroupsPipelineTheirFlushes(t *testing.T) {
	dbtest.SkipPostgresShort(t)
	d := dbtest.Open(t, "postgres")
	ctx := context.Background()
	l := NewLog(d, nil, 0)
	var waiting, most atomic.Int64
	arrived := make(chan struct{})
	all := make(chan struct{})
	var held atomic.Int64
	l.flush = func(ctx context.Context) error {
		n := waiting.Add(1)
		defer waiting.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if held.Add(1) <= maxUnflushed {
			arrived <- struct{}{}
			<-all
		}
		return Flush(ctx, d)
	}
	var wg sync.WaitGroup
	for i := range maxUnflushed {
		wg.Go(func() {
			if _, err := l.Record(ctx, "sp_a", readEntry(i), flushAt); err != nil {
				t.Error(err)
			}
		})
		<-arrived
	}
	require.EqualValues(t, maxUnflushed, waiting.Load(), "every group waits for its flush at once")
	close(all)
	wg.Wait()

	const workers, each = 32, 20
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				r, err := l.Record(ctx, "sp_a", readEntry(w*each+i), flushAt)
				if err != nil || r.Seq == 0 {
					t.Errorf("Record: seq %d, %v", r.Seq, err)
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, most.Load(), int64(maxUnflushed))
	v, err := Verify(ctx, d, "sp_a")
	require.NoError(t, err)
	require.True(t, v.OK, "%+v", v)
	require.EqualValues(t, maxUnflushed+workers*each, v.Count)
	require.Zero(t, v.Unsealed)
}

// Seal's head is durable when it returns: the WAL is flushed past a group committed
// asynchronously and never flushed by its Log (a head another process would sign).
func TestSealFlushesWhatItRead(t *testing.T) {
	dbtest.SkipPostgresShort(t)
	d := dbtest.Open(t, "postgres")
	ctx := context.Background()
	l := NewLog(d, nil, 0)
	rec, err := newRecord(d, "sp_a", readEntry(0), flushAt)
	require.NoError(t, err)
	require.NoError(t, l.commit(ctx, []*pending{{rec: rec}}, map[string]bool{})) // committed, not flushed
	lsn, err := insertLSN(ctx, d)
	require.NoError(t, err)
	h, err := Seal(ctx, d, "sp_a")
	require.NoError(t, err)
	require.EqualValues(t, 1, h.Seq)
	flushed, err := flushedPast(ctx, d, lsn)
	require.NoError(t, err)
	require.True(t, flushed, "the WAL is flushed past the head Seal returned")
}
