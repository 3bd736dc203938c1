// Package leases gives one handler at a time a target (a board, a working state) with fencing
// tokens (issue 31): a lease is granted for a time to live with a token one above the
// target's last one (tokens only grow: a release or an expiry keeps the target's row), so a
// holder that paused past its lease and writes late carries an older token than the one in
// force and is refused (CodeLost). While a lease is held, writes without it are refused
// (CodeHeld) unless the target's type says leases are advisory. Every function works inside
// the caller's transaction, so the check and the write it guards commit together.
package leases

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/models"
)

// Error codes (409).
const (
	// CodeLost: the lease the request carries expired, was released, or a newer token exists.
	CodeLost = "lease_lost"
	// CodeHeld: another handler holds a lease on the target.
	CodeHeld = "lease_held"
)

// TTL bounds, in seconds.
const (
	MinTTLSeconds = 1
	MaxTTLSeconds = 3600
)

// Proof is the lease a write or a renewal carries: its id and fencing token.
type Proof struct {
	ID    string `json:"lease_id"`
	Token int64  `json:"token"`
}

// Lease is a granted lease: ID, Token (the fencing token, above every earlier one of the
// target) and ExpiresAt (UTC).
type Lease struct {
	ID        string    `json:"lease_id"`
	Token     int64     `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// CheckTTL refuses a time to live outside MinTTLSeconds..MaxTTLSeconds (fault.Invalid naming
// ttl_seconds).
func CheckTTL(seconds int) error {
	if seconds < MinTTLSeconds || seconds > MaxTTLSeconds {
		return fault.New(fault.Invalid, "invalid_member", "ttl_seconds must be between %d and %d", MinTTLSeconds, MaxTTLSeconds).With("member", "ttl_seconds")
	}
	return nil
}

// load reads target's lease row inside tx, locked on PostgreSQL; nil when none.
func load(ctx context.Context, tx bun.IDB, spaceID, target string) (*models.Lease, error) {
	var row models.Lease
	q := tx.NewSelect().Model(&row).Where("space_id = ? AND target = ?", spaceID, target)
	if tx.Dialect().Name() != dialect.SQLite {
		q = q.For("UPDATE")
	}
	err := q.Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &row, nil
}

func active(row *models.Lease, now time.Time) bool {
	return row != nil && row.LeaseID != "" && now.Before(row.ExpiresAt.UTC())
}

// Acquire grants holder (a key id) a lease on target for ttl inside tx: CodeHeld when an
// unexpired lease is held (by anyone: a holder renews, it does not acquire twice). The token
// is one above the target's last.
func Acquire(ctx context.Context, tx bun.IDB, spaceID, target, holder string, ttl time.Duration, now time.Time) (Lease, error) {
	row, err := load(ctx, tx, spaceID, target)
	if err != nil {
		return Lease{}, err
	}
	if active(row, now) {
		e := fault.New(fault.Conflict, CodeHeld, "another handler holds a lease on this target until it expires or is released")
		e.Extra = map[string]any{"expires_at": row.ExpiresAt.UTC()}
		return Lease{}, e
	}
	l := Lease{ID: auth.NewID("ls"), ExpiresAt: now.Add(ttl).UTC()}
	if row == nil {
		l.Token = 1
		_, err = tx.NewInsert().Model(&models.Lease{SpaceID: spaceID, Target: target, Token: 1, LeaseID: l.ID, Holder: holder, ExpiresAt: l.ExpiresAt}).Exec(ctx)
		return l, err
	}
	l.Token = row.Token + 1
	_, err = tx.NewUpdate().Model((*models.Lease)(nil)).Set("token = ?", l.Token).Set("lease_id = ?", l.ID).Set("holder = ?", holder).
		Set("expires_at = ?", l.ExpiresAt).Where("space_id = ? AND target = ? AND token = ?", spaceID, target, row.Token).Exec(ctx)
	return l, err
}

// Renew extends the lease proof names to now + ttl inside tx; CodeLost when it is not the
// lease in force (expired, released, or a newer token exists).
func Renew(ctx context.Context, tx bun.IDB, spaceID, target string, proof Proof, ttl time.Duration, now time.Time) (Lease, error) {
	if err := Check(ctx, tx, spaceID, target, &proof, false, now); err != nil {
		return Lease{}, err
	}
	l := Lease{ID: proof.ID, Token: proof.Token, ExpiresAt: now.Add(ttl).UTC()}
	_, err := tx.NewUpdate().Model((*models.Lease)(nil)).Set("expires_at = ?", l.ExpiresAt).
		Where("space_id = ? AND target = ? AND token = ?", spaceID, target, proof.Token).Exec(ctx)
	return l, err
}

// Release ends the lease proof names inside tx (its token stays the target's last); CodeLost
// when it is not the lease in force.
func Release(ctx context.Context, tx bun.IDB, spaceID, target string, proof Proof, now time.Time) error {
	if err := Check(ctx, tx, spaceID, target, &proof, false, now); err != nil {
		return err
	}
	_, err := tx.NewUpdate().Model((*models.Lease)(nil)).Set("lease_id = ''").Set("expires_at = ?", now.UTC()).
		Where("space_id = ? AND target = ? AND token = ?", spaceID, target, proof.Token).Exec(ctx)
	return err
}

// Check is the fencing check of a write on target inside tx (the write's transaction): with
// proof, it must be the lease in force (unexpired, same id and token), else CodeLost; without
// one, an unexpired lease held by anyone refuses the write with CodeHeld unless advisory.
func Check(ctx context.Context, tx bun.IDB, spaceID, target string, proof *Proof, advisory bool, now time.Time) error {
	row, err := load(ctx, tx, spaceID, target)
	if err != nil {
		return err
	}
	if proof != nil {
		if !active(row, now) || row.LeaseID != proof.ID || row.Token != proof.Token {
			e := fault.New(fault.Conflict, CodeLost, "this lease expired, was released or was superseded by a newer one; acquire a new lease and read again")
			if row != nil {
				e.Extra = map[string]any{"token": row.Token}
			}
			return e
		}
		return nil
	}
	if active(row, now) && !advisory {
		e := fault.New(fault.Conflict, CodeHeld, "another handler holds a lease on this target; write with its lease, or wait until it expires or is released")
		e.Extra = map[string]any{"expires_at": row.ExpiresAt.UTC()}
		return e
	}
	return nil
}

// Exists reports whether target has a lease row (a lease was ever granted on it, in force
// or not), read through idb without a lock: a cheap test of whether a write must take the
// fencing check of Check inside a transaction.
func Exists(ctx context.Context, idb bun.IDB, spaceID, target string) (bool, error) {
	return idb.NewSelect().Model((*models.Lease)(nil)).Where("space_id = ? AND target = ?", spaceID, target).Exists(ctx)
}

// Op is one of the three lease operations a lease route runs (Apply).
type Op int

// The lease operations.
const (
	OpAcquire Op = iota // a new lease (Acquire)
	OpRenew             // a longer life for the lease in force (Renew)
	OpRelease           // the end of the lease in force (Release)
)

// Apply runs op on target of spaceID inside tx: Acquire for holder with ttl, Renew of proof
// with ttl, or Release of proof, which answers proof's lease ending at now. Errors are those
// of the operation (409 CodeHeld, CodeLost), or an unknown op.
func Apply(ctx context.Context, tx bun.IDB, spaceID, target, holder string, op Op, ttl time.Duration, proof Proof, now time.Time) (Lease, error) {
	switch op {
	case OpAcquire:
		return Acquire(ctx, tx, spaceID, target, holder, ttl, now)
	case OpRenew:
		return Renew(ctx, tx, spaceID, target, proof, ttl, now)
	case OpRelease:
		if err := Release(ctx, tx, spaceID, target, proof, now); err != nil {
			return Lease{}, err
		}
		return Lease{ID: proof.ID, Token: proof.Token, ExpiresAt: now}, nil
	}
	return Lease{}, errors.New("leases: unknown operation")
}
