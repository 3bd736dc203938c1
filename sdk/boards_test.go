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
