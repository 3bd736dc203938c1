package migrations

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// feedCapture is one table whose changes the export feed records (issue 33, EXP-1): its name
// in the feed, its key column as SQL over the row (OLD or NEW), and optional conditions on
// inserts and updates (empty: every one). Fixed here, as a shipped migration must be; a later
// table (boards) is captured by a later migration with the same shape.
type feedCapture struct {
	table, name, key       string
	insertWhen, updateWhen string
}

// feedCaptures are the tables of the first export feed. A receipt is captured when it becomes
// an entry of the chain (its seq is set), not while it waits unsealed; a key's last_used_at
// stamp alone is no change of the key.
var feedCaptures = []feedCapture{
	{table: "notes", name: "notes", key: "id"},
	{table: "note_proposals", name: "proposals", key: "id"},
	{table: "proposal_decisions", name: "decisions", key: "id"},
	{table: "receipts", name: "receipts", key: "id", insertWhen: "NEW.seq IS NOT NULL",
		updateWhen: "OLD.seq IS NULL AND NEW.seq IS NOT NULL"},
	{table: "receipt_batches", name: "receipt_checkpoints", key: "CAST(%s.seq AS TEXT)"},
	{table: "knowledge_bases", name: "knowledge_bases", key: "id"},
	{table: "knowledge_documents", name: "knowledge_documents", key: "id"},
	{table: "knowledge_chunks", name: "knowledge_chunks", key: "id"},
	{table: "agent_states", name: "agent_states", key: "id"},
	{table: "api_keys", name: "keys", key: "id",
		updateWhen: "OLD.revoked_at IS NOT NEW.revoked_at OR OLD.name IS NOT NEW.name OR OLD.roles IS NOT NEW.roles OR OLD.scopes IS NOT NEW.scopes"},
	{table: "document_changes", name: "change_requests", key: "id"},
	{table: "documents", name: "documents", key: "name"},
}

// keyOf is the key expression of c over the row alias (OLD or NEW).
func (c feedCapture) keyOf(row string) string {
	if strings.Contains(c.key, "%s") {
		return fmt.Sprintf(c.key, row)
	}
	return "CAST(" + row + "." + c.key + " AS TEXT)"
}

// Export feed (issue 33, EXP-1): feed_changes holds one row per change of an exported row
// (the feed name of its table, its key, upsert or delete), written by triggers in the
// transaction of the change itself, so a record exists if and only if its change committed,
// whatever code path wrote it. The row's content is not copied: the feed reads it from the
// table when it is read (internal/feed). position is the record's cursor, strictly increasing
// per space, assigned after commit by the feed's sequencer under the space's feed_heads row;
// seq only orders records for the sequencer. changed_us is the change's time in Unix
// microseconds (SQLite: milliseconds' precision).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := execDDL(ctx, db, `CREATE TABLE feed_changes (
	seq {{serial}},
	space_id TEXT NOT NULL,
	tbl TEXT NOT NULL,
	pk TEXT NOT NULL,
	op TEXT NOT NULL,
	changed_us BIGINT NOT NULL,
	position BIGINT
);
CREATE INDEX feed_changes_pending ON feed_changes (space_id, seq) WHERE position IS NULL;
CREATE UNIQUE INDEX feed_changes_position ON feed_changes (space_id, position) WHERE position IS NOT NULL;
CREATE TABLE feed_heads (
	space_id TEXT PRIMARY KEY,
	position BIGINT NOT NULL
)`); err != nil {
			return err
		}
		for _, c := range feedCaptures {
			if err := createCapture(ctx, db, c); err != nil {
				return err
			}
		}
		return nil
	}, func(ctx context.Context, db *bun.DB) error {
		pg := db.Dialect().Name() == dialect.PG
		for _, c := range feedCaptures {
			for _, op := range []string{"ins", "upd", "del"} {
				if _, err := db.ExecContext(ctx, "DROP TRIGGER IF EXISTS feed_"+c.table+"_"+op+onTable(pg, c.table)); err != nil {
					return fmt.Errorf("migrations: %w", err)
				}
			}
			if pg {
				if _, err := db.ExecContext(ctx, "DROP FUNCTION IF EXISTS feed_capture_"+c.table+"()"); err != nil {
					return fmt.Errorf("migrations: %w", err)
				}
			}
		}
		return execDDL(ctx, db, `DROP TABLE feed_heads;
DROP TABLE feed_changes`)
	})
}

// onTable is " ON table" on PostgreSQL (DROP TRIGGER names the table there), "" on SQLite.
func onTable(pg bool, table string) string {
	if pg {
		return " ON " + table
	}
	return ""
}

// createCapture creates c's triggers: on PostgreSQL one plpgsql function (per table, with
// static column references, so a hot table pays one insert and no dynamic SQL) fired after
// each insert, update and delete; on SQLite three triggers with the insert inline.
func createCapture(ctx context.Context, db *bun.DB, c feedCapture) error {
	pg := db.Dialect().Name() == dialect.PG
	var stmts []string
	if pg {
		stmts = append(stmts, `CREATE FUNCTION feed_capture_`+c.table+`() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'DELETE' THEN
		INSERT INTO feed_changes (space_id, tbl, pk, op, changed_us)
		VALUES (OLD.space_id, '`+c.name+`', `+c.keyOf("OLD")+`, 'delete', CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT));
		RETURN OLD;
	END IF;
	INSERT INTO feed_changes (space_id, tbl, pk, op, changed_us)
	VALUES (NEW.space_id, '`+c.name+`', `+c.keyOf("NEW")+`, 'upsert', CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT));
	RETURN NEW;
END $$`)
	}
	for _, t := range []struct{ op, event, when, row, kind string }{
		{"ins", "INSERT", c.insertWhen, "NEW", "upsert"},
		{"upd", "UPDATE", c.updateWhen, "NEW", "upsert"},
		{"del", "DELETE", "", "OLD", "delete"},
	} {
		when := ""
		if t.when != "" {
			w := t.when
			if pg {
				w = strings.ReplaceAll(w, " IS NOT ", " IS DISTINCT FROM ")
			}
			when = " WHEN (" + w + ")"
		}
		name := "feed_" + c.table + "_" + t.op
		if pg {
			stmts = append(stmts, "CREATE TRIGGER "+name+" AFTER "+t.event+" ON "+c.table+" FOR EACH ROW"+when+
				" EXECUTE FUNCTION feed_capture_"+c.table+"()")
			continue
		}
		stmts = append(stmts, "CREATE TRIGGER "+name+" AFTER "+t.event+" ON "+c.table+" FOR EACH ROW"+when+
			" BEGIN INSERT INTO feed_changes (space_id, tbl, pk, op, changed_us) VALUES ("+t.row+".space_id, '"+c.name+"', "+
			c.keyOf(t.row)+", '"+t.kind+"', CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)); END")
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("migrations: feed capture of %s: %w\n%s", c.table, err, s)
		}
	}
	return nil
}
