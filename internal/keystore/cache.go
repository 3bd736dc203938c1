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
//
// Every other replica forgets it at its next request too (issue 29 §2), with the discipline of
// the space revisions: a store that implements Generations (File, Postgres) counts the keys
// destroyed by any process, and a cached key is handed out only after the cache compared that
// count with the one it last saw, once per request (ForRequest marks a request's context;
// a context without the mark is checked at every cached read). When the count moved, the
// whole cache is emptied and the key is read from the store again, which answers ErrNoKey for
// a destroyed one. So a row sealed under a destroyed key (a copy restored from a backup, handed
// to a process that was already running) opens in no replica after the Destroy returned. If
// the count cannot be read, the cached key is not used (the store is asked instead).
type Cache struct {
	store Store
	ttl   time.Duration
	now   func() time.Time
	lru   *lru.Cache[string, cachedKey]

	gens      Generations // the store's destroy count, when it keeps one
	mu        sync.Mutex
	destroyed uint64 // how many Destroy calls (and purges) began: a read that saw it change caches nothing
	seen      uint64 // the store's destroy generation the cached keys were checked against
}

// Generations is implemented by a Store whose key destructions other processes can see
// (issue 29 §2): Generation returns the store's destroy generation, a number that changes
// every time any process sharing the store destroys a stored key (it may also change for
// other reasons, e.g. a key store restored from a copy: a reader treats any change as "some
// key may be gone"). It must be cheap (one indexed row or one small file): caches read it once
// per request.
type Generations interface {
	Generation(ctx context.Context) (uint64, error)
}

// requestCheck is the mark ForRequest puts in a context: the caches that already compared
// the destroy generation during this request.
type requestCheck struct {
	mu      sync.Mutex
	checked []*Cache
}

type requestCheckKey struct{}

// ForRequest returns ctx marked as one request (an API call): a Cache compares its store's
// destroy generation once in it, at its first cached read, instead of at every cached read.
// A destroy acknowledged before the request began is then seen by every read of the request.
func ForRequest(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestCheckKey{}, &requestCheck{})
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
	gens, _ := s.(Generations) // a store without one is local to this process: nothing to compare
	return &Cache{store: s, ttl: ttl, now: time.Now, lru: c, gens: gens}
}

// Unwrap returns the store behind the cache (to reach a concrete store's own methods, e.g.
// Postgres.Ping).
func (c *Cache) Unwrap() Store { return c.store }

// DataKey implements Store: a cached key still within its ttl, else the store's answer
// (cached when it is a key). The caller may keep the returned slice; it is a copy.
func (c *Cache) DataKey(ctx context.Context, subjectID string, create bool) ([]byte, error) {
	if e, ok := c.lru.Get(subjectID); ok && c.now().Before(e.until) && c.current(ctx) {
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

// current reports whether the cached keys may be used in ctx: the store keeps no destroy
// generation, or ctx's request already compared it, or it is the one the cache last saw.
// A changed generation empties the cache (and stops the reads under way from filling it);
// an unreadable one makes the caller ask the store.
func (c *Cache) current(ctx context.Context) bool {
	if c.gens == nil {
		return true
	}
	rc, _ := ctx.Value(requestCheckKey{}).(*requestCheck) // nil: not a marked request, compare now
	if rc != nil && rc.done(c) {
		return true
	}
	g, err := c.gens.Generation(ctx)
	if err != nil {
		return false
	}
	c.mu.Lock()
	same := g == c.seen
	if !same {
		c.destroyed++
		c.lru.Purge()
		c.seen = g
	}
	c.mu.Unlock()
	if rc != nil {
		rc.mark(c)
	}
	return same
}

func (r *requestCheck) done(c *Cache) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.checked {
		if d == c {
			return true
		}
	}
	return false
}

func (r *requestCheck) mark(c *Cache) {
	r.mu.Lock()
	r.checked = append(r.checked, c)
	r.mu.Unlock()
}

func (c *Cache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.destroyed
}
