package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/models"
)

type turnsPage struct {
	Turns     []turns.Turn `json:"turns"`
	NextAfter string       `json:"next_after"`
}

// readAllTurns pages POST /v1/turns/read of conv with limit, following next_after.
func readAllTurns(t *testing.T, e *apptest.Env, key, conv string, limit int) []turns.Turn {
	t.Helper()
	var out []turns.Turn
	after := ""
	for range 100 {
		r := e.MustDo(http.StatusOK, "POST", "/v1/turns/read", key, map[string]any{"conversation_id": conv, "after": after, "limit": limit})
		var p turnsPage
		require.NoError(t, json.Unmarshal(r.Body, &p), "%s", r.Body)
		require.LessOrEqual(t, len(p.Turns), limit)
		out = append(out, p.Turns...)
		if p.NextAfter == "" {
			return out
		}
		after = p.NextAfter
	}
	t.Fatal("paging never ended")
	return nil
}

// TestTurnsReadPagesMaskedTurns: POST /v1/turns/read returns a conversation's masked turns
// oldest first (turns of the same instant by id), paged without a gap or repeat; it is
// receipted (turns.read, the conversation named by its keyed hash, never its id); role and
// scope are those of writing turns; a bad body is 400 and changes nothing.
func TestTurnsReadPagesMaskedTurns(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctxKey := e.AgentKey("shop-bot", "acme", "context")
		conv := "conv-read-1"
		base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(time.Now().Unix()%1000) * time.Second)
		var in []map[string]any
		for i := range 7 {
			at := base.Add(time.Duration(i/2) * time.Second) // pairs share an instant
			in = append(in, map[string]any{"conversation_id": conv, "speaker": "customer",
				"text": fmt.Sprintf("turn %d, write to ana%d@example.com", i, i), "at": at.Format(time.RFC3339Nano)})
		}
		e.MustDo(http.StatusCreated, "POST", "/v1/turns", ctxKey, map[string]any{"turns": in})
		e.MustDo(http.StatusCreated, "POST", "/v1/turns", ctxKey, map[string]any{"conversation_id": "other", "speaker": "agent", "text": "not this one"})

		all := readAllTurns(t, e, ctxKey, conv, 100)
		require.Len(t, all, 7)
		for i, tr := range all {
			require.Equal(t, conv, tr.ConversationID)
			require.Contains(t, tr.Text, fmt.Sprintf("turn %d,", i), "oldest first")
			require.NotContains(t, tr.Text, "@example.com", "masked")
			require.Contains(t, tr.Text, "<email>")
		}
		for _, limit := range []int{1, 2, 3} {
			require.Equal(t, all, readAllTurns(t, e, ctxKey, conv, limit), "pages of %d", limit)
		}
		integ := e.PersonKey("crm", "integration")
		require.Equal(t, all, readAllTurns(t, e, integ, conv, 100), "role integration reads too")

		var recs []models.Receipt
		require.NoError(t, e.DB.NewSelect().Model(&recs).Where("space_id = ? AND action = 'turns.read'", e.SpaceID).Scan(context.Background()))
		require.NotEmpty(t, recs)
		hash := e.Deps.Turns.ScopeHash(e.SpaceID, "conversation", conv)
		for _, r := range recs {
			require.NotContains(t, r.Detail+r.ObjectIDs, conv, "the receipt never names the conversation's id")
			require.Contains(t, r.Detail, hash, "the receipt names the conversation by its keyed hash")
		}

		before := len(recs)
		for _, body := range []any{
			`{"conversation_id": "c", "extra": 1}`, `{}`, `[1]`, `not json`,
			map[string]any{"conversation_id": conv, "task_id": "t"},
			map[string]any{"conversation_id": conv, "after": "nonsense"},
			map[string]any{"conversation_id": conv, "limit": 501},
			map[string]any{"conversation_id": conv, "limit": -1},
		} {
			r := e.MustDo(http.StatusBadRequest, "POST", "/v1/turns/read", ctxKey, body)
			require.NotEmpty(t, r.ErrorCode(t), "%v: %s", body, r.Body)
		}
		e.MustDo(http.StatusForbidden, "POST", "/v1/turns/read", e.AgentKey("crm-bot", "acme", "agent_state"), map[string]any{"conversation_id": conv})
		e.MustDo(http.StatusForbidden, "POST", "/v1/turns/read", e.PersonKey("Rui", "reviewer"), map[string]any{"conversation_id": conv})
		e.MustDo(http.StatusUnauthorized, "POST", "/v1/turns/read", "", map[string]any{"conversation_id": conv})
		n, err := e.DB.NewSelect().Model((*models.Receipt)(nil)).Where("space_id = ? AND action = 'turns.read'", e.SpaceID).Count(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, before, n, "a refused read leaves no receipt")
	})
}

// TestTurnsReadErasedConversationAnswersAsNeverExisted: once a conversation is erased, reading
// it gives exactly the answer of a conversation that never existed.
func TestTurnsReadErasedConversationAnswersAsNeverExisted(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctxKey := e.AgentKey("shop-bot", "acme", "context")
		e.MustDo(http.StatusCreated, "POST", "/v1/turns", ctxKey, map[string]any{"conversation_id": "conv-gone", "speaker": "customer", "text": "my number is +55 11 98765-4321"})
		got := e.MustDo(http.StatusOK, "POST", "/v1/turns/read", ctxKey, map[string]any{"conversation_id": "conv-gone"})
		require.Contains(t, string(got.Body), "<phone>")

		_, err := e.Deps.Turns.EraseConversation(context.Background(), e.DB, e.SpaceID, "conv-gone")
		require.NoError(t, err)
		erased := e.MustDo(http.StatusOK, "POST", "/v1/turns/read", ctxKey, map[string]any{"conversation_id": "conv-gone"})
		never := e.MustDo(http.StatusOK, "POST", "/v1/turns/read", ctxKey, map[string]any{"conversation_id": "conv-never"})
		require.Equal(t, string(never.Body), string(erased.Body))
		require.Equal(t, never.Status, erased.Status)
		require.True(t, strings.Contains(string(never.Body), `"turns":[]`), "%s", never.Body)
	})
}
