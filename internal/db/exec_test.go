package db_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

// TestExecAndQueryInsideAndOutsideTransactions: db.Exec and db.Query run the same ?
// statement on a pool (bun's formatting) and inside a bun.Tx (prepared, values bound), on
// both databases; a rolled-back transaction leaves nothing; ScanFirst scans the first row,
// and answers sql.ErrNoRows when there is none.
func TestExecAndQueryInsideAndOutsideTransactions(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			if engine == "postgres" {
				dbtest.SkipPostgresShort(t)
			}
			ctx := context.Background()
			d := dbtest.Open(t, engine)
			_, err := db.Exec(ctx, d, `CREATE TABLE exec_probe (id BIGINT PRIMARY KEY, note TEXT NOT NULL)`)
			require.NoError(t, err)
			count := func() int64 {
				rows, err := db.Query(ctx, d, `SELECT count(*) FROM exec_probe WHERE note <> ?`, "")
				require.NoError(t, err)
				var n int64
				require.NoError(t, db.ScanFirst(rows, &n))
				return n
			}

			res, err := db.Exec(ctx, d, `INSERT INTO exec_probe (id, note) VALUES (?, ?)`, 1, "it's a 'quoted' ? mark")
			require.NoError(t, err)
			n, err := res.RowsAffected()
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				_, err := db.Exec(ctx, tx, `INSERT INTO exec_probe (id, note) VALUES (?, ?)`, 2, "inside")
				return err
			}))
			rolledBack := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				if _, err := db.Exec(ctx, tx, `INSERT INTO exec_probe (id, note) VALUES (?, ?)`, 3, "rolled back"); err != nil {
					return err
				}
				return sql.ErrTxDone // any error rolls the transaction back
			})
			require.ErrorIs(t, rolledBack, sql.ErrTxDone)
			require.EqualValues(t, 2, count())

			require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				rows, err := db.Query(ctx, tx, `SELECT id, note FROM exec_probe WHERE id >= ? ORDER BY id`, 1)
				require.NoError(t, err)
				var id int64
				var note string
				require.NoError(t, db.ScanFirst(rows, &id, &note))
				require.EqualValues(t, 1, id)
				require.Equal(t, "it's a 'quoted' ? mark", note)

				rows, err = db.Query(ctx, tx, `SELECT id FROM exec_probe WHERE id = ?`, 99)
				require.NoError(t, err)
				require.ErrorIs(t, db.ScanFirst(rows, &id), sql.ErrNoRows)
				return nil
			}))
		})
	}
}
