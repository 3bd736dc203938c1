package auth

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/models"
)

// UsageResolution is how precise a key's last use is: Usage records a key's use at most once
// per UsageResolution, and its loop writes what it recorded every UsageResolution.
const UsageResolution = time.Minute

// Usage records when keys were last used (GET /v1/keys' last_used_at) without a write on the
// request's path: Touch only notes the time in memory, and Flush (the loop of Run, and the key
// listing before it reads) writes the noted times with one UPDATE per key, never moving a
// stored time backwards. Each replica keeps its own; the newest write wins. A nil *Usage
// records nothing. Safe for concurrent use.
type Usage struct {
	mu      sync.Mutex
	noted   map[string]time.Time // key id -> the use last noted (at most one per UsageResolution)
	pending map[string]time.Time // key id -> a noted use not yet written
}

// NewUsage returns an empty recorder.
func NewUsage() *Usage {
	return &Usage{noted: map[string]time.Time{}, pending: map[string]time.Time{}}
}

// Touch notes that keyID authenticated a request at now. It costs a map lookup under a lock;
// a key already noted less than UsageResolution ago is left as it is.
func (u *Usage) Touch(keyID string, now time.Time) {
	if u == nil || keyID == "" {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if last, ok := u.noted[keyID]; ok && now.Sub(last) < UsageResolution && !now.Before(last) {
		return
	}
	u.noted[keyID] = now
	u.pending[keyID] = now
}

// Flush writes the pending uses to api_keys.last_used_at (only where the stored time is older
// or absent). A use whose write fails stays pending for the next Flush, and the error is
// returned. Noted uses older than UsageResolution are forgotten, so memory stays bounded by
// the keys used in the last minute.
func (u *Usage) Flush(ctx context.Context, db bun.IDB, now time.Time) error {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	batch := u.pending
	u.pending = map[string]time.Time{}
	for id, at := range u.noted {
		if now.Sub(at) >= UsageResolution {
			delete(u.noted, id)
		}
	}
	u.mu.Unlock()
	var first error
	for id, at := range batch {
		at = at.UTC()
		_, err := db.NewUpdate().Model((*models.APIKey)(nil)).Set("last_used_at = ?", at).
			Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", id, at).Exec(ctx)
		if err != nil {
			u.keep(id, at)
			if first == nil {
				first = fmt.Errorf("auth: record key use: %w", err)
			}
		}
	}
	return first
}

// keep puts a use whose write failed back, unless a newer one was noted meanwhile.
func (u *Usage) keep(id string, at time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if cur, ok := u.pending[id]; !ok || cur.Before(at) {
		u.pending[id] = at
	}
}

// Run flushes every UsageResolution until ctx ends, then once more (with a short deadline of
// its own) so that a stopping replica writes what it noted. Failures are passed to report
// (a failed write is retried at the next flush).
func (u *Usage) Run(ctx context.Context, db bun.IDB, now func() time.Time, report func(error)) {
	t := time.NewTicker(UsageResolution)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := u.Flush(last, db, now()); err != nil {
				report(err)
			}
			return
		case <-t.C:
			if err := u.Flush(ctx, db, now()); err != nil {
				report(err)
			}
		}
	}
}
