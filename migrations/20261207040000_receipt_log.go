package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// The deployment's receipt log (issue 32): one append-only RFC 6962 Merkle tree over every
// space's sealed receipts, in the order the log appended them (golang.org/x/mod/sumdb/tlog).
// receipt_log_leaves maps each leaf index to its receipt (space and seq, indexed by space) and
// holds the leaf hash; receipt_log_hashes the tree's stored hashes (tlog.StoredHashIndex);
// receipt_log_state the log's size (its one row is what appenders lock); receipt_checkpoints
// the signed tree heads (a sumdb note of tlog.FormatTree). Hashes and ids only. Receipts
// sealed before this migration are appended by the first pass of the log (at first start).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
CREATE TABLE receipt_log_leaves (
	idx BIGINT PRIMARY KEY,
	space_id TEXT NOT NULL,
	seq BIGINT NOT NULL,
	hash {{blob}} NOT NULL
);
CREATE UNIQUE INDEX receipt_log_leaves_space ON receipt_log_leaves (space_id, seq);
CREATE TABLE receipt_log_hashes (
	idx BIGINT PRIMARY KEY,
	hash {{blob}} NOT NULL
);
CREATE TABLE receipt_log_state (
	id INTEGER PRIMARY KEY,
	size BIGINT NOT NULL
);
INSERT INTO receipt_log_state (id, size) VALUES (1, 0);
CREATE TABLE receipt_checkpoints (
	size BIGINT PRIMARY KEY,
	hash TEXT NOT NULL,
	note TEXT NOT NULL,
	at {{ts}} NOT NULL
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE receipt_checkpoints;
DROP TABLE receipt_log_state;
DROP TABLE receipt_log_hashes;
DROP TABLE receipt_log_leaves`)
	})
}
