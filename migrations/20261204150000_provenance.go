package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Provenance (issue 34 §2, MS-5, QT-2): turns and knowledge documents record which version
// of the agent wrote them (the request's Agent-Version header, empty when none was sent), as
// notes, proposals and states already do. The key is already recorded (turns.key_id,
// knowledge_documents.created_by).
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE turns ADD COLUMN agent_version TEXT NOT NULL DEFAULT '';
ALTER TABLE knowledge_documents ADD COLUMN agent_version TEXT NOT NULL DEFAULT ''`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `ALTER TABLE turns DROP COLUMN agent_version;
ALTER TABLE knowledge_documents DROP COLUMN agent_version`)
	})
}
