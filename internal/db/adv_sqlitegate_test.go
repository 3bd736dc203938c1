package db

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
)

// Adversarial: every way a transaction or a gated write can end releases the gate. Each
// check writes afterwards with a context shorter than gateWait, so a gate left held fails
// the test instead of waiting for the timeout.
func TestGateReleasedHoweverTheWriteEnds(t *testing.T) {
	pools := openGated(t, 2)
	ctx := context.Background()
	write := func(msg string) {
		t.Helper()
		for _, d := range pools {
			_, err := d.ExecContext(cancelledAfter(t), `UPDATE t SET n = n + 1 WHERE id = 1`)
			require.NoError(t, err, msg)
		}
	}

	// A panic inside RunInTx (bun rolls back in a deferred call).
	func() {
		defer func() { require.NotNil(t, recover()) }()
		_ = pools[0].RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE t SET n = 100 WHERE id = 1`)
			require.NoError(t, err)
			panic("boom")
		})
	}()
	write("after a panic in a transaction")

	// A transaction whose context ends while it is open (database/sql rolls it back).
	txCtx, cancel := context.WithCancel(ctx)
	tx, err := pools[1].BeginTx(txCtx, &sql.TxOptions{})
	require.NoError(t, err)
	_, err = tx.ExecContext(txCtx, `UPDATE t SET n = 200 WHERE id = 1`)
	require.NoError(t, err)
	cancel()
	write("after a transaction's context ended")
	require.Error(t, tx.Commit())

	// A write statement that fails (constraint) in autocommit, and one in a transaction.
	_, err = pools[0].ExecContext(ctx, `INSERT INTO t (id, n) VALUES (1, 0)`)
	require.Error(t, err)
	write("after a failed autocommit write")
	err = pools[1].RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO t (id, n) VALUES (1, 0)`); err != nil {
			return err
		}
		return errors.New("unreachable")
	})
	require.Error(t, err)
	write("after a failed write in a transaction")

	// A write returning rows in autocommit, its rows closed before being read to the end.
	rows, err := pools[0].QueryContext(ctx, `UPDATE t SET n = n + 1 RETURNING n`)
	require.NoError(t, err)
	require.NoError(t, rows.Close())
	write("after a write's rows closed early")

	var n int
	require.NoError(t, pools[0].NewRaw(`SELECT n FROM t WHERE id = 1`).Scan(ctx, &n))
	require.Equal(t, 11, n, "ten writes and the returning one; the rolled-back and failed ones changed nothing")
}

// Adversarial: a process closes its pool on a file and opens a new one (a restart of the app
// on the same SQLite file): the new pool writes at once and sees everything committed.
func TestGateAcrossReopen(t *testing.T) {
	u := "sqlite://" + filepath.Join(t.TempDir(), "reopen.db")
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		d, err := Open(ctx, u, Options{})
		require.NoError(t, err)
		if i == 0 {
			_, err = d.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`)
			require.NoError(t, err)
			_, err = d.ExecContext(ctx, `INSERT INTO t (id, n) VALUES (1, 0)`)
			require.NoError(t, err)
		}
		err = d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE t SET n = n + 1 WHERE id = 1`)
			return err
		})
		require.NoError(t, err)
		var n int
		require.NoError(t, d.NewRaw(`SELECT n FROM t WHERE id = 1`).Scan(cancelledAfter(t), &n))
		require.Equal(t, i+1, n)
		require.NoError(t, d.Close())
	}
}

// Adversarial: a prepared statement decides once whether it is a write. A prepared read runs
// while another pool's transaction holds the gate (it never waits for it); prepared writes,
// run by Exec and by Query (RETURNING, its rows closed early or failing), each hold the gate
// only while they run, so a write on the other pool goes through after each of them.
func TestPreparedStatementsGate(t *testing.T) {
	pools := openGated(t, 2)
	ctx := context.Background()
	read, err := pools[1].DB.PrepareContext(ctx, `SELECT n FROM t WHERE id = 1`)
	require.NoError(t, err)
	defer read.Close()
	add, err := pools[0].DB.PrepareContext(ctx, `UPDATE t SET n = n + 1 WHERE id = 1`)
	require.NoError(t, err)
	defer add.Close()
	addReturning, err := pools[0].DB.PrepareContext(ctx, `UPDATE t SET n = n + 1 WHERE id = 1 RETURNING n`)
	require.NoError(t, err)
	defer addReturning.Close()
	dup, err := pools[0].DB.PrepareContext(ctx, `INSERT INTO t (id, n) VALUES (1, 0) RETURNING n`)
	require.NoError(t, err)
	defer dup.Close()
	write := func(msg string) {
		t.Helper()
		_, err := pools[1].ExecContext(cancelledAfter(t), `UPDATE t SET n = n + 1 WHERE id = 1`)
		require.NoError(t, err, msg)
	}

	tx, err := pools[0].BeginTx(ctx, &sql.TxOptions{})
	require.NoError(t, err)
	var n int
	require.NoError(t, read.QueryRowContext(cancelledAfter(t)).Scan(&n), "a prepared read does not wait for the gate")
	require.NoError(t, tx.Rollback())

	_, err = add.ExecContext(ctx)
	require.NoError(t, err)
	write("after a prepared Exec write")
	rows, err := addReturning.QueryContext(ctx)
	require.NoError(t, err)
	require.NoError(t, rows.Close())
	require.NoError(t, rows.Close(), "a second Close is harmless")
	write("after a prepared write's rows closed early")
	require.NoError(t, addReturning.QueryRowContext(ctx).Scan(&n))
	write("after a prepared write's row read")
	require.Error(t, dup.QueryRowContext(ctx).Scan(&n))
	write("after a prepared write that failed")

	require.NoError(t, read.QueryRowContext(ctx).Scan(&n))
	require.Equal(t, 7, n, "three prepared writes and four on the other pool")
}
