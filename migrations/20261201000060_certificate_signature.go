package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Signed certificates (issue 12 §4, PR-3): the Ed25519 signature made when the erasure
// completed, over the certificate's canonical bytes as stored, so an edit of the stored
// certificate afterwards no longer verifies. Empty for a certificate issued without a signing
// key (GET /v1/erasures/{id}/certificate then answers 409 certificate_unsigned).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE erasures ADD COLUMN certificate_signature TEXT NOT NULL DEFAULT ''`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE erasures DROP COLUMN certificate_signature`)
	})
}
