package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
)

// TestReadTurns: against the real binary, ReadTurns pages a conversation's masked turns
// oldest first without a gap or repeat, and a bad request is *Error 400 invalid_member.
func TestReadTurns(t *testing.T) {
	srv := devserver.Shared(t)
	key := srv.Key(t, "turns-reader-bot", devserver.AllScopes...)
	conv := fmt.Sprintf("sdk-turns-%p", t)
	var in []map[string]any
	for i := range 5 {
		in = append(in, map[string]any{"conversation_id": conv, "speaker": "customer", "text": fmt.Sprintf("turn %d: mail me at bia%d@example.com", i, i)})
	}
	srv.MustDo(t, "POST", "/v1/turns", key, map[string]any{"turns": in}, nil)
	c := directClient(t, srv, key)
	ctx := context.Background()
	var got []sdk.Turn
	req := sdk.ReadTurnsRequest{ConversationID: conv, Limit: 2}
	for range 10 {
		p, err := c.ReadTurns(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Turns...)
		if p.NextAfter == "" {
			break
		}
		req.After = p.NextAfter
	}
	if len(got) != 5 {
		t.Fatalf("got %d turns, want 5: %+v", len(got), got)
	}
	for i, tr := range got {
		if !strings.HasPrefix(tr.Text, fmt.Sprintf("turn %d:", i)) || strings.Contains(tr.Text, "@example.com") || tr.ConversationID != conv {
			t.Fatalf("turn %d: %+v", i, tr)
		}
	}
	_, err := c.ReadTurns(ctx, sdk.ReadTurnsRequest{ConversationID: conv, After: "nonsense"})
	var ae *sdk.Error
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "invalid_member" {
		t.Fatalf("a bad cursor: got %v, want 400 invalid_member", err)
	}
}
