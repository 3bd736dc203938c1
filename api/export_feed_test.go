package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/feed"
	"github.com/agentmemory/agentmemory/models"
)

type feedPage struct {
	Records   []feed.Record `json:"records"`
	NextAfter int64         `json:"next_after"`
}

func getFeed(t *testing.T, e *apptest.Env, query, key string) feedPage {
	t.Helper()
	r := e.MustDo(http.StatusOK, "GET", "/v1/export/feed"+query, key, nil)
	var p feedPage
	require.NoError(t, json.Unmarshal(r.Body, &p), "%s", r.Body)
	return p
}

// TestExportFeedAPI: the feed through the API: what agents write reaches it (a note's content,
// a state's metadata but never its body), pages by cursor, filters by table, and answers
// only role admin or scope export.
func TestExportFeedAPI(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}, "agent_memory": map[string]any{"enabled": true}})
		e.PutDocument("object-types", apptest.ShopBotTypes())
		bot := e.AgentKey("shop-bot", "acme-ai", "agent_state", "agent_memory", "agent_memory:write")
		e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", bot,
			map[string]any{"kind": "tool_note", "title": "Stock API pagination", "body": "Follow next_cursor until empty."})
		w := e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", bot,
			map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c-1"}, "body": map[string]any{"step": "sizes-and-colours"}})
		require.Equal(t, true, w.JSON(t)["stored"], "%s", w.Body)

		all := getFeed(t, e, "?limit=1000", e.AdminKey)
		tables := map[string]int{}
		for i, r := range all.Records {
			require.Equal(t, int64(i+1), r.Cursor)
			tables[r.Table]++
		}
		require.Equal(t, all.Records[len(all.Records)-1].Cursor, all.NextAfter)
		require.Equal(t, 1, tables["notes"], "%v", tables)
		require.Equal(t, 1, tables["agent_states"], "%v", tables)
		require.GreaterOrEqual(t, tables["keys"], 2, "the keys minted: %v", tables)
		require.GreaterOrEqual(t, tables["documents"], 1, "%v", tables)

		notes := getFeed(t, e, "?tables=notes,agent_states", e.AdminKey)
		require.Len(t, notes.Records, 2)
		require.Contains(t, string(notes.Records[0].Row)+string(notes.Records[1].Row), "Follow next_cursor until empty.")
		require.NotContains(t, string(notes.Records[0].Row)+string(notes.Records[1].Row), "sizes-and-colours", "WM-11")

		first := getFeed(t, e, "?limit=2", e.AdminKey)
		rest := getFeed(t, e, "?limit=1000&after=2", e.AdminKey)
		require.Equal(t, int64(2), first.NextAfter)
		require.Equal(t, all.Records, append(first.Records, rest.Records...))
		empty := getFeed(t, e, "?after=100000", e.AdminKey)
		require.Empty(t, empty.Records)
		require.Equal(t, int64(100000), empty.NextAfter)

		exporter := e.AgentKey("lake-loader", "acme-data", "export")
		require.Equal(t, notes.Records, getFeed(t, e, "?tables=notes,agent_states", exporter).Records)
		e.MustDo(http.StatusForbidden, "GET", "/v1/export/feed", bot, nil)
		e.MustDo(http.StatusForbidden, "GET", "/v1/export/feed", e.PersonKey("Rui", "reviewer"), nil)
		e.MustDo(http.StatusUnauthorized, "GET", "/v1/export/feed", "", nil)
		bad := e.MustDo(http.StatusBadRequest, "GET", "/v1/export/feed?tables=notes,turns", e.AdminKey, nil)
		require.Equal(t, "invalid_query", bad.ErrorCode(t))
		e.MustDo(http.StatusBadRequest, "GET", "/v1/export/feed?limit=0", e.AdminKey, nil)
	})
}

// TestExportFeedRetention: the retention sweep prunes feed records past
// AGENTMEMORY_EXPORT_FEED_RETENTION only once every configured sink acknowledged them (a
// sink that never delivered holds them all); a reader whose `after` is below the pruned
// range gets 410 cursor_expired naming the oldest cursor, and reads on from it without a
// gap.
func TestExportFeedRetention(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true},
			"export": map[string]any{"sinks": []map[string]any{{"name": "lake", "kind": "directory"}}}})
		bot := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		for i := range 3 {
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", bot,
				map[string]any{"scope": map[string]any{"kind": "conversation", "id": fmt.Sprintf("c-%d", i)}, "body": map[string]any{"step": i}})
		}
		require.NoError(t, feed.AdvanceAll(ctx, e.DB, e.SpaceID))
		_, err := e.DB.NewUpdate().Model((*models.FeedChange)(nil)).Set("changed_us = changed_us - ?", (48*time.Hour).Microseconds()).
			Where("space_id = ?", e.SpaceID).Exec(ctx)
		require.NoError(t, err)
		all := getFeed(t, e, "?limit=1000", e.AdminKey)
		head := all.NextAfter
		e.App.Compliance.FeedRetention = 24 * time.Hour
		sweep := func() {
			_, err := e.App.Compliance.SweepBatch(ctx, e.SpaceID, compliance.PhaseExports, "", 500)
			require.NoError(t, err)
		}

		sweep()
		require.Equal(t, all.Records, getFeed(t, e, "?limit=1000", e.AdminKey).Records, "the sink acknowledged nothing: nothing pruned")

		require.NoError(t, feed.RecordDelivery(ctx, e.DB, e.SpaceID, "lake", feed.KindDirectory, head-2, true, "", time.Now()))
		sweep()
		gone := e.MustDo(http.StatusGone, "GET", "/v1/export/feed?after=0", e.AdminKey, nil)
		require.Equal(t, "cursor_expired", gone.ErrorCode(t))
		require.Equal(t, json.Number(strconv.FormatInt(head-2, 10)), gone.JSON(t)["error"].(map[string]any)["oldest_cursor"], "%s", gone.Body)
		e.MustDo(http.StatusGone, "GET", fmt.Sprintf("/v1/export/feed?after=%d", head-3), e.AdminKey, nil)
		rest := getFeed(t, e, fmt.Sprintf("?limit=1000&after=%d", head-2), e.AdminKey)
		require.Equal(t, all.Records[len(all.Records)-2:], rest.Records, "the unacknowledged records stay, in order")
	})
}
