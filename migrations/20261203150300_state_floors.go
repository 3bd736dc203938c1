package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// State version floors (issue 29 §3, WM-5): per space and agent, the highest version any of
// the agent's deleted or expired states reached. A state written afresh starts above it, so a
// compare-and-swap holding a version of an earlier incarnation of the same scope never matches
// the new one (ABA). It holds no scope, subject or content: space id, agent name, a number.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `CREATE TABLE agent_state_floors (
	space_id TEXT NOT NULL,
	agent TEXT NOT NULL,
	version BIGINT NOT NULL,
	PRIMARY KEY (space_id, agent)
)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE agent_state_floors`)
	})
}
