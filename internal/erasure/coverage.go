package erasure

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
)

// TextTables lists, sorted, the tables of d (after migrating) that have a column able to hold
// text or bytes: on SQLite a declared type with TEXT, CHAR, CLOB or BLOB (or none), and every
// virtual table (full-text and vector indexes hold what they index); FTS shadow tables are
// left out (they belong to their virtual table). On PostgreSQL a column of type text,
// character varying, character, bytea, json, jsonb or tsvector in the current schema.
func TextTables(ctx context.Context, d *bun.DB) ([]string, error) {
	var tables []string
	if db.IsSQLite(d) {
		var list []struct {
			Name string `bun:"name"`
			Type string `bun:"type"`
		}
		if err := d.NewRaw("SELECT name, type FROM pragma_table_list WHERE schema = 'main' AND type IN ('table', 'virtual') AND name NOT LIKE 'sqlite_%'").Scan(ctx, &list); err != nil {
			return nil, fmt.Errorf("erasure: list tables: %w", err)
		}
		for _, t := range list {
			if t.Type == "virtual" {
				tables = append(tables, t.Name)
				continue
			}
			var types []string
			if err := d.NewRaw("SELECT type FROM pragma_table_info(?)", t.Name).Scan(ctx, &types); err != nil {
				return nil, fmt.Errorf("erasure: list columns: %w", err)
			}
			for _, ty := range types {
				if sqliteText(ty) {
					tables = append(tables, t.Name)
					break
				}
			}
		}
	} else {
		if err := d.NewRaw(`SELECT DISTINCT table_name FROM information_schema.columns WHERE table_schema = current_schema()
			AND data_type IN ('text', 'character varying', 'character', 'bytea', 'json', 'jsonb', 'tsvector')`).Scan(ctx, &tables); err != nil {
			return nil, fmt.Errorf("erasure: list columns: %w", err)
		}
	}
	sort.Strings(tables)
	return tables, nil
}

// sqliteText reports whether a declared SQLite column type has TEXT or BLOB affinity (an
// empty type has BLOB affinity).
func sqliteText(declared string) bool {
	t := strings.ToUpper(declared)
	return t == "" || strings.Contains(t, "TEXT") || strings.Contains(t, "CHAR") || strings.Contains(t, "CLOB") ||
		strings.Contains(t, "BLOB") || strings.Contains(t, "BYTEA")
}

// Tables returns the tables of covers, each once, in first-seen order.
func Tables(covers ...[]Column) []string {
	seen := map[string]bool{}
	var out []string
	for _, cs := range covers {
		for _, c := range cs {
			if !seen[c.Table] {
				seen[c.Table] = true
				out = append(out, c.Table)
			}
		}
	}
	return out
}

// Covers returns every registered eraser's Covers, in registration order, followed by
// extra (e.g. the agent-note SourceEraser's).
func (r *Registry) Covers(extra ...[]Column) []Column {
	var out []Column
	for _, e := range r.Erasers() {
		out = append(out, e.Covers()...)
	}
	for _, cs := range extra {
		out = append(out, cs...)
	}
	return out
}

// UncoveredTables returns the tables of tables (TextTables) that neither a registered eraser
// nor extra covers (any column of the table) and that are not in AllowedTables: a table that
// can hold text nobody erases. An empty answer is the check passing.
func (r *Registry) UncoveredTables(tables []string, extra ...[]Column) []string {
	covered := map[string]bool{}
	for _, t := range Tables(r.Covers(extra...)) {
		covered[t] = true
	}
	var out []string
	for _, t := range tables {
		if _, ok := map[string]string{}[t]; !ok && !covered[t] {
			out = append(out, t)
		}
	}
	return out
}
