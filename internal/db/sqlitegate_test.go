package db

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"
)

func TestIsWrite(t *testing.T) {
	for q, want := range map[string]bool{
		`INSERT INTO t VALUES (1)`:  true,
		"  update t SET a = 1":      true,
		"DELETE FROM t":             true,
		"REPLACE INTO t VALUES (1)": true,
		"CREATE INDEX i ON t (a)":   true,
		"VACUUM":                    true,
		"WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x": true,
		"SELECT * FROM t":                      false,
		"WITH x AS (SELECT 1) SELECT * FROM x": false,
		"PRAGMA wal_checkpoint(TRUNCATE)":      false,
		"BEGIN IMMEDIATE":                      false,
		"(SELECT 1)":                           false,
	} {
		require.Equal(t, want, isWrite(q), q)
	}
}

// openGated opens a fresh SQLite file with n pools on it (as several replicas of one process
// would), each with a table t holding one counter row.
func openGated(t *testing.T, n int) []*bun.DB {
	t.Helper()
	u := "sqlite://" + filepath.Join(t.TempDir(), "gate.db")
	out := make([]*bun.DB, n)
	for i := range out {
		d, err := Open(context.Background(), u, Options{})
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		out[i] = d
	}
	_, err := out[0].Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`)
	require.NoError(t, err)
	_, err = out[0].Exec(`INSERT INTO t (id, n) VALUES (1, 0)`)
	require.NoError(t, err)
	return out
}

// Read-modify-write transactions and autocommit writes from many goroutines over two pools
// on one file all succeed, and none is lost: the gate serialises them, and every
// transaction's gate is released whether it commits or rolls back.
func TestGateSerialisesWriters(t *testing.T) {
	pools := openGated(t, 2)
	ctx := context.Background()
	const workers, each = 16, 25
	errRollback := errors.New("rolled back on purpose")
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := pools[w%2]
			for i := range each {
				switch i % 3 {
				case 0: // read, then write what was read plus one
					errs <- d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
						var n int
						if err := tx.NewRaw(`SELECT n FROM t WHERE id = 1`).Scan(ctx, &n); err != nil {
							return err
						}
						_, err := tx.ExecContext(ctx, `UPDATE t SET n = ? WHERE id = 1`, n+1)
						return err
					})
				case 1: // an autocommit write, RETURNING through a query
					var n int
					errs <- d.NewRaw(`UPDATE t SET n = n + 1 WHERE id = 1 RETURNING n`).Scan(ctx, &n)
				default: // a transaction that writes, then rolls back
					err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
						if _, err := tx.ExecContext(ctx, `UPDATE t SET n = n + 1000 WHERE id = 1`); err != nil {
							return err
						}
						return errRollback
					})
					if errors.Is(err, errRollback) {
						err = nil
					}
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var n, rolledBack int
	require.NoError(t, pools[1].NewRaw(`SELECT n FROM t WHERE id = 1`).Scan(ctx, &n))
	for i := range each {
		if i%3 == 2 {
			rolledBack++
		}
	}
	require.Equal(t, workers*(each-rolledBack), n, "every committed increment counted once, no rolled-back one")
}

// A writer waiting for the gate gives up when its context ends, and gets the gate once the
// transaction holding it ends.
func TestGateWaitEndsWithContext(t *testing.T) {
	pools := openGated(t, 1)
	ctx := context.Background()
	tx, err := pools[0].BeginTx(ctx, &sql.TxOptions{})
	require.NoError(t, err)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = pools[0].BeginTx(cancelled, &sql.TxOptions{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = pools[0].ExecContext(cancelled, `UPDATE t SET n = 5 WHERE id = 1`)
	require.ErrorIs(t, err, context.Canceled)

	// A read is never queued behind the writer.
	var n int
	require.NoError(t, pools[0].NewRaw(`SELECT n FROM t WHERE id = 1`).Scan(cancelledAfter(t), &n))

	require.NoError(t, tx.Rollback())
	_, err = pools[0].ExecContext(cancelledAfter(t), `UPDATE t SET n = 7 WHERE id = 1`)
	require.NoError(t, err, "the rolled-back transaction released the gate")
}

// cancelledAfter is a context that ends well after any healthy wait: a gate that is never
// released fails the test instead of hanging it.
func cancelledAfter(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The checkpointer starts after a write and ends, its connection closed, when its pool closes.
func TestCheckpointerStopsOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt.db")
	c := newGatedConnector(sqliteshim.Driver(), path, SQLiteDSN(path))
	d := bun.NewDB(sql.OpenDB(c), sqlitedialect.New())
	_, err := d.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	k := c.ck
	k.mu.Lock()
	running, done := k.running, k.done
	k.mu.Unlock()
	require.True(t, running, "a write starts the checkpointer")
	require.NoError(t, d.Close())
	select {
	case <-done:
	default:
		t.Fatal("the checkpointer still runs after its pool closed")
	}
	k.wroteSome()
	k.mu.Lock()
	defer k.mu.Unlock()
	require.True(t, k.closed)
	require.Equal(t, done, k.done, "no checkpointer starts after close")
}

func TestKindOf(t *testing.T) {
	for q, want := range map[string]stmtKind{
		"PRAGMA wal_checkpoint(TRUNCATE)":         stmtCheckpoint,
		"  pragma   main.wal_checkpoint(PASSIVE)": stmtCheckpoint,
		"PRAGMA journal_mode":                     stmtRead,
		"SELECT wal_checkpoint FROM t":            stmtRead,
		"INSERT INTO t VALUES (1)":                stmtWrite,
		"SELECT 1":                                stmtRead,
	} {
		require.Equal(t, want, kindOf(q), q)
	}
}

// Issue 27: a TRUNCATE checkpoint run through the pool right after writes (while the pool's
// own checkpointer runs its PASSIVE checkpoints) is never answered busy: SQLite answers a
// second concurrent checkpoint of a file with SQLITE_BUSY at once, so this process's
// checkpoints take turns (writeGate.checkpoint).
func TestCheckpointsTakeTurns(t *testing.T) {
	d := openGated(t, 1)[0]
	ctx := context.Background()
	for i := range 200 {
		_, err := d.ExecContext(ctx, "UPDATE t SET n = n + 1 WHERE id = 1")
		require.NoError(t, err)
		if i%4 != 0 { // let the checkpointer's interval end now and then, mid-write-burst
			time.Sleep(checkpointEvery / 4)
		}
		var busy, logFrames, done int
		require.NoError(t, d.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done))
		require.Zero(t, busy, "checkpoint %d answered busy", i)
	}
}
