package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"agentmemory/internal/db"
	"agentmemory/internal/db/dbtest"
	"agentmemory/migrations"
)

// TestConcurrentMigrate starts several "replicas" (each its own pool) migrating one fresh
// database at once: every one succeeds, each migration is applied exactly once, and the
// migration lock is released.
func TestConcurrentMigrate(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			u := dbtest.URL(t, engine)
			const replicas = 6
			pools := make([]*bun.DB, replicas)
			for i := range pools {
				d, err := db.Open(ctx, u, db.Options{MaxOpenConns: 3})
				require.NoError(t, err)
				t.Cleanup(func() { d.Close() })
				pools[i] = d
			}
			applied := make([][]string, replicas)
			errs := make([]error, replicas)
			var start, done sync.WaitGroup
			start.Add(1)
			for i := range pools {
				done.Add(1)
				go func() {
					defer done.Done()
					start.Wait()
					applied[i], errs[i] = db.Migrate(ctx, pools[i])
				}()
			}
			start.Done()
			done.Wait()
			total := 0
			for i := range errs {
				require.NoError(t, errs[i], "replica %d", i)
				total += len(applied[i])
			}
			want := len(migrations.Migrations.Sorted())
			require.Equal(t, want, total, "migrations applied across replicas: got %d, want %d (each once)", total, want)

			var rows int
			require.NoError(t, pools[0].NewSelect().Table("bun_migrations").ColumnExpr("count(*)").Scan(ctx, &rows))
			require.Equal(t, want, rows, "rows in bun_migrations: got %d, want %d", rows, want)
			var locks int
			require.NoError(t, pools[0].NewSelect().Table("bun_migration_locks").ColumnExpr("count(*)").Scan(ctx, &locks))
			require.Equal(t, 0, locks, "migration locks left: got %d, want 0", locks)

			// A later start finds nothing to apply.
			again, err := db.Migrate(ctx, pools[1])
			require.NoError(t, err)
			require.Empty(t, again)
		})
	}
}

// TestStaleMigrationLockOnPostgres: a lock row left by a replica killed mid-migration does not
// block the next start on PostgreSQL (the advisory lock proves nobody else is migrating).
func TestStaleMigrationLockOnPostgres(t *testing.T) {
	ctx := context.Background()
	d := dbtest.Open(t, "postgres")
	_, err := d.ExecContext(ctx, "INSERT INTO bun_migration_locks (table_name) VALUES ('bun_migrations')")
	require.NoError(t, err)
	_, err = db.Migrate(ctx, d)
	require.NoError(t, err)
}

// TestPoolOptionsOnPostgres: the statement timeout reaches every pooled connection and
// cancels a longer statement; a timeout in the URL wins.
func TestPoolOptionsOnPostgres(t *testing.T) {
	ctx := context.Background()
	u := dbtest.URL(t, "postgres")
	d, err := db.Open(ctx, u, db.Options{MaxOpenConns: 4, StatementTimeout: 150 * time.Millisecond})
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, 4, d.Stats().MaxOpenConnections)

	var conns []bun.Conn
	for range 3 {
		c, err := d.Conn(ctx)
		require.NoError(t, err)
		conns = append(conns, c)
		var got string
		require.NoError(t, c.QueryRowContext(ctx, "SHOW statement_timeout").Scan(&got))
		require.Equal(t, "150ms", got)
	}
	for _, c := range conns {
		c.Close()
	}
	_, err = d.ExecContext(ctx, "SELECT pg_sleep(5)")
	require.Error(t, err)
	require.Contains(t, err.Error(), "statement timeout")

	d2, err := db.Open(ctx, u+"&statement_timeout=2500", db.Options{StatementTimeout: time.Second})
	require.NoError(t, err)
	defer d2.Close()
	var got string
	require.NoError(t, d2.QueryRowContext(ctx, "SHOW statement_timeout").Scan(&got))
	require.Equal(t, "2500ms", got)
}

// TestBadPostgresURLHidesPassword: a malformed DATABASE_URL fails without echoing it.
func TestBadPostgresURLHidesPassword(t *testing.T) {
	_, err := db.Open(context.Background(), "postgres://u:hunter2secret@[::1:5432/x", db.Options{})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2secret")
	require.Contains(t, err.Error(), "DATABASE_URL")
}
