package migrations

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Storage quotas (issue 34 §1, QT-1, MS-3). quota_usage keeps per space, quota and scope key
// (a scope kind, a conversation's keyed hash, a knowledge base id, or ” for the whole space)
// how much is stored. Triggers on the counted tables change it inside the very statement
// that inserts, resizes or deletes a row, so the count moves under the same row locks and in
// the same transaction as the write on both databases, whatever path writes (API, sweeps,
// erasure). An increase that takes a count past its limit (features.quotas, read by the
// trigger from the stored features document, else the default written here) aborts the
// statement with the message "quota_exceeded:<quota>": nothing of the write stays. The
// defaults must equal internal/quotas' (a test checks). A keyed count that falls to zero is
// deleted, so no conversation hash outlives its turns.
//
// usage_samples keeps one sample per space, day (YYYY-MM-DD, UTC) and quota of the
// space-wide counts, for the Console's 30-day chart.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := execDDL(ctx, db, `CREATE TABLE quota_usage (
	space_id TEXT NOT NULL,
	quota TEXT NOT NULL,
	scope_key TEXT NOT NULL,
	used BIGINT NOT NULL,
	PRIMARY KEY (space_id, quota, scope_key)
);
CREATE TABLE usage_samples (
	space_id TEXT NOT NULL,
	day TEXT NOT NULL,
	quota TEXT NOT NULL,
	used BIGINT NOT NULL,
	PRIMARY KEY (space_id, day, quota)
);
INSERT INTO quota_usage (space_id, quota, scope_key, used)
SELECT space_id, 'states_per_space', '', count(*) FROM agent_states GROUP BY space_id;
INSERT INTO quota_usage (space_id, quota, scope_key, used)
SELECT space_id, 'states_per_scope_kind', scope_kind, count(*) FROM agent_states GROUP BY space_id, scope_kind;
INSERT INTO quota_usage (space_id, quota, scope_key, used)
SELECT space_id, 'state_bytes_per_space', '', SUM(bytes) FROM agent_states GROUP BY space_id;
INSERT INTO quota_usage (space_id, quota, scope_key, used)
SELECT space_id, 'turns_per_space', '', count(*) FROM turns GROUP BY space_id;
INSERT INTO quota_usage (space_id, quota, scope_key, used)
SELECT space_id, 'turns_per_conversation', scope_hash, count(*) FROM turns GROUP BY space_id, scope_hash;
INSERT INTO quota_usage (space_id, quota, scope_key, used)
SELECT space_id, 'documents_per_base', kb_id, count(*) FROM knowledge_documents WHERE status IN ('pending', 'ready') GROUP BY space_id, kb_id;
INSERT INTO quota_usage (space_id, quota, scope_key, used)
SELECT space_id, 'chunks_per_base', kb_id, count(*) FROM knowledge_chunks GROUP BY space_id, kb_id`); err != nil {
			return err
		}
		stmts := sqliteQuotaTriggers()
		if db.Dialect().Name() == dialect.PG {
			stmts = pgQuotaTriggers()
		}
		for _, s := range stmts {
			if _, err := db.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("migrations: quotas: %w\n%s", err, s)
			}
		}
		return nil
	}, func(ctx context.Context, db *bun.DB) error {
		drop := `DROP TRIGGER IF EXISTS agent_states_quota_insert;
DROP TRIGGER IF EXISTS agent_states_quota_update;
DROP TRIGGER IF EXISTS agent_states_quota_delete;
DROP TRIGGER IF EXISTS turns_quota_insert;
DROP TRIGGER IF EXISTS turns_quota_delete;
DROP TRIGGER IF EXISTS knowledge_documents_quota_insert;
DROP TRIGGER IF EXISTS knowledge_documents_quota_update;
DROP TRIGGER IF EXISTS knowledge_documents_quota_delete;
DROP TRIGGER IF EXISTS knowledge_chunks_quota_insert;
DROP TRIGGER IF EXISTS knowledge_chunks_quota_delete`
		if db.Dialect().Name() == dialect.PG {
			drop = `DROP TRIGGER IF EXISTS quota ON agent_states;
DROP TRIGGER IF EXISTS quota ON turns;
DROP TRIGGER IF EXISTS quota ON knowledge_documents;
DROP TRIGGER IF EXISTS quota ON knowledge_chunks;
DROP FUNCTION IF EXISTS agent_states_quota();
DROP FUNCTION IF EXISTS turns_quota();
DROP FUNCTION IF EXISTS knowledge_documents_quota();
DROP FUNCTION IF EXISTS knowledge_chunks_quota();
DROP FUNCTION IF EXISTS quota_add(TEXT, TEXT, TEXT, BIGINT, TEXT[], BIGINT)`
		}
		return execDDL(ctx, db, drop+`;
DROP TABLE usage_samples;
DROP TABLE quota_usage`)
	})
}

// Default limits as of this migration (internal/quotas.Defaults must match).
const (
	defStates       = 100000
	defStatesByKind = 100000
	defStateBytes   = 1 << 30
	defTurnsPerConv = 10000
	defTurnsSpace   = 1000000
	defDocsPerBase  = 10000
	defChunksBase   = 500000
)

// quotaCount is one count a trigger moves for a row r (NEW or OLD): the quota's name, the SQL
// expressions of its scope key and of the change, the name of its limit in the features
// document (the member of quotas; a per-kind limit names the kind's member below it) and the
// default limit.
type quotaCount struct {
	r, quota, key, delta string
	limit                []string // path below features.quotas; a "$kind" element is r.scope_kind
	def                  int64
}

// quotaEvent is one trigger event of a table: INSERT, UPDATE (of column) or DELETE, a
// condition on the row (SQL, may be empty) and the counts it moves.
type quotaEvent struct {
	event, when string
	counts      []quotaCount
}

// quotaTable is a counted table and its events.
type quotaTable struct {
	table  string
	events []quotaEvent
}

// quotaTables lists every counted table (issue 34 §1): agent_states (states per space, per
// scope kind, bytes per space), turns (per space, per conversation or task), knowledge
// documents that are live (pending or ready) and chunks, per base. Boards, when they exist,
// add their table here in a migration of their own.
func quotaTables() []quotaTable {
	live := "IN ('pending', 'ready')"
	states := func(r, one, bytes string) []quotaCount {
		return []quotaCount{
			{r, "states_per_space", "''", one, []string{"states_per_space"}, defStates},
			{r, "states_per_scope_kind", r + ".scope_kind", one, []string{"states_per_scope_kind", "$kind"}, defStatesByKind},
			{r, "state_bytes_per_space", "''", bytes, []string{"state_bytes_per_space"}, defStateBytes},
		}
	}
	turns := func(r, one string) []quotaCount {
		return []quotaCount{
			{r, "turns_per_space", "''", one, []string{"turns_per_space"}, defTurnsSpace},
			{r, "turns_per_conversation", r + ".scope_hash", one, []string{"turns_per_conversation"}, defTurnsPerConv},
		}
	}
	docs := func(r, one string) []quotaCount {
		return []quotaCount{{r, "documents_per_base", r + ".kb_id", one, []string{"documents_per_base"}, defDocsPerBase}}
	}
	chunks := func(r, one string) []quotaCount {
		return []quotaCount{{r, "chunks_per_base", r + ".kb_id", one, []string{"chunks_per_base"}, defChunksBase}}
	}
	return []quotaTable{
		{"agent_states", []quotaEvent{
			{"INSERT", "", states("NEW", "1", "NEW.bytes")},
			{"UPDATE OF bytes", "NEW.bytes <> OLD.bytes", states("NEW", "", "NEW.bytes - OLD.bytes")[2:]},
			{"DELETE", "", states("OLD", "-1", "-OLD.bytes")},
		}},
		{"turns", []quotaEvent{{"INSERT", "", turns("NEW", "1")}, {"DELETE", "", turns("OLD", "-1")}}},
		{"knowledge_documents", []quotaEvent{
			{"INSERT", "NEW.status " + live, docs("NEW", "1")},
			{"UPDATE OF status", "(NEW.status " + live + ") <> (OLD.status " + live + ")", docs("NEW", "CASE WHEN NEW.status "+live+" THEN 1 ELSE -1 END")},
			{"DELETE", "OLD.status " + live, docs("OLD", "-1")},
		}},
		{"knowledge_chunks", []quotaEvent{{"INSERT", "", chunks("NEW", "1")}, {"DELETE", "", chunks("OLD", "-1")}}},
	}
}

// triggerName is SQLite's name of table's trigger on event.
func triggerName(table, event string) string {
	return table + "_quota_" + strings.ToLower(strings.Fields(event)[0])
}

// sqliteQuotaTriggers returns SQLite's triggers: each adds its counts; a count that went up
// past its limit aborts the statement (RAISE(ABORT), undoing the statement whole), and a
// keyed count at zero is deleted.
func sqliteQuotaTriggers() []string { return sqliteQuotaTriggersOf(quotaTables()) }

// sqliteQuotaTriggersOf is sqliteQuotaTriggers over tables (a later migration counts a table
// of its own with it).
func sqliteQuotaTriggersOf(tables []quotaTable) []string {
	var out []string
	for _, t := range tables {
		for _, e := range t.events {
			var b strings.Builder
			fmt.Fprintf(&b, "CREATE TRIGGER %s AFTER %s ON %s", triggerName(t.table, e.event), e.event, t.table)
			if e.when != "" {
				b.WriteString(" WHEN " + e.when)
			}
			b.WriteString(" BEGIN\n")
			for _, c := range e.counts {
				space := c.r + ".space_id"
				fmt.Fprintf(&b, "INSERT INTO quota_usage (space_id, quota, scope_key, used) VALUES (%s, '%s', %s, %s) ON CONFLICT (space_id, quota, scope_key) DO UPDATE SET used = used + excluded.used;\n",
					space, c.quota, c.key, c.delta)
				fmt.Fprintf(&b, "SELECT RAISE(ABORT, 'quota_exceeded:%s') WHERE (%s) > 0 AND (SELECT used FROM quota_usage WHERE space_id = %s AND quota = '%s' AND scope_key = %s) > COALESCE((SELECT json_extract(body, %s) FROM documents WHERE space_id = %s AND name = 'features'), %d);\n",
					c.quota, c.delta, space, c.quota, c.key, sqlitePath(c), space, c.def)
				fmt.Fprintf(&b, "DELETE FROM quota_usage WHERE space_id = %s AND quota = '%s' AND scope_key = %s AND scope_key <> '' AND used <= 0;\n",
					space, c.quota, c.key)
			}
			b.WriteString("END")
			out = append(out, b.String())
		}
	}
	return out
}

// sqlitePath is c's limit as a json_extract path expression.
func sqlitePath(c quotaCount) string {
	p := "'$.quotas"
	for _, el := range c.limit {
		if el == "$kind" {
			p += ".' || " + c.r + ".scope_kind || '"
			continue
		}
		p += "." + el
	}
	return p + "'"
}

// pgPath is c's limit as a text[] path expression for #>>.
func pgPath(c quotaCount) string {
	els := []string{"'quotas'"}
	for _, el := range c.limit {
		if el == "$kind" {
			els = append(els, c.r+".scope_kind")
			continue
		}
		els = append(els, "'"+el+"'")
	}
	return "ARRAY[" + strings.Join(els, ", ") + "]"
}

// pgQuotaFunction is quota_add, PostgreSQL's one count: the upsert (its row lock held to the
// transaction's end), then for an increase the limit check (an exception aborts the
// statement and the transaction), for a decrease the removal of a keyed count at zero.
const pgQuotaFunction = `CREATE FUNCTION quota_add(p_space TEXT, p_quota TEXT, p_key TEXT, p_delta BIGINT, p_path TEXT[], p_default BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	n BIGINT;
	lim BIGINT;
BEGIN
	INSERT INTO quota_usage (space_id, quota, scope_key, used) VALUES (p_space, p_quota, p_key, p_delta)
	ON CONFLICT (space_id, quota, scope_key) DO UPDATE SET used = quota_usage.used + excluded.used RETURNING used INTO n;
	IF p_delta > 0 THEN
		SELECT (body::jsonb #>> p_path)::bigint INTO lim FROM documents WHERE space_id = p_space AND name = 'features';
		IF n > COALESCE(lim, p_default) THEN
			RAISE EXCEPTION 'quota_exceeded:%', p_quota USING ERRCODE = 'check_violation';
		END IF;
	ELSIF n <= 0 AND p_key <> '' THEN
		DELETE FROM quota_usage WHERE space_id = p_space AND quota = p_quota AND scope_key = p_key AND used <= 0;
	END IF;
END $$`

// pgQuotaTriggers returns PostgreSQL's function quota_add, one trigger function per counted
// table and its row trigger.
func pgQuotaTriggers() []string {
	return append([]string{pgQuotaFunction}, pgQuotaTriggersOf(quotaTables())...)
}

// pgQuotaTriggersOf is pgQuotaTriggers over tables without quota_add (a later migration
// counts a table of its own with it).
func pgQuotaTriggersOf(tables []quotaTable) []string {
	var out []string
	for _, t := range tables {
		var b strings.Builder
		var events []string
		fmt.Fprintf(&b, "CREATE FUNCTION %s_quota() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n", t.table)
		for i, e := range t.events {
			op := strings.Fields(e.event)[0]
			events = append(events, e.event)
			kw := "ELSIF"
			if i == 0 {
				kw = "IF"
			}
			cond := "TG_OP = '" + op + "'"
			if e.when != "" {
				cond += " AND " + e.when
			}
			fmt.Fprintf(&b, "%s %s THEN\n", kw, cond)
			for _, c := range e.counts {
				fmt.Fprintf(&b, "\tPERFORM quota_add(%s.space_id, '%s', %s, (%s)::bigint, %s, %d);\n", c.r, c.quota, c.key, c.delta, pgPath(c), c.def)
			}
		}
		b.WriteString("END IF;\nRETURN NULL;\nEND $$")
		out = append(out, b.String(), fmt.Sprintf("CREATE TRIGGER quota AFTER %s ON %s FOR EACH ROW EXECUTE FUNCTION %s_quota()",
			strings.Join(events, " OR "), t.table, t.table))
	}
	return out
}
