// Package db opens the service's store: SQLite (the embedded default, pure Go) or PostgreSQL,
// both through bun, and applies the migrations.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" database/sql driver
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"
	"github.com/uptrace/bun/migrate"
	_ "modernc.org/sqlite/vec" // sqlite-vec (vec0) on every SQLite connection: knowledge vectors

	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/migrations"
)

// Options tune a PostgreSQL connection pool; SQLite ignores them (it keeps its own small pool
// of 8). Build them with PoolOptions, which every opener of the service uses, so that what
// runs is what the configuration says and what tests and benchmarks measure.
type Options struct {
	// MaxOpenConns caps PostgreSQL connections (0: 20).
	MaxOpenConns int
	// MaxIdleConns is how many connections stay open while idle, with the meaning of
	// AGENTMEMORY_DB_MAX_IDLE_CONNS: a count from 0 (keep none: every statement then opens a
	// new PostgreSQL session) to MaxOpenConns (larger is capped), or -1 for "same as
	// MaxOpenConns". The zero value keeps none: use PoolOptions.
	MaxIdleConns int
	// ConnMaxLifetime recycles a connection after this long (0: never).
	ConnMaxLifetime time.Duration
	// StatementTimeout is set as PostgreSQL's statement_timeout on every connection when
	// the URL does not set one itself (0: the server's default, usually no limit).
	StatementTimeout time.Duration
}

// DefaultMaxOpenConns is the PostgreSQL pool size when Options.MaxOpenConns is 0.
const DefaultMaxOpenConns = 20

// PoolOptions is the pool configuration of cfg (AGENTMEMORY_DB_MAX_OPEN_CONNS,
// AGENTMEMORY_DB_MAX_IDLE_CONNS, AGENTMEMORY_DB_CONN_MAX_LIFETIME,
// AGENTMEMORY_DB_STATEMENT_TIMEOUT). Every opener of the service, and the test helpers and
// benchmarks that measure it, build their Options here (issue 11 §2).
func PoolOptions(cfg config.Config) Options {
	return Options{
		MaxOpenConns: cfg.DBMaxOpenConns, MaxIdleConns: cfg.DBMaxIdleConns,
		ConnMaxLifetime: cfg.DBConnMaxLifetime, StatementTimeout: cfg.DBStatementTimeout,
	}
}

// pool resolves o's open and idle limits as Open applies them to a PostgreSQL pool:
// MaxOpenConns 0 is DefaultMaxOpenConns; MaxIdleConns -1 (any negative) is the open limit, a
// count above it is capped, 0 keeps none.
func (o Options) pool() (open, idle int) {
	open = o.MaxOpenConns
	if open <= 0 {
		open = DefaultMaxOpenConns
	}
	idle = o.MaxIdleConns
	if idle < 0 || idle > open {
		idle = open
	}
	return open, idle
}

// Open connects to the database named by rawURL: "postgres://..." or "postgresql://..." for
// PostgreSQL; "sqlite://PATH", "file:PATH" or a bare path for SQLite (created if missing, WAL
// journal, immediate transactions; the process's writers queue on the file's write gate and
// its WAL is checkpointed in the background, sqlitegate.go). It pings before returning.
func Open(ctx context.Context, rawURL string, opt Options) (*bun.DB, error) {
	var db *bun.DB
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		cc, err := pgx.ParseConfig(rawURL)
		if err != nil {
			// The parse error would echo the URL, which may hold a password.
			return nil, errors.New("db: DATABASE_URL is not a valid PostgreSQL connection string")
		}
		if _, set := cc.RuntimeParams["statement_timeout"]; !set && opt.StatementTimeout > 0 {
			cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(opt.StatementTimeout.Milliseconds(), 10)
		}
		if !strings.Contains(rawURL, "default_query_exec_mode") {
			// bun interpolates every value into the SQL text, so each statement is new: pgx's
			// default (prepare and cache every new text) would cost an extra round trip per
			// statement and fill its cache. The simple protocol runs it in one round trip;
			// statements prepared explicitly (sql.DB.Prepare) still run prepared.
			cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		}
		sqldb := stdlib.OpenDB(*cc)
		open, idle := opt.pool()
		sqldb.SetMaxOpenConns(open)
		sqldb.SetMaxIdleConns(idle)
		sqldb.SetConnMaxLifetime(opt.ConnMaxLifetime)
		db = bun.NewDB(sqldb, pgdialect.New())
	default:
		path := strings.TrimPrefix(strings.TrimPrefix(rawURL, "sqlite://"), "file:")
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		if path == "" {
			return nil, errors.New("db: empty sqlite path")
		}
		// Every connection queues its writes on the file's gate (sqlitegate.go) instead of
		// sleeping in SQLite's busy handler.
		sqldb := sql.OpenDB(newGatedConnector(sqliteshim.Driver(), path, SQLiteDSN(path)))
		sqldb.SetMaxOpenConns(8)
		sqldb.SetMaxIdleConns(8)
		db = bun.NewDB(sqldb, sqlitedialect.New())
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close() // the ping error is the one to report
		return nil, fmt.Errorf("db: ping: %w", err)
	}
	return db, nil
}

// SQLiteDSN is the data source name used for a SQLite file: WAL with synchronous=NORMAL
// (survives a process crash), a busy timeout (for other processes' writers: this one's queue
// on the write gate), foreign keys, secure_delete (erased rows leave no cleartext in free
// pages), a WAL size limit (journal_size_limit), the automatic checkpoint as a backstop only,
// and BEGIN IMMEDIATE for every transaction.
func SQLiteDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "secure_delete(ON)")
	// The WAL is truncated back to 64 MiB after a checkpoint (it grew to 409 MB in a load
	// run without a limit). Checkpoints run in the background after writes (sqlitegate.go);
	// the automatic one, inside the commit that crosses it, is only a backstop at 10000 pages.
	q.Add("_pragma", "journal_size_limit(67108864)")
	q.Add("_pragma", "wal_autocheckpoint(10000)")
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// IsSQLite reports whether db runs on SQLite.
func IsSQLite(db bun.IDB) bool {
	return db.Dialect().Name() == dialect.SQLite
}

// Migrate applies every pending migration and returns the names applied. It is safe to run
// from several replicas at once: on PostgreSQL the replicas queue on a session advisory lock
// (keyed by the current schema, released by the server if a replica dies) around bun's
// migration tables and lock; on SQLite they retry bun's migration lock until ctx ends or a
// minute passes. A replica that waited finds nothing left to apply.
func Migrate(ctx context.Context, db *bun.DB) ([]string, error) {
	m := migrate.NewMigrator(db, migrations.Migrations)
	if !IsSQLite(db) {
		conn, err := db.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("db: migration lock: %w", err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(hashtextextended('agentmemory.migrate.' || current_schema(), 0))"); err != nil {
			return nil, fmt.Errorf("db: migration lock: %w", err)
		}
		defer func() {
			// A session lock: PostgreSQL drops it with the connection if the unlock fails.
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtextextended('agentmemory.migrate.' || current_schema(), 0))")
		}()
		if err := m.Init(ctx); err != nil {
			return nil, fmt.Errorf("db: init migrations: %w", err)
		}
		// Under the advisory lock no other replica migrates: a lock row left by a replica
		// killed mid-migration is stale.
		if err := m.Unlock(ctx); err != nil {
			return nil, fmt.Errorf("db: clear stale migration lock: %w", err)
		}
		return migrateLocked(ctx, m)
	}
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("db: init migrations: %w", err)
	}
	return migrateLocked(ctx, m)
}

// migrateLocked takes bun's migration lock (retrying while another process holds it), applies
// the pending migrations and releases the lock.
func migrateLocked(ctx context.Context, m *migrate.Migrator) ([]string, error) {
	deadline := time.Now().Add(time.Minute)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		err := m.Lock(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("db: lock migrations: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("db: lock migrations: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
	defer func() { _ = m.Unlock(context.WithoutCancel(ctx)) }() // a lock left behind is waited out by the next start (the loop above)
	group, err := m.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: migrate: %w", err)
	}
	var names []string
	for _, mig := range group.Migrations {
		names = append(names, mig.Name)
	}
	return names, nil
}
