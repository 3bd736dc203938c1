package console_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/feed"
)

// sinkRow matches a row of the Settings screen's export sinks table: name, kind, cursor, lag.
var sinkRow = regexp.MustCompile(`<tr><td><code>([a-z0-9_-]+)</code></td><td>([a-z]+)</td><td class="num">(\d+)</td><td class="num">(\d+)</td>`)

// TestConsoleSettingsShowsSinks (issue 33): Settings lists every sink features export.sinks
// configures, in order, with its acknowledged cursor and its lag behind the feed's head (a
// sink that never delivered: cursor 0, lag the whole feed, "not delivered yet"), and a
// failing sink's last error.
func TestConsoleSettingsShowsSinks(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		ctx := context.Background()
		b := signIn(t, e, e.PersonKey("Ada", "admin"))
		require.Contains(t, b.get("/console/settings").Body, "No export sinks")

		e.PutDocument("features", map[string]any{"export": map[string]any{"sinks": []map[string]any{
			{"name": "lake", "kind": "directory"}, {"name": "stream", "kind": "kafka"}}}})
		require.NoError(t, feed.AdvanceAll(ctx, e.DB, e.SpaceID))
		last, _, err := feed.Head(ctx, e.DB, e.SpaceID)
		require.NoError(t, err)
		require.Positive(t, last)
		require.NoError(t, feed.RecordDelivery(ctx, e.DB, e.SpaceID, "lake", feed.KindDirectory, last-1, true, "", time.Now()))
		require.NoError(t, feed.RecordDelivery(ctx, e.DB, e.SpaceID, "stream", feed.KindKafka, 0, false, "kafka not configured on this server", time.Now()))

		body := b.get("/console/settings").Body
		rows := sinkRow.FindAllStringSubmatch(body, -1)
		require.Len(t, rows, 2, "%s", body)
		// The page itself leaves receipts (feed records) before it reads the head: the lag
		// is at least what the sink had not acknowledged.
		require.Equal(t, []string{"lake", "directory", fmt.Sprint(last - 1)}, rows[0][1:4])
		require.Equal(t, []string{"stream", "kafka", "0"}, rows[1][1:4])
		var lakeLag, streamLag int64
		_, err = fmt.Sscan(rows[0][4], &lakeLag)
		require.NoError(t, err)
		_, err = fmt.Sscan(rows[1][4], &streamLag)
		require.NoError(t, err)
		require.GreaterOrEqual(t, lakeLag, int64(1))
		require.Equal(t, streamLag, lakeLag+last-1, "both lag behind the same head")
		require.Contains(t, body, "kafka not configured on this server")
		require.Contains(t, body, `<span class="badge ok">ok</span>`)
	})
}
