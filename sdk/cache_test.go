package sdk_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
)

// clock is an injectable clock for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// cachingClient is a client of key whose requests proxy counts, on clk.
func cachingClient(t *testing.T, proxy *devserver.Counter, key string, clk *clock) *sdk.Client {
	t.Helper()
	c, err := sdk.New(sdk.Options{BaseURL: proxy.URL, HTTPClient: proxy.Client, Key: key, Now: clk.Now, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// directClient is a client of key whose requests are not counted.
func directClient(t *testing.T, srv *devserver.Server, key string) *sdk.Client {
	t.Helper()
	c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// expectRequests checks that exactly the wanted requests were counted since the last
// check: each is "METHOD PATH STATUS" with " if-none-match" appended for a conditional one.
func expectRequests(t *testing.T, proxy *devserver.Counter, want ...string) {
	t.Helper()
	var got []string
	for _, r := range proxy.Take() {
		s := r.Method + " " + r.Path + " " + strconv.Itoa(r.Status)
		if r.IfNoneMatch != "" {
			s += " if-none-match"
		}
		got = append(got, s)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func remember(t *testing.T, c *sdk.Client, title, tag string) string {
	t.Helper()
	got, err := c.Remember(context.Background(), sdk.Note{Kind: "procedure", Title: title, Body: "Check the " + tag + " queue before you answer.", Tags: []string{tag}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Note == nil || got.Note.ID == "" {
		t.Fatalf("remember %q: %+v", title, got)
	}
	return got.Note.ID
}

// TestBlockFreshnessCountsRequests (CTX-4), against the real binary counting the requests the client sends:
// inside the space's 60 s period the block costs one request however often it is read; after
// the period one conditional request, answered 304, renews it; a note another client writes
// meanwhile shows up only after the period.
func TestBlockFreshnessCountsRequests(t *testing.T) {
	srv := devserver.Shared(t)
	proxy := srv.Counter(t)
	key := srv.Key(t, "cache-block-bot", devserver.AllScopes...)
	clk := newClock()
	c := cachingClient(t, proxy, key, clk)
	writer := directClient(t, srv, key)
	ctx := context.Background()
	remember(t, writer, "Refund queue first", "refund")
	opt := sdk.BlockOptions{MaxTokens: 300, Tags: []string{"refund"}}

	first, err := c.Block(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		b, err := c.Block(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !b.Fresh || !b.NotModified || b.Text != first.Text || b.ETag != first.ETag {
			t.Fatalf("inside the period: %+v, want the first answer served fresh", b)
		}
		clk.Advance(10 * time.Second)
	}
	if first.Fresh || first.NotModified || !strings.Contains(first.Text, "Refund queue first") {
		t.Fatalf("first block %+v", first)
	}
	expectRequests(t, proxy, "GET /v1/agent-memory/block 200")

	clk.Advance(21 * time.Second) // 61 s after the first answer
	b, err := c.Block(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !b.NotModified || b.Fresh || b.Text != first.Text {
		t.Fatalf("after the period: %+v, want a 304 served from the cache", b)
	}
	expectRequests(t, proxy, "GET /v1/agent-memory/block 304 if-none-match")
	clk.Advance(59 * time.Second) // the 304 renewed the period
	if b, err = c.Block(ctx, opt); err != nil || !b.Fresh {
		t.Fatalf("inside the renewed period: %+v %v", b, err)
	}
	expectRequests(t, proxy)

	remember(t, writer, "Gift card balance waits for the sync", "refund")
	if b, err = c.Block(ctx, opt); err != nil || !b.Fresh || strings.Contains(b.Text, "Gift card") {
		t.Fatalf("another client's note inside the period: %+v %v, want the cached block", b, err)
	}
	clk.Advance(2 * time.Second)
	if b, err = c.Block(ctx, opt); err != nil {
		t.Fatal(err)
	}
	if b.Fresh || b.NotModified || !strings.Contains(b.Text, "Gift card balance") || b.ETag == first.ETag {
		t.Fatalf("after the period: %+v, want the new block", b)
	}
	expectRequests(t, proxy, "GET /v1/agent-memory/block 200 if-none-match")
}

// TestBlockCachePerShapeAndOwnWrites: each call shape has its own entry (another max_tokens
// is a request of its own), and a note this client writes drops its cached answers, so its
// next block shows it at once.
func TestBlockCachePerShapeAndOwnWrites(t *testing.T) {
	srv := devserver.Shared(t)
	proxy := srv.Counter(t)
	key := srv.Key(t, "cache-shape-bot", devserver.AllScopes...)
	c := cachingClient(t, proxy, key, newClock())
	ctx := context.Background()
	remember(t, directClient(t, srv, key), "Invoice export runs hourly", "invoice")
	for _, mt := range []int{300, 200, 300, 200} {
		if _, err := c.Block(ctx, sdk.BlockOptions{MaxTokens: mt}); err != nil {
			t.Fatal(err)
		}
	}
	expectRequests(t, proxy, "GET /v1/agent-memory/block 200", "GET /v1/agent-memory/block 200")
	remember(t, c, "Invoice totals settle at noon", "invoice")
	expectRequests(t, proxy, "POST /v1/agent-memory/notes 201")
	b, err := c.Block(ctx, sdk.BlockOptions{MaxTokens: 300})
	if err != nil {
		t.Fatal(err)
	}
	if b.Fresh || !strings.Contains(b.Text, "Invoice totals settle at noon") {
		t.Fatalf("after this client's own write: %+v", b)
	}
	expectRequests(t, proxy, "GET /v1/agent-memory/block 200")
}

// TestNoCacheRevalidatesEveryCall: with agent_memory.cache_seconds 0 the service sends
// "private, no-cache" and every call is a conditional request (answered 304 while nothing
// changed).
func TestNoCacheRevalidatesEveryCall(t *testing.T) {
	srv := devserver.Shared(t)
	if err := srv.Features(0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Features(60); err != nil {
			t.Error(err)
		}
	})
	proxy := srv.Counter(t)
	key := srv.Key(t, "cache-none-bot", devserver.AllScopes...)
	c := cachingClient(t, proxy, key, newClock())
	ctx := context.Background()
	remember(t, directClient(t, srv, key), "Ask for the order date", "refund")
	for i := range 3 {
		b, err := c.Block(ctx, sdk.BlockOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b.Fresh || b.NotModified != (i > 0) {
			t.Fatalf("call %d: %+v", i, b)
		}
	}
	expectRequests(t, proxy, "GET /v1/agent-memory/block 200",
		"GET /v1/agent-memory/block 304 if-none-match", "GET /v1/agent-memory/block 304 if-none-match")
}
