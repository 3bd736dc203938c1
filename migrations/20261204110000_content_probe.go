package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Content probe (issue 29 §1b). erasures.sealed_needles holds the subject's handles and
// names in clear for the content probe, sealed under the erasure's own key (keystore id
// "erasure:<id>"), which the erasure destroys when it ends; NULL for a conversation erasure
// or one requested before this column existed. erasure_findings lists what the content probe
// found per store: ids, kinds and decisions only, never a value. match_kind is "handle"
// (erased by the erasure) or "name" (residue for a person: status "pending" until decided
// "erased" or "not_subject").
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE erasures ADD COLUMN sealed_needles {{blob}};
CREATE TABLE erasure_findings (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL,
	erasure_id TEXT NOT NULL,
	store TEXT NOT NULL,
	kind TEXT NOT NULL,
	item_id TEXT NOT NULL,
	location TEXT NOT NULL DEFAULT '',
	match_kind TEXT NOT NULL,
	status TEXT NOT NULL,
	decided_by TEXT NOT NULL DEFAULT '',
	created_at {{ts}} NOT NULL,
	decided_at {{ts}}
);
CREATE UNIQUE INDEX erasure_findings_item ON erasure_findings (erasure_id, store, kind, item_id)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE erasure_findings;
ALTER TABLE erasures DROP COLUMN sealed_needles`)
	})
}
