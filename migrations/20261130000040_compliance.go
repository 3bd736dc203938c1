package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Compliance (issue 5): erasure records with their certificates, and subject data packages
// (sealed under the subject's key, expiring).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
CREATE TABLE erasures (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	target_kind TEXT NOT NULL,
	target_hash TEXT NOT NULL,
	target_ref TEXT NOT NULL DEFAULT '',
	scope_hashes {{json}} NOT NULL,
	profile_ids {{json}} NOT NULL,
	resolved BOOLEAN NOT NULL DEFAULT FALSE,
	items {{json}} NOT NULL,
	status TEXT NOT NULL,
	requested_by TEXT NOT NULL,
	certificate {{json}} NOT NULL,
	failure TEXT NOT NULL DEFAULT '',
	created_at {{ts}} NOT NULL,
	ended_at {{ts}}
);
CREATE INDEX erasures_space ON erasures (space_id, created_at);
CREATE TABLE export_packages (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	subject_hash TEXT NOT NULL,
	status TEXT NOT NULL,
	requested_by TEXT NOT NULL,
	package {{blob}},
	counts {{json}} NOT NULL,
	failure TEXT NOT NULL DEFAULT '',
	created_at {{ts}} NOT NULL,
	completed_at {{ts}},
	expires_at {{ts}} NOT NULL
);
CREATE INDEX export_packages_subject ON export_packages (space_id, subject_hash);
CREATE INDEX export_packages_expires ON export_packages (expires_at)
`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
DROP TABLE export_packages;
DROP TABLE erasures
`)
	})
}
