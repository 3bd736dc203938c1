package migrations

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Receipt pages (issue 16, block read on SQLite). Every group commit of receipts writes each
// page it changed to SQLite's WAL, whole, and the block read's rate is bound by that commit.
// Two of those pages held nothing a reader needs:
//   - receipts.n was INTEGER PRIMARY KEY AUTOINCREMENT, which rewrites sqlite_sequence in
//     every insert statement. A plain INTEGER PRIMARY KEY numbers rows the same way (one more
//     than the largest), in insertion order, which is all n is for (the sealer's order);
//   - receipt_batches, keyed by (space_id, seq), was a rowid table plus the index of that
//     key: WITHOUT ROWID keeps the rows in that key's b-tree alone.
//
// The same columns, rows, keys and indexes otherwise. PostgreSQL has neither cost (n is a
// BIGSERIAL; a table's primary key is its one index): nothing changes there.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.SQLite {
			return nil
		}
		return execDDL(ctx, db, `
CREATE TABLE receipts_paged (
	n INTEGER PRIMARY KEY,
	space_id TEXT NOT NULL,
	seq BIGINT,
	id TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	action TEXT NOT NULL,
	actor_key_id TEXT NOT NULL,
	object_ids TEXT NOT NULL,
	detail TEXT NOT NULL,
	at TIMESTAMP NOT NULL,
	prev_hash TEXT NOT NULL DEFAULT '',
	hash TEXT NOT NULL DEFAULT '',
	UNIQUE (space_id, seq)
);
INSERT INTO receipts_paged (n, space_id, seq, id, kind, action, actor_key_id, object_ids, detail, at, prev_hash, hash)
	SELECT n, space_id, seq, id, kind, action, actor_key_id, object_ids, detail, at, prev_hash, hash FROM receipts;
DROP TABLE receipts;
ALTER TABLE receipts_paged RENAME TO receipts;
CREATE INDEX receipts_unsealed ON receipts (space_id, n) WHERE seq IS NULL;
CREATE TABLE receipt_batches_paged (
	space_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	first_seq BIGINT NOT NULL,
	version INTEGER NOT NULL,
	root TEXT NOT NULL,
	prev_hash TEXT NOT NULL,
	hash TEXT NOT NULL,
	at TIMESTAMP NOT NULL,
	PRIMARY KEY (space_id, seq)
) WITHOUT ROWID;
INSERT INTO receipt_batches_paged (space_id, seq, first_seq, version, root, prev_hash, hash, at)
	SELECT space_id, seq, first_seq, version, root, prev_hash, hash, at FROM receipt_batches;
DROP TABLE receipt_batches;
ALTER TABLE receipt_batches_paged RENAME TO receipt_batches`)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.SQLite {
			return nil
		}
		return execDDL(ctx, db, `
CREATE TABLE receipts_sequenced (
	n INTEGER PRIMARY KEY AUTOINCREMENT,
	space_id TEXT NOT NULL,
	seq BIGINT,
	id TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	action TEXT NOT NULL,
	actor_key_id TEXT NOT NULL,
	object_ids TEXT NOT NULL,
	detail TEXT NOT NULL,
	at TIMESTAMP NOT NULL,
	prev_hash TEXT NOT NULL DEFAULT '',
	hash TEXT NOT NULL DEFAULT '',
	UNIQUE (space_id, seq)
);
INSERT INTO receipts_sequenced (n, space_id, seq, id, kind, action, actor_key_id, object_ids, detail, at, prev_hash, hash)
	SELECT n, space_id, seq, id, kind, action, actor_key_id, object_ids, detail, at, prev_hash, hash FROM receipts;
DROP TABLE receipts;
ALTER TABLE receipts_sequenced RENAME TO receipts;
CREATE INDEX receipts_unsealed ON receipts (space_id, n) WHERE seq IS NULL;
CREATE TABLE receipt_batches_rowid (
	space_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	first_seq BIGINT NOT NULL,
	version INTEGER NOT NULL,
	root TEXT NOT NULL,
	prev_hash TEXT NOT NULL,
	hash TEXT NOT NULL,
	at TIMESTAMP NOT NULL,
	PRIMARY KEY (space_id, seq)
);
INSERT INTO receipt_batches_rowid (space_id, seq, first_seq, version, root, prev_hash, hash, at)
	SELECT space_id, seq, first_seq, version, root, prev_hash, hash, at FROM receipt_batches;
DROP TABLE receipt_batches;
ALTER TABLE receipt_batches_rowid RENAME TO receipt_batches`)
	})
}
