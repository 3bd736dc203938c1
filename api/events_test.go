package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

func enqueueEvent(t *testing.T, e *apptest.Env, space, noteID string) events.Event {
	t.Helper()
	var ev events.Event
	require.NoError(t, e.DB.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		ev, err = events.Enqueue(ctx, tx, events.Event{Type: events.TypeNoteCreated, SpaceID: space, NoteID: noteID, Kind: "pitfall", Origin: "human"}, time.Now())
		return err
	}))
	return ev
}

type eventsPage struct {
	Events []struct {
		Seq       int64            `json:"seq"`
		Event     events.Event     `json:"event"`
		Published events.Published `json:"published"`
	} `json:"events"`
	NextAfter int64 `json:"next_after"`
}

func getEvents(t *testing.T, e *apptest.Env, query, key string) eventsPage {
	t.Helper()
	r := e.MustDo(http.StatusOK, "GET", "/v1/events"+query, key, nil)
	var page eventsPage
	require.NoError(t, json.Unmarshal(r.Body, &page), "%s", r.Body)
	return page
}

func TestListEvents(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		other, _, err := spaces.Create(context.Background(), e.DB, "other", time.Now())
		require.NoError(t, err)
		first := enqueueEvent(t, e, e.SpaceID, "note_1")
		enqueueEvent(t, e, other, "note_other")
		second := enqueueEvent(t, e, e.SpaceID, "note_2")

		page := getEvents(t, e, "", e.AdminKey)
		require.Len(t, page.Events, 2, "only the caller's space: %+v", page)
		require.Equal(t, first, page.Events[0].Event)
		require.Equal(t, second, page.Events[1].Event)
		require.Equal(t, "pending", page.Events[0].Published.State, "no relay runs: the outbox fills")
		require.Equal(t, page.Events[1].Seq, page.NextAfter)

		integration := e.PersonKey("ops", "integration")
		page1 := getEvents(t, e, "?limit=1", integration)
		require.Len(t, page1.Events, 1)
		require.Equal(t, first.ID, page1.Events[0].Event.ID)
		page2 := getEvents(t, e, "?after="+itoa(page1.NextAfter)+"&limit=1", integration)
		require.Len(t, page2.Events, 1)
		require.Equal(t, second.ID, page2.Events[0].Event.ID)
		page3 := getEvents(t, e, "?after="+itoa(page2.NextAfter), integration)
		require.Empty(t, page3.Events)
		require.Equal(t, page2.NextAfter, page3.NextAfter)

		for _, q := range []string{"?limit=0", "?limit=1001", "?after=-1", "?after=x"} {
			r := e.MustDo(http.StatusBadRequest, "GET", "/v1/events"+q, e.AdminKey, nil)
			require.Equal(t, "invalid_query", r.ErrorCode(t), q)
		}
		reviewer := e.PersonKey("rev", "reviewer")
		e.MustDo(http.StatusForbidden, "GET", "/v1/events", reviewer, nil)
		agent := e.AgentKey("shop-bot", "acme", "agent_memory", "agent_memory:write")
		e.MustDo(http.StatusForbidden, "GET", "/v1/events", agent, nil)
		e.MustDo(http.StatusUnauthorized, "GET", "/v1/events", "", nil)
	})
}

func TestWebhookSecret(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		hasher := keyed.New([]byte(apptest.Secret))
		want, err := events.Signer{Hasher: &hasher}.Secret(e.SpaceID)
		require.NoError(t, err)
		r := e.MustDo(http.StatusOK, "GET", "/v1/events/webhook-secret", e.AdminKey, nil)
		require.Equal(t, want, r.JSON(t)["secret"])
		require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
		e.MustDo(http.StatusForbidden, "GET", "/v1/events/webhook-secret", e.PersonKey("ops", "integration"), nil)
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestStateWritesEmitNoEvents: working-memory writes (stored or over the cap) are not events
// (AM-13 names notes and proposals only), so the outbox stays empty.
func TestStateWritesEmitNoEvents(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		e.PutDocument("object-types", apptest.ShopBotTypes())
		agent := e.AgentKey("shop-bot", "acme", "agent_state")
		write := func(offer string) map[string]any {
			return e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", agent, map[string]any{
				"scope": map[string]any{"kind": "conversation", "id": "conv-1"}, "agent": "shop-bot",
				"body": map[string]any{"offer": offer},
			}).JSON(t)
		}
		require.Equal(t, true, write("ten percent")["stored"])
		over := write(strings.Repeat("x", 20000))
		require.Equal(t, false, over["stored"])
		require.Equal(t, "over_cap", over["reason"])
		require.Empty(t, getEvents(t, e, "", e.AdminKey).Events)
	})
}

// TestFeaturesRefusePrivateWebhookURL: PUT /v1/documents/features refuses a webhook URL
// aimed at the server's own network (SSRF) with 400 naming the member, without the URL.
func TestFeaturesRefusePrivateWebhookURL(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		for _, u := range []string{"http://127.0.0.1:5432/", "http://169.254.169.254/latest/meta-data/", "https://a:b@hooks.example.com/"} {
			body := map[string]any{"agent_memory": map[string]any{"enabled": true, "webhook_url": u}}
			r := e.MustDo(http.StatusBadRequest, "PUT", "/v1/documents/features", e.AdminKey, body)
			require.Contains(t, string(r.Body), `"member":"agent_memory.webhook_url"`)
			require.NotContains(t, string(r.Body), u)
		}
		e.MustDo(http.StatusOK, "PUT", "/v1/documents/features", e.AdminKey,
			map[string]any{"agent_memory": map[string]any{"enabled": true, "webhook_url": "https://hooks.example.com/in"}})
	})
}
