package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/internal/turns/turnstest"
	"github.com/agentmemory/agentmemory/models"
)

// countTurns returns how many turn rows the space has.
func countTurns(t *testing.T, e *apptest.Env) int {
	n, err := e.DB.NewSelect().Model((*models.Turn)(nil)).Where("space_id = ?", e.SpaceID).Count(context.Background())
	require.NoError(t, err)
	return int(n)
}

// storedBytes returns every turn's stored text bytes, joined.
func storedBytes(t *testing.T, e *apptest.Env) string {
	var rows []models.Turn
	require.NoError(t, e.DB.NewSelect().Model(&rows).Where("space_id = ?", e.SpaceID).Scan(context.Background()))
	var b strings.Builder
	for _, r := range rows {
		b.Write(r.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestTurnsMaskedAtWrite(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		conv := turnstest.Load(t)[0]
		ctxKey := e.AgentKey("shop-bot", "acme", "context")
		r := e.MustDo(http.StatusCreated, "POST", "/v1/turns", ctxKey, map[string]any{"turns": conv.Turns})
		var ans struct {
			Turns []turns.Turn `json:"turns"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &ans))
		require.Len(t, ans.Turns, len(conv.Turns))
		for i, got := range ans.Turns {
			require.Equal(t, conv.ID, got.ConversationID)
			require.Equal(t, conv.Turns[i].Speaker, got.Speaker)
			require.True(t, strings.HasPrefix(got.ID, "turn_"), "got id %q", got.ID)
		}
		body := string(r.Body)
		for _, pii := range []string{conv.Email, conv.Phone} {
			require.NotContains(t, body, pii, "the answer must carry masked text only")
		}
		require.Contains(t, body, "<email>")
		require.Contains(t, body, "<phone>")

		stored := storedBytes(t, e)
		for _, pii := range []string{conv.Email, conv.Phone} {
			require.NotContains(t, stored, pii, "raw text must never be stored")
		}
		require.NotContains(t, stored, conv.ID, "the conversation id is stored only as a keyed hash")

		got, err := e.Deps.Turns.Recent(context.Background(), e.SpaceID, "conversation", conv.ID, time.Now().Add(-turns.Window))
		require.NoError(t, err)
		require.Len(t, got, len(conv.Turns))
		require.Equal(t, ans.Turns[10].Text, got[10].Text)
	})
}

func TestTurnsSealedUnderLinkedSubject(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		conv := turnstest.Load(t)[0]
		integ := e.PersonKey("crm", "integration")
		e.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{
			"name": conv.Name, "handles": []string{"email:" + conv.Email},
		})
		// Two turns before the link: stored masked, sealed under the conversation's key (issue 29 §1).
		e.MustDo(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"turns": conv.Turns[:2]})
		require.NotContains(t, storedBytes(t, e), conv.Turns[0].Text, "an unlinked turn is sealed, never in clear")

		r := e.MustDo(http.StatusCreated, "POST", "/v1/identity-links", integ, map[string]any{
			"conversation_id": conv.ID, "subject": "email:" + strings.ToUpper(conv.Email), "status": "confirmed",
		})
		link := r.JSON(t)
		require.Equal(t, "confirmed", link["status"])
		require.NotContains(t, string(r.Body), conv.Email)

		// The link sealed the earlier turns; later ones are sealed at write.
		e.MustDo(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"turns": conv.Turns[2:]})
		var rows []models.Turn
		require.NoError(t, e.DB.NewSelect().Model(&rows).Where("space_id = ?", e.SpaceID).Scan(context.Background()))
		require.Len(t, rows, len(conv.Turns))
		for _, row := range rows {
			require.NotEmpty(t, row.ProfileID, "turn %s: want sealed under the subject's key", row.ID)
		}
		stored := storedBytes(t, e)
		require.NotContains(t, stored, conv.Turns[0].Text, "sealed turns hold no text in clear")
		require.NotContains(t, stored, "<subject>")

		got, err := e.Deps.Turns.Recent(context.Background(), e.SpaceID, "conversation", conv.ID, time.Now().Add(-turns.Window))
		require.NoError(t, err)
		require.Len(t, got, len(conv.Turns))
		require.Equal(t, conv.Turns[0].Text, got[0].Text)
		for _, g := range got {
			require.NotContains(t, g.Text, conv.Email)
		}
		// The known subject's name is masked too.
		require.Equal(t, "<subject>", got[4].Text, "turn 4 is the customer's name")

		// Destroying the subject's key (erasure) makes its turns unreadable: they drop out.
		require.NoError(t, e.Keys.Destroy(context.Background(), rows[0].ProfileID))
		got, err = e.Deps.Turns.Recent(context.Background(), e.SpaceID, "conversation", conv.ID, time.Now().Add(-turns.Window))
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

func TestTurnsWindowAndSingle(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := e.PersonKey("crm", "integration")
		old := time.Now().UTC().Add(-91 * 24 * time.Hour).Format(time.RFC3339)
		e.MustDo(http.StatusCreated, "POST", "/v1/turns", key, map[string]any{"task_id": "t-1", "speaker": "agent", "text": "old", "at": old})
		r := e.MustDo(http.StatusCreated, "POST", "/v1/turns", key, map[string]any{"task_id": "t-1", "speaker": "customer", "text": "mail me at ana@example.com"})
		one := r.JSON(t)
		require.Equal(t, "mail me at <email>", one["text"])
		require.Equal(t, "t-1", one["task_id"])
		require.NotContains(t, one, "conversation_id")

		got, err := e.Deps.Turns.Recent(context.Background(), e.SpaceID, "task", "t-1", time.Now().Add(-turns.Window))
		require.NoError(t, err)
		require.Len(t, got, 1, "a turn older than 90 days is out of the window")
		require.Equal(t, "mail me at <email>", got[0].Text)
		other, err := e.Deps.Turns.Recent(context.Background(), e.SpaceID, "conversation", "t-1", time.Now().Add(-turns.Window))
		require.NoError(t, err)
		require.Empty(t, other, "a task and a conversation of the same id are different scopes")
	})
}

func TestTurnsRefused(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := e.PersonKey("crm", "integration")
		good := map[string]any{"conversation_id": "c-1", "speaker": "agent", "text": "hi"}
		cases := []struct {
			name   string
			key    string
			body   any
			status int
			code   string
			member string
		}{
			{"no id", key, map[string]any{"speaker": "agent", "text": "hi"}, 400, "invalid_member", "conversation_id"},
			{"both ids", key, map[string]any{"conversation_id": "c", "task_id": "t", "speaker": "agent", "text": "hi"}, 400, "invalid_member", "task_id"},
			{"bad speaker", key, map[string]any{"conversation_id": "c", "speaker": "bot", "text": "hi"}, 400, "invalid_member", "speaker"},
			{"empty text", key, map[string]any{"conversation_id": "c", "speaker": "agent", "text": ""}, 400, "invalid_member", "text"},
			{"bad at", key, map[string]any{"conversation_id": "c", "speaker": "agent", "text": "hi", "at": "yesterday"}, 400, "invalid_member", "at"},
			{"unknown member", key, map[string]any{"conversation_id": "c", "speaker": "agent", "text": "hi", "subject": "x"}, 400, "unknown_member", "subject"},
			{"batch member", key, map[string]any{"turns": []any{good, good, map[string]any{"conversation_id": "c", "speaker": "?", "text": "x"}}}, 400, "invalid_member", "turns[2].speaker"},
			{"empty batch", key, map[string]any{"turns": []any{}}, 400, "invalid_member", "turns"},
			{"agent without context", e.AgentKey("bot", "acme", "agent_memory"), good, 403, "scope_required", ""},
			{"person without integration", e.PersonKey("rev", "reviewer"), good, 403, "role_required", ""},
		}
		for _, tc := range cases {
			r := e.Do("POST", "/v1/turns", tc.key, tc.body)
			require.Equal(t, tc.status, r.Status, "%s: got %d, want %d: %s", tc.name, r.Status, tc.status, r.Body)
			require.Equal(t, tc.code, r.ErrorCode(t), tc.name)
			if tc.member != "" {
				require.Equal(t, tc.member, r.JSON(t)["error"].(map[string]any)["member"], tc.name)
			}
		}
		require.Zero(t, countTurns(t, e), "a refused request stores nothing")
		require.Equal(t, 400, e.Do("POST", "/v1/turns", key, `{"turns": [], "turns": []}`).Status)
	})
}

func TestIdentityLinks(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := e.AgentKey("shop-bot", "acme", "context")
		body := map[string]any{"conversation_id": "c-9", "subject": "email:nobody@example.com", "status": "unconfirmed"}
		r := e.MustDo(http.StatusCreated, "POST", "/v1/identity-links", key, body)
		id := r.JSON(t)["link_id"]
		l, err := e.Deps.Turns.LinkStatus(context.Background(), e.SpaceID, "conversation", "c-9")
		require.NoError(t, err)
		require.Equal(t, turns.Links{Unconfirmed: 1, UnconfirmedSubjects: 1}, l)
		require.True(t, l.OnlyUnconfirmed())

		body["status"] = "confirmed"
		r = e.MustDo(http.StatusOK, "POST", "/v1/identity-links", key, body)
		require.Equal(t, id, r.JSON(t)["link_id"])
		l, err = e.Deps.Turns.LinkStatus(context.Background(), e.SpaceID, "conversation", "c-9")
		require.NoError(t, err)
		require.Equal(t, turns.Links{Confirmed: 1}, l)
		require.False(t, l.OnlyUnconfirmed())

		// A confirmed link to one subject does not vouch for another reached only through an
		// unconfirmed link.
		e.MustDo(http.StatusCreated, "POST", "/v1/identity-links", key,
			map[string]any{"conversation_id": "c-9", "subject": "email:other@example.com", "status": "unconfirmed"})
		l, err = e.Deps.Turns.LinkStatus(context.Background(), e.SpaceID, "conversation", "c-9")
		require.NoError(t, err)
		require.Equal(t, turns.Links{Confirmed: 1, Unconfirmed: 1, UnconfirmedSubjects: 1}, l)
		require.True(t, l.OnlyUnconfirmed())

		for name, bad := range map[string]map[string]any{
			"subject": {"conversation_id": "c", "subject": "nobody@example.com", "status": "confirmed"},
			"status":  {"conversation_id": "c", "subject": "email:a@b.co", "status": "maybe"},
		} {
			r := e.Do("POST", "/v1/identity-links", key, bad)
			require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
			require.Equal(t, name, r.JSON(t)["error"].(map[string]any)["member"])
		}
		rec := e.MustDo(http.StatusOK, "GET", "/v1/receipts", e.AdminKey, nil)
		require.Contains(t, string(rec.Body), `"identity_link.create"`)
		require.Contains(t, string(rec.Body), `"identity_link.update"`)
		require.NotContains(t, string(rec.Body), "nobody@example.com")
	})
}
