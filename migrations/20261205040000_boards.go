package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Boards (issue 31): shared memory that agents read and write only by grant.
//
// boards holds one row per board instance: its type and the keyed hash of its id
// (board_hash, as scope ids are stored, WM-3), the body (JSON of the type's fields), each
// field's last write (field_times), the version (+1 per stored write), its size in bytes,
// the names of its latest writers (writers, a JSON array of agent names, most recent last),
// and dates; expires_at is the last write plus the type's retention.
//
// board_versions keeps the bodies of a board's recent versions (the type's board.history),
// the bases of three-way merges of writes made at an older version; older ones are deleted
// as new ones are stored.
//
// board_subjects links a board to the keyed hashes of the customers its subject fields name,
// so an erasure finds the boards naming a customer.
//
// leases holds one row per leased target (a board, or a working state of one agent and
// scope): token is the last fencing token granted for it (it only grows: a release or an
// expiry keeps the row), lease_id the current lease (empty once released) and expires_at its end.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
CREATE TABLE boards (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	type TEXT NOT NULL,
	board_hash TEXT NOT NULL,
	body {{json}} NOT NULL,
	field_times {{json}} NOT NULL,
	version BIGINT NOT NULL,
	bytes INTEGER NOT NULL,
	writers {{json}} NOT NULL,
	created_at {{ts}} NOT NULL,
	updated_at {{ts}} NOT NULL,
	expires_at {{ts}} NOT NULL,
	UNIQUE (space_id, type, board_hash)
);
CREATE INDEX boards_expires ON boards (expires_at);
CREATE TABLE board_versions (
	board_id TEXT NOT NULL,
	version BIGINT NOT NULL,
	body {{json}} NOT NULL,
	created_at {{ts}} NOT NULL,
	PRIMARY KEY (board_id, version)
);
CREATE TABLE board_subjects (
	space_id TEXT NOT NULL,
	board_id TEXT NOT NULL,
	subject_hash TEXT NOT NULL,
	PRIMARY KEY (board_id, subject_hash)
);
CREATE INDEX board_subjects_subject ON board_subjects (space_id, subject_hash);
CREATE TABLE leases (
	space_id TEXT NOT NULL,
	target TEXT NOT NULL,
	token BIGINT NOT NULL,
	lease_id TEXT NOT NULL,
	holder TEXT NOT NULL,
	expires_at {{ts}} NOT NULL,
	PRIMARY KEY (space_id, target)
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE leases;
DROP TABLE board_subjects;
DROP TABLE board_versions;
DROP TABLE boards`)
	})
}
