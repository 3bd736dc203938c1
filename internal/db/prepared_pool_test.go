package db_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

// TestTransactionPreparesWithoutASecondConnection (issue 34): a transaction whose writers
// queue behind it holding every other connection of the pool (on SQLite waiting for the
// write gate, on PostgreSQL for the row it locked) runs a statement through ExecTx that the
// pool has not prepared yet, and commits, and the writers behind it then commit too. Before
// the fix, ExecTx prepared on the pool, waiting for a connection none of them would give
// back: on SQLite the writers failed after the gate's 10 s with "database is locked" (the
// two-replica document quota test, about 1 run in 20), on PostgreSQL nothing moved at all.
func TestTransactionPreparesWithoutASecondConnection(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			const open = 4 // PostgreSQL's pool; SQLite always keeps 8
			d, err := db.Open(ctx, dbtest.URL(t, engine), db.Options{MaxOpenConns: open, MaxIdleConns: open})
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close(d) })
			_, err = d.ExecContext(ctx, "CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
			require.NoError(t, err)
			_, err = d.ExecContext(ctx, "INSERT INTO counter (id, n) VALUES (1, 0)")
			require.NoError(t, err)
			size := open
			if db.IsSQLite(d) {
				size = 8
			}

			holder, err := d.BeginTx(ctx, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = holder.Rollback() }) // a failed run frees the writers before the pool closes
			_, err = db.ExecTx(ctx, d, holder, "UPDATE counter SET n = n + ? WHERE id = 1", 1)
			require.NoError(t, err)
			errs := queueWriters(ctx, d, size-1)
			for d.Stats().InUse < size {
				time.Sleep(time.Millisecond) // until every connection is held by a queued writer
			}
			bounded, cancel := context.WithTimeout(ctx, time.Minute) // only ends a test that fails
			defer cancel()
			_, err = db.ExecTx(bounded, d, holder, "UPDATE counter SET n = n + ? WHERE id = 1 AND n >= 0", 1)
			require.NoError(t, err, "the statement new to the pool ran on the transaction's connection")
			require.NoError(t, holder.Commit())
			for i := 0; i < size-1; i++ {
				require.NoError(t, <-errs, "a writer queued behind the transaction")
			}
			var n int
			require.NoError(t, d.NewRaw("SELECT n FROM counter WHERE id = 1").Scan(ctx, &n))
			require.Equal(t, 2+size-1, n)
		})
	}
}

// queueWriters starts n transactions on d that each add 1 to the counter and commit; each
// sends its outcome on the channel returned.
func queueWriters(ctx context.Context, d *bun.DB, n int) <-chan error {
	errs := make(chan error, n)
	var started sync.WaitGroup
	for i := range n {
		started.Add(1)
		go func() {
			started.Done()
			errs <- d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				_, err := tx.ExecContext(ctx, fmt.Sprintf("UPDATE counter SET n = n + 1 WHERE id = 1 AND %d >= 0", i))
				return err
			})
		}()
	}
	started.Wait()
	return errs
}
