package spaces

import (
	"context"
	"errors"
	"sync"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/models"
)

// ErrStaleConfig reports that a space's configuration revision (RevisionConfig) is no longer
// the one a request assumed: a document was written or a key minted or revoked since the key
// and documents were read. The request must reload them (KeyCache.ReloadFor) and start over;
// nothing was written.
var ErrStaleConfig = errors.New("spaces: the space's configuration changed since it was read")

// assumedKey is the context key of the configuration revision a request's key and documents
// were read at.
type assumedKey struct{}

type assumed struct {
	spaceID string
	rev     int64
	hash    string // the key's hash, to reload it
	cached  bool   // served from a KeyCache without reading the store
}

// AssumedConfig returns the configuration revision of spaceID that ctx's key and documents
// were read at, and whether there is one (AuthenticateWithDocuments and KeyCache set it).
// Statements that check it turn a mismatch into ErrStaleConfig.
func AssumedConfig(ctx context.Context, spaceID string) (int64, bool) {
	a, ok := ctx.Value(assumedKey{}).(assumed)
	if !ok || a.spaceID != spaceID {
		return 0, false
	}
	return a.rev, true
}

// FromCache reports whether ctx's key and documents came from a KeyCache without reading the
// store: a refusal decided on them must be confirmed against the current revision.
func FromCache(ctx context.Context) bool {
	a, ok := ctx.Value(assumedKey{}).(assumed)
	return ok && a.cached
}

// KeyCache keeps, per API replica, the keys it authenticated with their space's features and
// object-types documents and the configuration revision they were read at, so the hot
// working-memory routes read neither per request. It is exact without invalidation messages:
// every statement of those routes checks the revision (RevisionConfig, bumped in the same
// transaction as every document write, key mint and revocation), and a mismatch reloads the
// key (a revoked key is then refused) and runs the request again. Only active keys are kept;
// at most max entries (the cache is emptied when full). Safe for concurrent use.
type KeyCache struct {
	mu      sync.Mutex
	entries map[string]cachedKey
	max     int
}

type cachedKey struct {
	p    auth.Principal
	docs []models.Document
	rev  int64
	// pre and asm are the context values a request authenticated from this entry carries
	// (prefetched, assumed with cached set), boxed once per entry instead of per request.
	pre, asm any
}

// NewKeyCache returns an empty KeyCache of at most max keys (4096 when max <= 0).
func NewKeyCache(max int) *KeyCache {
	if max <= 0 {
		max = 4096
	}
	return &KeyCache{entries: map[string]cachedKey{}, max: max}
}

// Authenticate is AuthenticateWithDocuments answered from the cache when the key is in it
// (no statement), else from the store (then cached). The returned ctx carries the documents
// and the revision assumed; errors as auth.Authenticate's.
func (c *KeyCache) Authenticate(ctx context.Context, d *bun.DB, key string) (auth.Principal, context.Context, error) {
	hash, err := auth.CheckKeyFormat(key)
	if err != nil {
		return auth.Principal{}, ctx, err
	}
	c.mu.Lock()
	e, ok := c.entries[hash]
	c.mu.Unlock()
	if ok {
		ctx = context.WithValue(ctx, prefetchKey{}, e.pre) // withKey, on values boxed once
		return e.p, context.WithValue(ctx, assumedKey{}, e.asm), nil
	}
	return c.Reload(ctx, d, hash)
}

// Reload reads the key of hash and its space's documents from the store, replaces its cache
// entry (or drops it when the key is unknown or revoked), and returns what Authenticate does.
func (c *KeyCache) Reload(ctx context.Context, d *bun.DB, hash string) (auth.Principal, context.Context, error) {
	p, docs, rev, err := keyAndDocumentsByHash(ctx, d, hash)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.entries, hash)
		return p, ctx, err
	}
	if len(c.entries) >= c.max {
		clear(c.entries)
	}
	c.entries[hash] = cachedKey{p: p, docs: docs, rev: rev,
		pre: prefetched{spaceID: p.SpaceID, docs: docs},
		asm: assumed{spaceID: p.SpaceID, rev: rev, hash: hash, cached: true}}
	return p, withKey(ctx, p.SpaceID, docs, assumed{spaceID: p.SpaceID, rev: rev, hash: hash}), nil
}

// withKey returns ctx carrying the space documents a key was authenticated with (Documents
// answers from them) and the configuration revision they were read at (AssumedConfig).
func withKey(ctx context.Context, spaceID string, docs []models.Document, a assumed) context.Context {
	ctx = context.WithValue(ctx, prefetchKey{}, prefetched{spaceID: spaceID, docs: docs})
	return context.WithValue(ctx, assumedKey{}, a)
}

// ReloadFor is Reload of the key ctx was authenticated with (ctx from Authenticate or Reload).
func (c *KeyCache) ReloadFor(ctx context.Context, d *bun.DB) (auth.Principal, context.Context, error) {
	a, ok := ctx.Value(assumedKey{}).(assumed)
	if !ok {
		return auth.Principal{}, ctx, errors.New("spaces: reload: the context carries no key")
	}
	return c.Reload(ctx, d, a.hash)
}
