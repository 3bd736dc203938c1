package events

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/models"
)

// Leader safety. Several relays (several workers, or worker and dev on one database) may run
// at once; each job ("kafka", "webhook") is done under one of two exclusions:
//
//   - PostgreSQL: a transaction selects its rows FOR UPDATE SKIP LOCKED, does the outside work
//     (publish, POST) and marks the rows in the same transaction. Another relay skips the
//     locked rows. For Kafka it also drops any space whose oldest pending row is locked by
//     someone else, so per-space order holds while relays share the work by space.
//   - SQLite (one writer at a time): a lease row in relay_leases, taken or renewed by one
//     upsert under the single-writer lock. Only the holder works; its outside work runs
//     without a transaction (API writes never wait on Kafka or a webhook) under a deadline
//     that ends before the lease expires, so a successor never overlaps it.
//
// Duplicates (at-least-once) happen only when the outside work succeeded and marking it
// failed: a crash, a lost database connection, or a shutdown in between.

// job runs work under the engine's exclusion. On PostgreSQL work gets the transaction and
// locked=true; on SQLite it gets the database, locked=false, and a context that ends before
// the lease does; without the lease it is not called.
func (r *Relay) job(ctx context.Context, name string, work func(ctx, txCtx context.Context, idb bun.IDB, locked bool) error) error {
	if !db.IsSQLite(r.DB) {
		// The transaction outlives a cancelled ctx so that what was published is marked.
		txCtx := context.WithoutCancel(ctx)
		return r.DB.RunInTx(txCtx, nil, func(txCtx context.Context, tx bun.Tx) error {
			return work(ctx, txCtx, tx, true)
		})
	}
	until, ok, err := r.lease(ctx, name)
	if err != nil || !ok {
		return err
	}
	wctx, cancel := context.WithDeadline(ctx, until.Add(-r.LeaseTTL/4))
	defer cancel()
	return work(wctx, context.WithoutCancel(ctx), r.DB, false)
}

// lease takes or renews the named lease for r.holder. It reports whether r holds it and until
// when.
func (r *Relay) lease(ctx context.Context, name string) (time.Time, bool, error) {
	now := r.now()
	until := now.Add(r.LeaseTTL)
	res, err := r.DB.NewInsert().Model(&models.RelayLease{Name: name, Holder: r.holder, ExpiresAt: until}).
		On("CONFLICT (name) DO UPDATE").
		Set("holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at").
		Where("relay_lease.holder = EXCLUDED.holder OR relay_lease.expires_at < ?", now).
		Exec(ctx)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("events: lease %s: %w", name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return time.Time{}, false, fmt.Errorf("events: lease %s: %w", name, err)
	}
	return until, n == 1, nil
}

// release gives up r's leases (on SQLite) so that another relay takes over at once.
func (r *Relay) release(ctx context.Context) {
	if !db.IsSQLite(r.DB) {
		return
	}
	_, _ = r.DB.NewDelete().Model((*models.RelayLease)(nil)).Where("holder = ?", r.holder).Exec(ctx) // best effort at stop: a lease not released expires on its own
}
