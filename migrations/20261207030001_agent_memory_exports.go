package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Agent-memory export files (issue 33 §4): an admin's request for one agent's notes (every
// version) and proposals, built by AgentMemoryExportWorkflow into package, sealed under the
// agent's export key (erased with the agent's notes), readable until expires_at.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `CREATE TABLE agent_memory_exports (
	id TEXT PRIMARY KEY,
	space_id TEXT NOT NULL REFERENCES spaces(id),
	source_id TEXT NOT NULL,
	status TEXT NOT NULL,
	requested_by TEXT NOT NULL,
	package {{blob}},
	counts {{json}} NOT NULL,
	failure TEXT NOT NULL DEFAULT '',
	created_at {{ts}} NOT NULL,
	completed_at {{ts}},
	expires_at {{ts}} NOT NULL
);
CREATE INDEX agent_memory_exports_source ON agent_memory_exports (space_id, source_id);
CREATE INDEX agent_memory_exports_expires ON agent_memory_exports (expires_at)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE agent_memory_exports`)
	})
}
