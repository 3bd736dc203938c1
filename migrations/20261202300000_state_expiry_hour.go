package migrations

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// State expiry hour (issue 16, "every index on agent_states is touched"): agent_states.expires_at
// moves on every write, so an index on it made every write rewrite an index entry (no HOT update
// on PostgreSQL, an index page per write in SQLite's WAL). The retention sweep's index now
// keys a coarse column instead, expires_hour (the Unix hour at or after expires_at), which a
// write changes at most once an hour; expires_at stays exact and unindexed, and serving keeps
// checking it. Existing rows are backfilled with expiresHourV1, a frozen copy of the rule.
func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := execDDL(ctx, db, `ALTER TABLE agent_states ADD COLUMN expires_hour BIGINT NOT NULL DEFAULT 0`); err != nil {
			return err
		}
		if err := backfillExpiresHour(ctx, db); err != nil {
			return err
		}
		return execDDL(ctx, db, `DROP INDEX agent_states_expires;
CREATE INDEX agent_states_expires_hour ON agent_states (expires_hour)`)
	}, func(ctx context.Context, db *bun.DB) error {
		return execDDL(ctx, db, `DROP INDEX agent_states_expires_hour;
CREATE INDEX agent_states_expires ON agent_states (expires_at);
ALTER TABLE agent_states DROP COLUMN expires_hour`)
	})
}

func backfillExpiresHour(ctx context.Context, db *bun.DB) error {
	type row struct {
		ID        string    `bun:"id"`
		ExpiresAt time.Time `bun:"expires_at"`
	}
	var rows []row
	if err := db.NewSelect().Table("agent_states").Column("id", "expires_at").Scan(ctx, &rows); err != nil {
		return fmt.Errorf("migrations: state expiry hour: %w", err)
	}
	for _, r := range rows {
		if _, err := db.NewUpdate().Table("agent_states").Set("expires_hour = ?", expiresHourV1(r.ExpiresAt)).
			Where("id = ?", r.ID).Exec(ctx); err != nil {
			return fmt.Errorf("migrations: state expiry hour: %w", err)
		}
	}
	return nil
}

// expiresHourV1 is state.ExpiresHour as of this migration: the Unix hour at or after t.
func expiresHourV1(t time.Time) int64 {
	h := t.Unix() / 3600
	if t.Unix()%3600 != 0 || t.Nanosecond() != 0 {
		h++
	}
	return h
}
