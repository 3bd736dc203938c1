package keystore

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Defaults of the key cache the app puts in front of its key store (Cached).
const (
	// DefaultCacheSize is how many unwrapped data keys one process keeps (about 100 bytes
	// each with the id: well under a megabyte).
	DefaultCacheSize = 8192
	// DefaultCacheTTL is how long one process keeps an unwrapped key before asking the store
	// again.
	DefaultCacheTTL = time.Minute
)

// Cache is a Store that keeps up to a bounded number of unwrapped data keys in memory for a
// bounded time, in front of another Store (issue 29 §1): the read paths that unseal rows
// (note blocks and search, turns, states) open many rows under few keys, and the PostgreSQL
// key store would otherwise be queried, and the key unwrapped, once per row.
//
// What is cached: keys DataKey returned, for at most ttl after they were read, the least
// recently used dropped beyond size. A missing key (ErrNoKey) and errors are never cached, so
// a key another replica creates is seen at once.
//
// Destroy evicts the key from this process's cache at once, before and after destroying it in
// the store, and a DataKey that was reading the store while a Destroy ran does not put its
// answer in the cache: after Destroy returns, this process never hands out the key again.
// Another replica (another process over the same key store) may still hold the key in its own
// cache for up to ttl after the Destroy. That does not let it serve erased bytes: the erasure
// or delete that destroyed the key deleted the sealed rows in the same procedure and bumped the
// space's revisions, which every replica checks at its next request (issue 29 §2), so there is
// nothing left in the database for the cached key to open, and the replica's cached blocks
// and answers are dropped. The key only matters for a copy of the rows restored from a
// backup: `agentmemory restore` runs before serve processes use that copy (docs/compliance.md),
// and a process started after it starts with an empty cache.
type Cache struct {
	store Store
	ttl   time.Duration
	now   func() time.Time
	lru   *lru.Cache[string, cachedKey]

	mu        sync.Mutex
	destroyed uint64 // how many Destroy calls began: a read that saw it change caches nothing
}

// cachedKey is one cached key and the time its entry stops being used.
type cachedKey struct {
	key   []byte
	until time.Time
}

// Cached returns s behind a cache of at most size keys, each kept at most ttl (size <= 0 is
// DefaultCacheSize, ttl <= 0 DefaultCacheTTL). Safe for concurrent use when s is.
func Cached(s Store, size int, ttl time.Duration) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	c, err := lru.New[string, cachedKey](size)
	if err != nil {
		panic(err) // only for size <= 0, excluded above
	}
	return &Cache{store: s, ttl: ttl, now: time.Now, lru: c}
}

// Unwrap returns the store behind the cache (to reach a concrete store's own methods, e.g.
// Postgres.Ping).
func (c *Cache) Unwrap() Store { return c.store }

// DataKey implements Store: a cached key still within its ttl, else the store's answer
// (cached when it is a key). The caller may keep the returned slice; it is a copy.
func (c *Cache) DataKey(ctx context.Context, subjectID string, create bool) ([]byte, error) {
	if e, ok := c.lru.Get(subjectID); ok && c.now().Before(e.until) {
		return append([]byte(nil), e.key...), nil
	}
	gen := c.generation()
	key, err := c.store.DataKey(ctx, subjectID, create)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.destroyed == gen { // no Destroy began meanwhile: the key is still the store's
		c.lru.Add(subjectID, cachedKey{key: append([]byte(nil), key...), until: c.now().Add(c.ttl)})
	}
	c.mu.Unlock()
	return key, nil
}

// Destroy implements Store: the key leaves this process's cache, then the store.
func (c *Cache) Destroy(ctx context.Context, subjectID string) error {
	c.mu.Lock()
	c.destroyed++
	c.lru.Remove(subjectID)
	c.mu.Unlock()
	err := c.store.Destroy(ctx, subjectID)
	c.mu.Lock()
	c.destroyed++ // a read that began before the store forgot it must not cache it
	c.lru.Remove(subjectID)
	c.mu.Unlock()
	return err
}

// Exists implements Store: always asked of the store (an erasure's probe counts stored keys,
// never cached ones).
func (c *Cache) Exists(ctx context.Context, subjectID string) (bool, error) {
	return c.store.Exists(ctx, subjectID)
}

// Len is how many keys the cache holds now (expired ones included until they are read or
// pushed out).
func (c *Cache) Len() int { return c.lru.Len() }

func (c *Cache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.destroyed
}
