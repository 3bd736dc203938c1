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

// AllowedTables are the tables that can hold text or bytes but hold no personal data an
// erasure must remove, each with the reason (issue 29 §4). A table added by a migration is
// either covered by an eraser (an erasure.Eraser registered in app, or the agent-note
// SourceEraser) or listed here with its reason; otherwise the coverage test fails.
var AllowedTables = map[string]string{
	// Configuration and access, written by operators, not about customers.
	"spaces":            "a space's id and name, chosen by its operator",
	"operator_keys":     "a deployment operator's key labels and secret hashes (issue 34 §3): belong to no space, never about customers",
	"api_keys":          "key names (an operator's label), secret hashes and roles; a person key names staff, not customers",
	"documents":         "a space's configuration documents (features, object types, policies), written by its operator",
	"document_changes":  "the history of those configuration documents",
	"leases":            "lease rows of boards and working states: a target named by type and keyed hash, a lease id, a key id, a fencing token; never content",
	"knowledge_bases":   "knowledge base names and settings; documents naming a subject are the knowledge eraser's",
	"knowledge_readers": "who may read which knowledge base (a kind and an agent or key name)",
	"console_sessions":  "Console sign-in sessions of staff: a person key id, times and a one-shot notice",
	"console_form_uses": "used Console form tokens (replay protection), no content",
	// Proof and bookkeeping: ids, kinds, counts and hashes only, never a value.
	"erasures": "the erasure's own record: keyed hashes and ids it erased, kept as proof (GOV-2)",
	"erasure_findings": "what an erasure's content probe found (issue 29 §1b): store, item kind and id, a table " +
		"name, the match kind and a decision, never a value",
	"receipts":        "the receipt chain: ids, kinds, actors and counts, never a value (PR-1)",
	"receipt_batches": "the receipt chain's sealed entries (hashes over receipts)",
	"receipt_heads":   "the receipt chain's head per space",
	"receipt_log_leaves": "the deployment's receipt log (issue 32): a leaf index, a space id, a receipt seq and " +
		"its leaf hash",
	"receipt_log_hashes":  "the receipt log's stored tree hashes (hashes of hashes)",
	"receipt_checkpoints": "the receipt log's signed checkpoints: a tree size and root hash, signed",
	"receipt_manifests": "what a read delivered, named by receipts (issue 32): note and chunk ids, note versions, " +
		"the view, tags and token budget of the request; ids only, never content or a content hash",
	"space_revisions": "revision counters per space (names and numbers)",
	"note_source_counts": "the number of active notes per agent (an agent id and a count; AM-12: the note eraser " +
		"adjusts it)",
	"agent_state_floors": "the highest version removed per space and agent (an agent name and a number; WM-5: " +
		"versions never restart), never a scope or a value",
	"quota_usage": "storage counts per space, quota and key (a scope kind, a knowledge base id, or a conversation's " +
		"keyed hash, deleted by the turns trigger with the conversation's last turn; issue 34 §1); never a value",
	"usage_samples": "daily space-wide totals per quota (a day and a number) for the Console's usage chart",
	"agent_runs": "run budgets (CTX-3): the caller's run label, its owner (an agent source or key id) and token " +
		"counts, deleted after the run's TTL; never content",
	// Events: ids of notes and proposals, kinds and agents only; the outbox eraser probes
	// payloads for the target's hashes on every erasure.
	"outbox":             "events carry ids, kinds and agents only (probed by the outbox eraser)",
	"event_heads":        "the outbox relay's position per space",
	"relay_leases":       "which replica relays the outbox",
	"webhook_deliveries": "delivery attempts of outbox events to webhooks (event ids, status codes)",
	// The export feed (issue 33): which row of which table changed, never its content (the
	// feed reads a row from its table when read, so an erased row reads as a tombstone).
	"feed_changes": "the export feed's change records: a table name, a row's key (an id, a receipt's or a " +
		"checkpoint's number, a configuration document's name), upsert or delete; never content",
	"feed_heads":   "the export feed's last cursor per space",
	"export_sinks": "each export sink's name, kind, acknowledged cursor and last generic error; never a record",
	// The migration tool's own tables.
	"bun_migrations":      "applied migration names",
	"bun_migration_locks": "the migration lock",
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
		if _, ok := AllowedTables[t]; !ok && !covered[t] {
			out = append(out, t)
		}
	}
	return out
}
