package sdk

import (
	"container/list"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultCacheEntries bounds the answers a Client keeps for Block and Context (CTX-4): the
// least recently used call shape is dropped beyond it.
const DefaultCacheEntries = 256

// cacheEntry is one cached answer of a call shape: the decoded value (Block or Context), its
// ETag for If-None-Match, and until when it may be reused without a request.
type cacheEntry struct {
	key        string
	value      any
	etag       string
	freshUntil time.Time
}

// answerCache holds the block and context answers per call shape, least recently used first
// out. It is guarded by Client.mu.
type answerCache struct {
	max   int
	order *list.List // of *cacheEntry, most recently used at the front
	byKey map[string]*list.Element
}

func newAnswerCache(max int) *answerCache {
	return &answerCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the entry of key (nil when absent) and marks it used.
func (a *answerCache) get(key string) *cacheEntry {
	el, ok := a.byKey[key]
	if !ok {
		return nil
	}
	a.order.MoveToFront(el)
	return el.Value.(*cacheEntry)
}

// put stores e under e.key, dropping the least recently used entry beyond max. A cache of
// max <= 0 keeps nothing.
func (a *answerCache) put(e *cacheEntry) {
	if a.max <= 0 {
		return
	}
	if el, ok := a.byKey[e.key]; ok {
		el.Value = e
		a.order.MoveToFront(el)
		return
	}
	a.byKey[e.key] = a.order.PushFront(e)
	for a.order.Len() > a.max {
		last := a.order.Back()
		a.order.Remove(last)
		delete(a.byKey, last.Value.(*cacheEntry).key)
	}
}

// drop forgets key.
func (a *answerCache) drop(key string) {
	if el, ok := a.byKey[key]; ok {
		a.order.Remove(el)
		delete(a.byKey, key)
	}
}

// clear forgets everything (after this client's own note write: read your writes).
func (a *answerCache) clear() {
	a.order.Init()
	clear(a.byKey)
}

// freshness reads an answer's Cache-Control (CTX-4): "max-age=N" gives N seconds of reuse
// without a request; "no-cache", an absent header or max-age=0 give none (revalidate every
// call). store is false for "no-store": the answer must not be kept at all.
func freshness(h http.Header) (maxAge time.Duration, store bool) {
	store = true
	for _, part := range strings.Split(h.Get("Cache-Control"), ",") {
		d := strings.ToLower(strings.TrimSpace(part))
		switch {
		case d == "no-store":
			return 0, false
		case d == "no-cache":
			return 0, true
		case strings.HasPrefix(d, "max-age="):
			n, err := strconv.Atoi(strings.Trim(strings.TrimPrefix(d, "max-age="), `"`))
			if err == nil && n > 0 {
				maxAge = time.Duration(n) * time.Second
			}
		}
	}
	return maxAge, store
}

// now is the client's clock (Options.Now, else time.Now).
func (c *Client) now() time.Time {
	if c.opt.Now != nil {
		return c.opt.Now()
	}
	return time.Now()
}

// cachedGet runs one cached call of a block or context shape (CTX-4). Inside the cached
// answer's freshness period it returns it without any request (fresh and notModified true).
// Otherwise fetch is called with the cached ETag ("" when none): a 304 renews the period and
// returns the cached value (notModified true); a 200 replaces the entry. fetch returns the
// decoded value, the answer's headers and its status.
func (c *Client) cachedGet(key string, fetch func(etag string) (any, http.Header, int, error)) (value any, fresh, notModified bool, err error) {
	c.mu.Lock()
	e := c.cache.get(key)
	var etag string
	if e != nil {
		if c.now().Before(e.freshUntil) {
			v := e.value
			c.mu.Unlock()
			return v, true, true, nil
		}
		etag = e.etag
	}
	c.mu.Unlock()
	v, h, status, err := fetch(etag)
	if err != nil {
		return nil, false, false, err
	}
	maxAge, store := freshness(h)
	c.mu.Lock()
	defer c.mu.Unlock()
	if status == http.StatusNotModified && e != nil {
		if !store {
			c.cache.drop(key)
			return e.value, false, true, nil
		}
		c.cache.put(&cacheEntry{key: key, value: e.value, etag: e.etag, freshUntil: c.now().Add(maxAge)})
		return e.value, false, true, nil
	}
	newTag := h.Get("ETag")
	if store && newTag != "" {
		c.cache.put(&cacheEntry{key: key, value: v, etag: newTag, freshUntil: c.now().Add(maxAge)})
	} else {
		c.cache.drop(key)
	}
	return v, false, false, nil
}

// forgetAnswers drops every cached block and context: called after this client wrote a note,
// so that its next block or context shows it at once (the period applies to others' writes).
func (c *Client) forgetAnswers() {
	c.mu.Lock()
	c.cache.clear()
	c.mu.Unlock()
}
