package spaces

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
)

// ErrStaleConfig reports that a space's configuration revision (RevisionConfig) is no longer
// the one a request's Snapshot holds: a document was written or a key minted or revoked since
// the key and documents were read. The request must reload them (KeyCache.Run does) and start
// over; nothing was written.
var ErrStaleConfig = errors.New("spaces: the space's configuration changed since it was read")

// KeyCache keeps, per API replica, the keys it authenticated with their space's Snapshot
// (features and object-types documents, parsed, and the configuration revision they were read
// at), so the hot working-memory routes read neither per request. It is exact without
// invalidation messages: every statement of those routes checks the revision (RevisionConfig,
// bumped in the same transaction as every document write, key mint and revocation), and a
// mismatch reloads the key (a revoked key is then refused) and runs the request again (Run).
// Only active keys are kept; at most max entries (the cache is emptied when full). Safe for
// concurrent use.
type KeyCache struct {
	mu      sync.Mutex
	entries map[string]cachedKey
	max     int
}

// cachedKey is one entry: the key's Principal and its Snapshot (Cached set).
type cachedKey struct {
	p    auth.Principal
	snap Snapshot
}

// NewKeyCache returns an empty KeyCache of at most max keys (4096 when max <= 0).
func NewKeyCache(max int) *KeyCache {
	if max <= 0 {
		max = 4096
	}
	return &KeyCache{entries: map[string]cachedKey{}, max: max}
}

// Authenticate is AuthenticateWithDocuments answered from the cache when the key is in it
// (no statement; the Snapshot's Cached is set), else from the store (then cached). Errors as
// auth.Authenticate's.
func (c *KeyCache) Authenticate(ctx context.Context, d *bun.DB, key string) (auth.Principal, Snapshot, error) {
	hash, err := auth.CheckKeyFormat(key)
	if err != nil {
		return auth.Principal{}, Snapshot{}, err
	}
	c.mu.Lock()
	e, ok := c.entries[hash]
	c.mu.Unlock()
	if ok {
		return e.p, e.snap, nil
	}
	return c.reload(ctx, d, hash)
}

// Reload reads the key snap was authenticated with and its space's documents from the store
// again, replaces its cache entry (or drops it when the key is unknown or revoked), and
// returns what Authenticate does.
func (c *KeyCache) Reload(ctx context.Context, d *bun.DB, snap Snapshot) (auth.Principal, Snapshot, error) {
	if snap.hash == "" {
		return auth.Principal{}, Snapshot{}, errors.New("spaces: reload: the snapshot names no key")
	}
	return c.reload(ctx, d, snap.hash)
}

// reload is Reload of the key of hash.
func (c *KeyCache) reload(ctx context.Context, d *bun.DB, hash string) (auth.Principal, Snapshot, error) {
	p, docs, rev, err := keyAndDocumentsByHash(ctx, d, hash)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.entries, hash)
		return p, Snapshot{}, err
	}
	if len(c.entries) >= c.max {
		clear(c.entries)
	}
	snap := newSnapshot(p.SpaceID, hash, rev, docs)
	cached := snap
	cached.Cached = true
	c.entries[hash] = cachedKey{p: p, snap: cached}
	return p, snap, nil
}

// maxConfigRuns is how many times Run runs its function before it answers
// configuration_busy.
const maxConfigRuns = 3

// Run runs fn with ctx (carrying snap's documents), p and snap. When fn finds that the space's
// configuration changed since snap was read (ErrStaleConfig), or refuses the request (a
// fault) on a cached snap that is no longer current, the key and documents are read again (a
// revoked key is then refused: that error is Run's) and fn runs again with them, at most
// maxConfigRuns times in all; then it is fault.Unavailable "configuration_busy". Nothing was
// written by a run that ended so.
func (c *KeyCache) Run(ctx context.Context, d *bun.DB, p auth.Principal, snap Snapshot, fn func(ctx context.Context, p auth.Principal, snap Snapshot) error) error {
	base := ctx
	for attempt := 1; ; attempt++ {
		err := fn(snap.WithDocuments(base), p, snap)
		if err == nil || !stale(base, d, p.SpaceID, snap, err) {
			return err
		}
		if attempt >= maxConfigRuns {
			busy := fault.New(fault.Unavailable, "configuration_busy", "the space's configuration keeps changing; retry")
			busy.RetryAfter = time.Second
			return busy
		}
		if p, snap, err = c.Reload(base, d, snap); err != nil {
			return err
		}
	}
}

// stale reports whether err, fn's answer on snap, must be decided again on a reloaded
// snapshot: ErrStaleConfig, or a refusal (a fault) decided on a cached snap whose revision is
// no longer the space's current one. A failure to read the revision keeps err.
func stale(ctx context.Context, d *bun.DB, spaceID string, snap Snapshot, err error) bool {
	if errors.Is(err, ErrStaleConfig) {
		return true
	}
	if fault.As(err) == nil || !snap.Cached || !snap.Assumes(spaceID) {
		return false
	}
	current, cerr := Revision(ctx, d, spaceID, RevisionConfig)
	return cerr == nil && current != snap.Revision
}
