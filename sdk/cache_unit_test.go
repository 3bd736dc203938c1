package sdk_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agentmemory/agentmemory/sdk"
)

// TestCacheBoundAndDirectives: CacheEntries bounds the shapes kept (least recently used out),
// "no-store" keeps nothing and a max-age among other directives is honoured.
func TestCacheBoundAndDirectives(t *testing.T) {
	var requests atomic.Int32
	cacheControl := "private, max-age=60"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("ETag", `"e-`+r.URL.RawQuery+`"`)
		w.Header().Set("Cache-Control", cacheControl)
		if r.Header.Get("If-None-Match") == `"e-`+r.URL.RawQuery+`"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte(`{"text":"notes ` + r.URL.RawQuery + `","enabled":true,"note_ids":[],"tokens":3}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	blocks := func(c *sdk.Client, sizes ...int) int32 {
		requests.Store(0)
		for _, mt := range sizes {
			if _, err := c.Block(ctx, sdk.BlockOptions{MaxTokens: mt}); err != nil {
				t.Fatal(err)
			}
		}
		return requests.Load()
	}
	one, err := sdk.New(sdk.Options{BaseURL: srv.URL, CacheEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := blocks(one, 100, 200, 100, 200); n != 4 {
		t.Fatalf("one entry, two alternating shapes: %d requests, want 4", n)
	}
	two, err := sdk.New(sdk.Options{BaseURL: srv.URL, CacheEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n := blocks(two, 100, 200, 100, 200); n != 2 {
		t.Fatalf("two entries: %d requests, want 2", n)
	}
	none, err := sdk.New(sdk.Options{BaseURL: srv.URL, CacheEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if n := blocks(none, 100, 100); n != 2 {
		t.Fatalf("no cache: %d requests, want 2", n)
	}
	cacheControl = "no-store"
	store, err := sdk.New(sdk.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if n := blocks(store, 100, 100); n != 2 {
		t.Fatalf("no-store: %d requests, want 2", n)
	}
	b, err := store.Block(ctx, sdk.BlockOptions{MaxTokens: 100})
	if err != nil || b.NotModified || b.Text != "notes max_tokens=100" {
		t.Fatalf("no-store keeps no ETag: %+v %v", b, err)
	}
}
