package console_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/quotas"
)

// TestConsoleUsagePage (issue 34 §1): the Usage screen lists each quota with its use and its
// limit (features.quotas, else the default) and draws the last 30 days of each space-wide
// series as inline SVG from the daily samples (today: the live count), with no script; it
// is in the navigation of admin and security, and refused to other roles. Both databases.
func TestConsoleUsagePage(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, clk *clock) {
		ctx := context.Background()
		e.PutDocument("features", map[string]any{"quotas": map[string]any{"turns_per_space": 40}})
		bot := e.AgentKey("shop-bot", "acme", "context")
		// Two days ago 2 turns were stored and sampled; today 5 are.
		for i := 0; i < 2; i++ {
			e.MustDo(http.StatusCreated, "POST", "/v1/turns", bot, map[string]any{"conversation_id": "c-1", "speaker": "agent", "text": "hello"})
		}
		require.NoError(t, quotas.Sample(ctx, e.DB, e.SpaceID, clk.Now().AddDate(0, 0, -2)))
		for i := 0; i < 3; i++ {
			e.MustDo(http.StatusCreated, "POST", "/v1/turns", bot, map[string]any{"conversation_id": "c-2", "speaker": "agent", "text": "hello"})
		}
		admin := signIn(t, e, spaceKey(t, e, e.AdminKey, "Ana", "admin"))
		r := admin.get("/console/usage")
		require.Equal(t, http.StatusOK, r.Status, r.Body)
		require.NotContains(t, r.Body, "<script")
		require.Contains(t, r.Body, `href="/console/usage" aria-current="page">Usage</a>`)
		row := regexp.MustCompile(`(?s)<code>turns_per_space</code></td><td>space</td>\s*<td class="num">(\d+)</td><td class="num">(\d+)</td>`).FindStringSubmatch(r.Body)
		require.NotNil(t, row, r.Body)
		require.Equal(t, []string{"5", "40"}, row[1:], "used 5 of the set limit 40")
		conv := regexp.MustCompile(`(?s)<code>turns_per_conversation</code></td><td>largest conversation or task</td>\s*<td class="num">(\d+)</td><td class="num">([\d,]+)</td>`).FindStringSubmatch(r.Body)
		require.NotNil(t, conv)
		require.Equal(t, []string{"3", "10,000"}, conv[1:], "the largest conversation, under the default limit")
		require.Equal(t, len(quotas.Sampled), strings.Count(r.Body, `<svg class="chart"`))
		require.Contains(t, r.Body, `aria-label="turns over the last 30 days"`)
		// The turns chart steps from 0 to 2 two days ago and to 5 today: its line has 30
		// points, and the top of its axis is a round value at or above 5.
		svg := r.Body[strings.Index(r.Body, `aria-label="turns over the last 30 days"`):]
		svg = svg[:strings.Index(svg, "</svg>")]
		line := regexp.MustCompile(`<path d="(M[^"]+)" fill="none"`).FindStringSubmatch(svg)
		require.NotNil(t, line, svg)
		require.Equal(t, 30, strings.Count(line[1], " ")/2+1, line[1])
		require.Contains(t, svg, ">"+clk.Now().Format("01-02")+"</text>", "the last day is today")

		reader := signIn(t, e, spaceKey(t, e, e.AdminKey, "Rae", "reviewer"))
		require.Equal(t, http.StatusForbidden, reader.get("/console/usage").Status)
		require.NotContains(t, reader.get("/console/proposals").Body, `href="/console/usage"`)
	})
}
