package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
)

// TestBoardGetPutAndLease runs the board helpers against the real service: a stale Put is
// merged by the fields' rules and says which settled each field; a lease keeps the other
// handler out until released with defer; a released lease's renewal is ErrLeaseLost.
func TestBoardGetPutAndLease(t *testing.T) {
	srv := devserver.Shared(t)
	typ := fmt.Sprintf("sdkboard%d", time.Now().UnixNano())
	srv.MustDo(t, "PUT", "/v1/documents/object-types", srv.Admin, map[string]any{"types": []any{map[string]any{
		"type": typ, "ownership": "shared",
		"fields": map[string]any{
			"hits": map[string]any{"type": "integer", "conflict": map[string]any{"rule": "sum"}},
			"tags": map[string]any{"type": "array", "conflict": map[string]any{"rule": "union"}},
		},
	}}}, nil)
	srv.MustDo(t, "POST", "/v1/boards/"+typ+"/grants", srv.Admin, map[string]any{"vendor": "sdk-vendor", "access": "read_write"}, nil)
	ctx := context.Background()
	client := func() *sdk.Client {
		c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: srv.Key(t, "boarder")})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := client().Board(typ, "inc-1"), client().Board(typ, "inc-1")

	if _, err := a.Put(ctx, map[string]any{"hits": 1, "tags": []string{"a"}}, 0); err != nil {
		t.Fatal(err)
	}
	res, err := b.Put(ctx, map[string]any{"hits": 1, "tags": []string{"b"}}, 0) // stale: b never read
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stored || res.Version != 2 || len(res.Settled) != 2 || res.Settled[0] != (sdk.Settled{Field: "hits", Rule: "sum"}) {
		t.Fatalf("got %+v, want stored at version 2, hits settled by sum and tags by union", res)
	}
	got, err := a.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Body["hits"]) != "2" || string(got.Body["tags"]) != `["a","b"]` || got.Version != 2 {
		t.Fatalf("got %v at %d, want hits 2 and tags [a b] at version 2", got.Body, got.Version)
	}

	var lease *sdk.Lease
	func() {
		l, err := a.Lease(ctx, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}()
		if _, err := b.Put(ctx, map[string]any{"hits": 3}, 2); !errors.Is(err, sdk.ErrLeaseHeld) {
			t.Fatalf("got %v, want ErrLeaseHeld", err)
		}
		if _, err := l.Put(ctx, map[string]any{"hits": 3}, 2); err != nil {
			t.Fatal(err)
		}
		if err := l.Renew(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		lease = l
	}()
	if err := lease.Renew(ctx, time.Minute); !errors.Is(err, sdk.ErrLeaseLost) {
		t.Errorf("got %v, want ErrLeaseLost after release", err)
	}
	if _, err := b.Put(ctx, map[string]any{"hits": 4}, 3); err != nil {
		t.Fatalf("after the release a write without a lease passes: %v", err)
	}
}

// TestBridgedBoardGet reads a board of another space through a bridge both spaces approved;
// before it, and for a board it does not list, Get is 404 board_not_found, as for a space
// that does not exist.
func TestBridgedBoardGet(t *testing.T) {
	srv := devserver.Shared(t)
	ctx := context.Background()
	typ := fmt.Sprintf("sdkbridge%d", time.Now().UnixNano())
	from := srv.NewSpace(t, "bridge-from")
	srv.MustDo(t, "PUT", "/v1/documents/object-types", from.Admin, map[string]any{"types": []any{map[string]any{
		"type": typ, "ownership": "shared", "fields": map[string]any{"title": map[string]any{"type": "string"}},
	}}}, nil)
	srv.MustDo(t, "POST", "/v1/boards/"+typ+"/grants", from.Admin, map[string]any{"agent": "writer", "access": "read_write"}, nil)
	var writerKey, readerKey struct {
		Key string `json:"key"`
	}
	srv.MustDo(t, "POST", "/v1/keys", from.Admin, map[string]any{"kind": "agent", "agent": "writer", "vendor": "v", "scopes": []string{}}, &writerKey)
	to := srv.SharedSpace(t)
	srv.MustDo(t, "POST", "/v1/keys", to.Admin, map[string]any{"kind": "agent", "agent": "bridge-reader", "vendor": "v", "scopes": []string{}}, &readerKey)
	newClient := func(key string) *sdk.Client {
		c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := newClient(writerKey.Key).Board(typ, "inc-1").Put(ctx, map[string]any{"title": "disk full"}, 0); err != nil {
		t.Fatal(err)
	}
	reader := newClient(readerKey.Key).BridgedBoard(from.ID, typ, "inc-1")
	var apiErr *sdk.Error
	if _, err := reader.Get(ctx); !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != "board_not_found" {
		t.Fatalf("got %v before the bridge, want 404 board_not_found", err)
	}
	srv.OpenBridge(t, from, to, []string{"bridge-reader"}, []map[string]any{{"type": typ, "ids": "inc-*"}})
	got, err := reader.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Body["title"]) != `"disk full"` || got.Version != 1 {
		t.Fatalf("got %v at %d, want title disk full at version 1", got.Body, got.Version)
	}
	if _, err := newClient(readerKey.Key).BridgedBoard(from.ID, typ, "other-1").Get(ctx); !errors.As(err, &apiErr) || apiErr.Code != "board_not_found" {
		t.Fatalf("got %v for a board the bridge does not list, want 404 board_not_found", err)
	}
}
