package db_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/migrations"
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

// TestShippedPoolKeepsIdleConnections: with the shipped defaults (AGENTMEMORY_DB_MAX_IDLE_CONNS
// unset, i.e. -1) a PostgreSQL pool keeps its connections between statements: sequential
// statements reuse one session, and after a burst of concurrent ones the sessions stay open
// on the server (counted in pg_stat_activity by the pool's application_name). Issue 11 §2:
// the default once meant "keep none", a new session per statement.
func TestShippedPoolKeepsIdleConnections(t *testing.T) {
	ctx := context.Background()
	opt := dbtest.Shipped()
	u := dbtest.URL(t, "postgres")
	app := "am_pool_" + strings.ReplaceAll(t.Name(), "/", "_")
	d, err := db.Open(ctx, u+"&application_name="+app, opt)
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, 20, d.Stats().MaxOpenConnections)

	for range 20 {
		_, err := d.ExecContext(ctx, "SELECT 1")
		require.NoError(t, err)
	}
	st := d.Stats()
	require.Zero(t, st.MaxIdleClosed, "no connection may be closed for want of an idle slot")
	require.Equal(t, 1, st.OpenConnections, "sequential statements share one session")
	require.Equal(t, 1, st.Idle)

	// Five connections held at once, then released: all five stay open.
	const burst = 5
	var conns []bun.Conn
	for range burst {
		c, err := d.Conn(ctx)
		require.NoError(t, err)
		_, err = c.ExecContext(ctx, "SELECT 1")
		require.NoError(t, err)
		conns = append(conns, c)
	}
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
	st = d.Stats()
	require.Zero(t, st.MaxIdleClosed)
	require.Equal(t, burst, st.Idle)

	admin, err := db.Open(ctx, dbtest.PostgresURL(), opt)
	require.NoError(t, err)
	defer admin.Close()
	var backends int
	require.NoError(t, admin.QueryRowContext(ctx,
		"SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", app).Scan(&backends))
	require.Equal(t, burst, backends, "the idle sessions are still open on the server")
}

// TestPoolOptionsIdleMeaning: MaxIdleConns -1 is the open limit, 0 keeps none and a count
// above the open limit is capped, as database/sql then reports.
func TestPoolOptionsIdleMeaning(t *testing.T) {
	ctx := context.Background()
	u := dbtest.URL(t, "postgres")
	for _, tc := range []struct{ idle, wantIdle int }{{-1, 3}, {0, 0}, {2, 2}, {9, 3}} {
		d, err := db.Open(ctx, u, db.Options{MaxOpenConns: 3, MaxIdleConns: tc.idle})
		require.NoError(t, err)
		var conns []bun.Conn
		for range 3 {
			c, err := d.Conn(ctx)
			require.NoError(t, err)
			conns = append(conns, c)
		}
		for _, c := range conns {
			require.NoError(t, c.Close())
		}
		require.Equal(t, tc.wantIdle, d.Stats().Idle, "MaxIdleConns %d", tc.idle)
		require.NoError(t, d.Close())
	}
}

// TestBadPostgresURLHidesPassword: a malformed DATABASE_URL fails without echoing it.
func TestBadPostgresURLHidesPassword(t *testing.T) {
	_, err := db.Open(context.Background(), "postgres://u:hunter2secret@[::1:5432/x", db.Options{})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2secret")
	require.Contains(t, err.Error(), "DATABASE_URL")
}
