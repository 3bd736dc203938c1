// Package migrations holds the schema as bun migrations, valid on SQLite and PostgreSQL. A
// migration never imports models, so a shipped migration stays fixed while models change.
package migrations

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// Migrations is the ordered set of schema migrations; db.Migrate applies it.
var Migrations = migrate.NewMigrations()

// execDDL runs statements separated by ";\n" after replacing the portable type names:
// {{blob}} (BLOB | BYTEA), {{ts}} (TIMESTAMP | TIMESTAMPTZ), {{json}} (TEXT | TEXT) and
// {{serial}} (an auto-incrementing integer primary key).
func execDDL(ctx context.Context, db *bun.DB, ddl string) error {
	r := strings.NewReplacer(
		"{{blob}}", "BLOB", "{{ts}}", "TIMESTAMP", "{{json}}", "TEXT",
		"{{serial}}", "INTEGER PRIMARY KEY AUTOINCREMENT",
	)
	if db.Dialect().Name() == dialect.PG {
		r = strings.NewReplacer(
			"{{blob}}", "BYTEA", "{{ts}}", "TIMESTAMPTZ", "{{json}}", "TEXT",
			"{{serial}}", "BIGSERIAL PRIMARY KEY",
		)
	}
	for _, stmt := range strings.Split(r.Replace(ddl), ";\n") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("migrations: %w\n%s", err, stmt)
		}
	}
	return nil
}
