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
	"github.com/agentmemory/agentmemory/models"
)

// stateRow loads the only stored state, opened when it is sealed under its subject's key.
func stateRow(t testing.TB, e *apptest.Env) models.AgentState {
	t.Helper()
	var rows []models.AgentState
	require.NoError(t, e.DB.NewSelect().Model(&rows).Scan(context.Background()))
	require.Len(t, rows, 1)
	ok, err := e.Deps.State.Unseal(context.Background(), &rows[0])
	require.NoError(t, err)
	require.True(t, ok, "the state's subject key must exist")
	return rows[0]
}

// WM-12: a state lives retention.state after its last write; a field with its own retention
// expires that long after its own last write, is never served once expired and drops out at
// the next write; an expired state reads as never written and a new write starts above
// its last version (issue 29 §3).
func TestWMRetention(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		clk := &clock{t: time.Date(2026, 1, 10, 10, 0, 0, 0, time.UTC)}
		e.Deps.State.Now = clk.Now
		t0 := clk.Now()
		enableWM(e, typesDoc(wmType("shop-bot", "conversation", 0, map[string]any{"state": "2d", "cart_note": "1d"})))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		integ := e.PersonKey("Ivo", "integration")
		prof := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/profiles", integ, map[string]any{
			"name": "Ana", "handles": []string{"email:ana@example.com"}}).JSON(t)["profile_id"].(string)
		listed := func() int {
			var got struct {
				States []any `json:"states"`
			}
			r := e.MustDo(http.StatusOK, http.MethodGet, "/v1/profiles/"+prof+"/agent-state", integ, nil)
			require.NoError(t, json.Unmarshal(r.Body, &got))
			return len(got.States)
		}
		c := conv("c-ret")

		mustStore(e, key, map[string]any{"scope": c, "subject": "email:ana@example.com", "body": map[string]any{"step": "greet", "cart_note": "two shirts"}})
		clk.Set(t0.Add(23 * time.Hour))
		mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"offer": "familia-plus"}})
		require.Equal(t, map[string]any{"step": "greet", "cart_note": "two shirts", "offer": "familia-plus"}, read(e, key, c, "").Body)

		// cart_note expires 1d after its own last write: never served from then on.
		clk.Set(t0.Add(24*time.Hour - time.Nanosecond))
		require.Contains(t, read(e, key, c, "").Body, "cart_note")
		clk.Set(t0.Add(24 * time.Hour))
		got := read(e, key, c, "")
		require.Equal(t, map[string]any{"step": "greet", "offer": "familia-plus"}, got.Body)
		require.Equal(t, int64(2), got.Version)
		require.Equal(t, t0.Add(23*time.Hour).Format(time.RFC3339Nano), got.Updated)
		require.Contains(t, string(stateRow(t, e).Body), "cart_note", "the sweep, not a read, removes it from storage")

		// The next write drops it from storage.
		clk.Set(t0.Add(25 * time.Hour))
		require.Equal(t, int64(3), mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"count": 1}}))
		row := stateRow(t, e)
		require.NotContains(t, string(row.Body), "cart_note")
		require.NotContains(t, row.FieldTimes, "cart_note")
		require.Equal(t, t0.Add(25*time.Hour+48*time.Hour), row.ExpiresAt.UTC())

		// Fields without a retention of their own live as long as the state (2d after its last
		// write), even when they were written earlier.
		clk.Set(t0.Add(25*time.Hour + 48*time.Hour - time.Second))
		got = read(e, key, c, "")
		require.Equal(t, int64(3), got.Version)
		require.Equal(t, map[string]any{"step": "greet", "offer": "familia-plus", "count": json.Number("1")}, got.Body)
		require.Equal(t, 1, listed())

		// The whole state expires 2d after its last write.
		clk.Set(t0.Add(25*time.Hour + 48*time.Hour))
		r := e.MustDo(http.StatusOK, http.MethodPost, "/v1/agent-state/read", key, map[string]any{"scope": c})
		require.Equal(t, `{"body":{},"version":0,"updated_at":null}`, strings.TrimSpace(string(r.Body)))
		require.Equal(t, 0, listed())
		requireError(t, write(e, key, map[string]any{"scope": c, "if_version": 3, "body": map[string]any{"count": 2}}), http.StatusPreconditionFailed, "agent_state_conflict")

		// A write after expiry starts a new state (cas at 0 applies), above the expired one's
		// version 3: versions never restart (issue 29 §3), so the 412 above stays a 412.
		require.Equal(t, int64(4), mustStore(e, key, map[string]any{"scope": c, "mode": "cas", "if_version": 0, "body": map[string]any{"step": "done"}}))
		got = read(e, key, c, "")
		require.Equal(t, map[string]any{"step": "done"}, got.Body)
		row = stateRow(t, e)
		require.Equal(t, int64(4), row.Version)
		require.Equal(t, clk.Now(), row.CreatedAt.UTC())
		require.Equal(t, "", row.SubjectHash, "the old state's subject link does not carry over to a new state")
	})
}

// WM-12: expiry is computed in UTC, in absolute time: with the process in a zone that moves
// its clocks (America/New_York, spring forward on 2026-03-08), a 2d retention is 48 hours,
// not two calendar days of local time (47 hours across that night).
func TestWMRetentionAcrossDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	t.Setenv("TZ", "America/New_York")
	saved := time.Local
	time.Local = ny
	t.Cleanup(func() { time.Local = saved })

	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		t0 := time.Date(2026, 3, 7, 12, 0, 0, 0, ny) // 17:00 UTC, before the change
		clk := &clock{t: t0}
		e.Deps.State.Now = clk.Now
		enableWM(e, typesDoc(wmType("shop-bot", "conversation", 0, map[string]any{"state": "2d", "cart_note": "1d"})))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")
		c := conv("c-dst")
		mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"step": "greet", "cart_note": "n"}})

		row := stateRow(t, e)
		require.Equal(t, t0.UTC().Add(48*time.Hour), row.ExpiresAt.UTC())
		got := read(e, key, c, "")
		require.Equal(t, "2026-03-07T17:00:00Z", got.Updated)

		// Two local calendar days later is only 47 hours: still alive.
		clk.Set(t0.AddDate(0, 0, 2))
		require.Equal(t, 47*time.Hour, clk.Now().Sub(t0))
		require.Equal(t, int64(1), read(e, key, c, "").Version)
		clk.Set(t0.Add(48*time.Hour - time.Nanosecond))
		got = read(e, key, c, "")
		require.Equal(t, int64(1), got.Version)
		require.NotContains(t, got.Body, "cart_note", "cart_note (1d) expired 24 hours after its write")
		clk.Set(t0.Add(48 * time.Hour))
		require.Equal(t, int64(0), read(e, key, c, "").Version)
	})
}
