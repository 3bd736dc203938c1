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

// TestStateLeaseFencesTheOtherRun runs the working-memory lease helpers against the real
// service (issue 31): two runs of one agent share its instance's state (scope kind agent);
// while run one holds the lease (released with defer), run two's write is ErrLeaseHeld;
// once released, run one's write with it is ErrLeaseLost and run two writes, and the next
// lease's fencing token is higher.
func TestStateLeaseFencesTheOtherRun(t *testing.T) {
	srv := devserver.Shared(t)
	agent := fmt.Sprintf("planner%d", time.Now().UnixNano())
	srv.MustDo(t, "PUT", "/v1/documents/object-types", srv.Admin, map[string]any{"types": []any{map[string]any{
		"type": agent, "ownership": "agent", "fields": map[string]any{"plan": map[string]any{"type": "string"}},
		"agent_state": map[string]any{"scope": "agent"},
	}}}, nil)
	ctx := context.Background()
	run := func() *sdk.StateHandle {
		var out struct {
			Key string `json:"key"`
		}
		srv.MustDo(t, "POST", "/v1/keys", srv.Admin, map[string]any{"kind": "agent", "agent": agent, "vendor": "sdk-vendor", "scopes": []string{"agent_state"}}, &out)
		c, err := sdk.New(sdk.Options{BaseURL: srv.URL, Key: out.Key})
		if err != nil {
			t.Fatal(err)
		}
		return c.AgentState(sdk.Scope{Kind: "agent", ID: "instance-1"})
	}
	one, two := run(), run()

	var lease *sdk.StateLease
	func() {
		l, err := one.Lease(ctx, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}()
		if l.Token != 1 {
			t.Errorf("got token %d, want 1", l.Token)
		}
		if _, err := two.Put(ctx, map[string]any{"plan": "two"}); !errors.Is(err, sdk.ErrLeaseHeld) {
			t.Fatalf("got %v, want ErrLeaseHeld", err)
		}
		if res, err := l.Put(ctx, map[string]any{"plan": "one"}); err != nil || !res.Stored {
			t.Fatalf("got %+v, %v, want stored", res, err)
		}
		if err := l.Renew(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		lease = l
	}()
	if _, err := lease.Put(ctx, map[string]any{"plan": "late"}); !errors.Is(err, sdk.ErrLeaseLost) {
		t.Fatalf("got %v, want ErrLeaseLost after release", err)
	}
	if res, err := two.Put(ctx, map[string]any{"plan": "two"}); err != nil || !res.Stored {
		t.Fatalf("got %+v, %v, want stored once released", res, err)
	}
	next, err := two.Lease(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if next.Token != 2 {
		t.Errorf("got token %d, want 2: the token grows with every grant", next.Token)
	}
}
