// Package dbtest opens fresh, migrated databases for tests: a SQLite file in t.TempDir() and
// a PostgreSQL schema of its own on the development machine's server (127.0.0.1:5432, trust
// auth, database test; override with AGENTMEMORY_TEST_POSTGRES). Under -short (make
// test-short) every PostgreSQL database is skipped, with the reason, so the fast tests need no
// server; without -short a missing server fails the test.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db"
)

// PostgresURL is the base URL of the test PostgreSQL server.
func PostgresURL() string {
	if u := os.Getenv("AGENTMEMORY_TEST_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// Each runs fn once per database engine ("sqlite", "postgres") as a subtest, each with a
// fresh migrated database.
func Each(t *testing.T, fn func(t *testing.T, db *bun.DB)) {
	t.Helper()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			fn(t, Open(t, engine))
		})
	}
}

// Open returns a fresh migrated database of the engine ("sqlite" or "postgres") with the
// shipped pool configuration (Shipped), closed (and for PostgreSQL its schema dropped) when
// the test ends. URL returns its connection URL.
func Open(t testing.TB, engine string) *bun.DB {
	t.Helper()
	return OpenWith(t, engine, Shipped())
}

// OpenWith is Open with the pool configuration opt instead of the shipped one (a benchmark's
// tuned comparison).
func OpenWith(t testing.TB, engine string, opt db.Options) *bun.DB {
	t.Helper()
	u := URL(t, engine)
	ctx := context.Background()
	d, err := db.Open(ctx, u, opt)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close(d) }) // the test's database is thrown away
	_, err = db.Migrate(ctx, d)
	require.NoError(t, err)
	return d
}

// Shipped is the pool configuration the service ships with: db.PoolOptions of the
// configuration loaded from an empty environment. Test helpers, load tests and benchmarks
// open their databases with it so that a default can never differ from what is measured
// (issue 11 §2).
func Shipped() db.Options {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		panic(err) // the defaults are static: a failure is a programming error
	}
	return db.PoolOptions(cfg)
}

// URL creates an empty database of the engine and returns its URL: a SQLite file under
// t.TempDir(), or a new PostgreSQL schema selected through search_path. Under -short a
// PostgreSQL database skips the (sub)test instead (SkipPostgresShort).
func URL(t testing.TB, engine string) string {
	t.Helper()
	switch engine {
	case "sqlite":
		return "sqlite://" + filepath.Join(t.TempDir(), "agentmemory.db")
	case "postgres":
		SkipPostgresShort(t)
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "t_" + hex.EncodeToString(b[:])
		admin, err := sql.Open("pgx", PostgresURL())
		require.NoError(t, err)
		defer func() { _ = admin.Close() }() // a test helper's admin pool, used once
		_, err = admin.Exec("CREATE SCHEMA " + schema)
		require.NoError(t, err, "PostgreSQL must run at %s", PostgresURL())
		t.Cleanup(func() {
			admin, err := sql.Open("pgx", PostgresURL())
			if err == nil {
				_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE") // best effort: a test schema left behind holds only test rows
				_ = admin.Close()                                       // a test helper's admin pool, used once
			}
		})
		return PostgresURL() + "&search_path=" + schema
	default:
		t.Fatalf("dbtest: unknown engine %q", engine)
		return ""
	}
}

// SkipPostgresShort skips t under -short: make test-short runs without PostgreSQL, and make
// test runs every PostgreSQL test.
func SkipPostgresShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("PostgreSQL test skipped under -short (make test-short needs no PostgreSQL; make test runs it)")
	}
}
