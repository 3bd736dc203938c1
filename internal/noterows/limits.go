package noterows

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/models"
)

// Statuses of a note row (notes.StatusActive, notes.StatusRetired).
const (
	StatusActive  = "active"
	StatusRetired = "retired"
)

// Error codes of the limits.
const (
	CodeRateLimited = "note_rate_limited"
	CodeCapReached  = "note_cap_reached"
)

// The hourly limit of counted writes per source agent (AM-7).
const (
	RateLimit  = 20
	RateWindow = time.Hour
)

// CheckCap refuses a new note of source sourceID when it already has max active, unexpired
// notes at now: fault.Conflict note_cap_reached. It reads the source's count of active notes
// (note_source_counts, kept by notes) and counts the notes only when that count reaches max.
// idb may be a transaction.
func CheckCap(ctx context.Context, idb bun.IDB, spaceID, sourceID string, max int, now time.Time) error {
	var n int64
	err := idb.NewRaw(`SELECT active FROM note_source_counts WHERE space_id = ? AND source_id = ?`, spaceID, sourceID).Scan(ctx, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("notes: active count: %w", err)
	}
	if n < int64(max) {
		return nil
	}
	return CheckCapExact(ctx, idb, spaceID, sourceID, max, now)
}

// CheckCapExact counts the source's active, unexpired notes at now, at most max, on the
// partial index of active notes (migration 20261202310000), and refuses a new note when they
// reach max (fault.Conflict note_cap_reached).
func CheckCapExact(ctx context.Context, idb bun.IDB, spaceID, sourceID string, max int, now time.Time) error {
	active := idb.NewSelect().Model((*models.Note)(nil)).ColumnExpr("1").
		Where("space_id = ? AND source_id = ? AND status = ?", spaceID, sourceID, StatusActive).
		Where("(valid_until IS NULL OR valid_until > ?)", now).Limit(int64(max))
	var n int64
	if err := idb.NewSelect().TableExpr("(?) AS active", active).ColumnExpr("count(*)").Scan(ctx, &n); err != nil {
		return fmt.Errorf("notes: cap: %w", err)
	}
	return CapReached(n, max)
}

// CapReached is fault.Conflict note_cap_reached (with max_notes_per_source) when n active
// notes reach the cap max; nil below it.
func CapReached(n int64, max int) error {
	if n >= int64(max) {
		return fault.New(fault.Conflict, CodeCapReached,
			"this agent has reached the space's cap of %d active notes (features.agent_memory.max_notes_per_source); retire one first", max).
			With("max_notes_per_source", max)
	}
	return nil
}

// RateLimited is nil while times (the counted writes of the hour before now) are fewer than
// RateLimit; else fault.TooMany note_rate_limited with RetryAfter (whole seconds, at least 1)
// until enough of them leave the hour. format takes the limit and the seconds. times is
// sorted in place.
func RateLimited(times []time.Time, now time.Time, format string) error {
	if len(times) < RateLimit {
		return nil
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	// The write is allowed again once len(times)-RateLimit+1 of them have left the hour.
	leaves := times[len(times)-RateLimit].UTC().Add(RateWindow)
	wait := leaves.Sub(now)
	secs := int64((wait + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	e := fault.New(fault.TooMany, CodeRateLimited, format, RateLimit, secs).With("retry_after", secs)
	e.RetryAfter = time.Duration(secs) * time.Second
	return e
}

// Invalid is the fault.Invalid invalid_member error naming member, as every validation of
// agent memory answers.
func Invalid(member, format string, args ...any) error {
	return fault.New(fault.Invalid, "invalid_member", format, args...).With("member", member)
}
