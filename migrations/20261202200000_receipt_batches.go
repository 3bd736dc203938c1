package migrations

import (
	"context"
	"errors"

	"github.com/uptrace/bun"
)

// Receipt batches (issue 16, GOV-1). A receipt is written without touching the chain head and
// sealed later, many at a time, into one chain entry holding the Merkle root of its receipts:
//   - receipts: n numbers rows in insertion order (the sealer's order); seq, the receipt's
//     position in the space's chain, stays NULL until the receipt is sealed; hash is then its
//     leaf hash. prev_hash is kept for the receipts chained one by one before this migration.
//   - receipt_batches: the chain itself, one row per entry, seq being the seq of its last
//     receipt (first_seq its first). Version 1 entries are the receipts chained before this
//     migration, each its own entry with its own hash; version 2 entries are Merkle batches.
//
// The receipt_heads row keeps pointing at the last entry, so heads signed before this
// migration still verify.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
CREATE TABLE receipts_batched (
	n {{serial}},
	space_id TEXT NOT NULL,
	seq BIGINT,
	id TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	action TEXT NOT NULL,
	actor_key_id TEXT NOT NULL,
	object_ids {{json}} NOT NULL,
	detail {{json}} NOT NULL,
	at {{ts}} NOT NULL,
	prev_hash TEXT NOT NULL DEFAULT '',
	hash TEXT NOT NULL DEFAULT '',
	UNIQUE (space_id, seq)
);
INSERT INTO receipts_batched (space_id, seq, id, kind, action, actor_key_id, object_ids, detail, at, prev_hash, hash)
	SELECT space_id, seq, id, kind, action, actor_key_id, object_ids, detail, at, prev_hash, hash
	FROM receipts ORDER BY space_id, seq;
CREATE TABLE receipt_batches (
	space_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	first_seq BIGINT NOT NULL,
	version INTEGER NOT NULL,
	root TEXT NOT NULL,
	prev_hash TEXT NOT NULL,
	hash TEXT NOT NULL,
	at {{ts}} NOT NULL,
	PRIMARY KEY (space_id, seq)
);
INSERT INTO receipt_batches (space_id, seq, first_seq, version, root, prev_hash, hash, at)
	SELECT space_id, seq, seq, 1, '', prev_hash, hash, at FROM receipts;
DROP TABLE receipts;
ALTER TABLE receipts_batched RENAME TO receipts;
CREATE INDEX receipts_unsealed ON receipts (space_id, n) WHERE seq IS NULL`)
	}, func(ctx context.Context, db *bun.DB) error {
		// Going down is possible only while the chain holds no Merkle batch and every receipt
		// is sealed: the old schema cannot hold either.
		var batched int
		if err := db.NewRaw(`SELECT (SELECT COUNT(*) FROM receipt_batches WHERE version <> 1) + (SELECT COUNT(*) FROM receipts WHERE seq IS NULL)`).Scan(ctx, &batched); err != nil {
			return err
		}
		if batched > 0 {
			return errors.New("migrations: the receipt chain holds Merkle batches or unsealed receipts; it cannot go back to one receipt per entry")
		}
		return execDDL(ctx, db, `
CREATE TABLE receipts_chained (
	space_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	id TEXT NOT NULL UNIQUE,
	kind TEXT NOT NULL,
	action TEXT NOT NULL,
	actor_key_id TEXT NOT NULL,
	object_ids {{json}} NOT NULL,
	detail {{json}} NOT NULL,
	at {{ts}} NOT NULL,
	prev_hash TEXT NOT NULL,
	hash TEXT NOT NULL,
	PRIMARY KEY (space_id, seq)
);
INSERT INTO receipts_chained (space_id, seq, id, kind, action, actor_key_id, object_ids, detail, at, prev_hash, hash)
	SELECT space_id, seq, id, kind, action, actor_key_id, object_ids, detail, at, prev_hash, hash FROM receipts;
DROP TABLE receipts;
ALTER TABLE receipts_chained RENAME TO receipts;
DROP TABLE receipt_batches`)
	})
}
