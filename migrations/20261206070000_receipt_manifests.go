package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Receipt manifests (issue 32): what a read delivered (a block's note versions, view, tags
// and budget; a retrieval's chunks), stored once per space and distinct content, keyed by
// the hex SHA-256 of its body. A read's receipt names its manifest by that hash (detail
// "manifest") instead of carrying every id. Ids, versions and request parameters only.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
CREATE TABLE receipt_manifests (
	space_id TEXT NOT NULL,
	hash TEXT NOT NULL,
	kind TEXT NOT NULL,
	body TEXT NOT NULL,
	PRIMARY KEY (space_id, hash)
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE receipt_manifests`)
	})
}
