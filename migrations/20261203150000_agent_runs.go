package migrations

import (
	"context"

	"github.com/uptrace/bun"
)

// Runs (issue 28, CTX-3: "reading from memory draws on the run's budget"): one row per run,
// keyed by the space, the caller that began it (owner: the agent source of an agent key, the
// key id of a person key) and the caller's run id. budget_tokens is set by the run's first
// call; used_tokens counts the tokens delivered plus those reserved by calls in flight
// (internal/runs: reserved in one conditional UPDATE, given back when the call settles);
// last_reserved is what the latest reservation took (read back by RETURNING). A run ends at
// expires_at; expired rows are deleted lazily by the next run begun in the space.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `
CREATE TABLE agent_runs (
	space_id TEXT NOT NULL,
	owner TEXT NOT NULL,
	run_id TEXT NOT NULL,
	budget_tokens INTEGER NOT NULL,
	used_tokens INTEGER NOT NULL,
	last_reserved INTEGER NOT NULL,
	created_at {{ts}} NOT NULL,
	expires_at {{ts}} NOT NULL,
	PRIMARY KEY (space_id, owner, run_id)
);
CREATE INDEX agent_runs_expiry ON agent_runs (space_id, expires_at)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP TABLE agent_runs`)
	})
}
