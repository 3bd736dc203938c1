// Package db opens the service's store: SQLite (the embedded default, pure Go) or PostgreSQL,
// both through bun, and applies the migrations.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"
	"github.com/uptrace/bun/migrate"

	"agentmemory/migrations"
)

// Options tune a connection pool. Zero values take defaults.
type Options struct {
	// MaxOpenConns caps PostgreSQL connections (default 20).
	MaxOpenConns int
}

// Open connects to the database named by rawURL: "postgres://..." or "postgresql://..." for
// PostgreSQL; "sqlite://PATH", "file:PATH" or a bare path for SQLite (created if missing, WAL
// journal, immediate transactions so that concurrent writers wait instead of failing). It
// pings before returning.
func Open(ctx context.Context, rawURL string, opt Options) (*bun.DB, error) {
	var db *bun.DB
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		sqldb, err := sql.Open("pgx", rawURL)
		if err != nil {
			return nil, fmt.Errorf("db: open postgres: %w", err)
		}
		n := opt.MaxOpenConns
		if n <= 0 {
			n = 20
		}
		sqldb.SetMaxOpenConns(n)
		sqldb.SetMaxIdleConns(n)
		db = bun.NewDB(sqldb, pgdialect.New())
	default:
		path := strings.TrimPrefix(strings.TrimPrefix(rawURL, "sqlite://"), "file:")
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		if path == "" {
			return nil, errors.New("db: empty sqlite path")
		}
		sqldb, err := sql.Open(sqliteshim.ShimName, SQLiteDSN(path))
		if err != nil {
			return nil, fmt.Errorf("db: open sqlite: %w", err)
		}
		sqldb.SetMaxOpenConns(8)
		sqldb.SetMaxIdleConns(8)
		db = bun.NewDB(sqldb, sqlitedialect.New())
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("db: ping: %w", err)
	}
	return db, nil
}

// SQLiteDSN is the data source name used for a SQLite file: WAL with synchronous=NORMAL
// (survives a process crash), a busy timeout, foreign keys, secure_delete (erased rows leave
// no cleartext in free pages) and BEGIN IMMEDIATE for every transaction.
func SQLiteDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "secure_delete(ON)")
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// IsSQLite reports whether db runs on SQLite.
func IsSQLite(db bun.IDB) bool {
	return db.Dialect().Name() == dialect.SQLite
}

// Migrate applies every pending migration under bun's migration lock, so several replicas
// may start at once. It returns the names applied.
func Migrate(ctx context.Context, db *bun.DB) ([]string, error) {
	m := migrate.NewMigrator(db, migrations.Migrations)
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("db: init migrations: %w", err)
	}
	if err := m.Lock(ctx); err != nil {
		return nil, fmt.Errorf("db: lock migrations: %w", err)
	}
	defer m.Unlock(ctx) //nolint:errcheck
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
