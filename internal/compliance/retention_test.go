package compliance_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Berlin on machines without a zone database

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/worker"
	"github.com/agentmemory/agentmemory/workflows"
)

// clock is a settable test clock answering in the server's local zone.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t.In(time.Local) }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// Expiry is computed in UTC whatever the server's zone: with the process in Europe/Berlin,
// across the night its clocks jump to summer time (2026-03-29 01:00 UTC), a 1h field expires
// exactly 1h after its write and a 1d state exactly 24h after, both on read and in the sweep.
func TestRetentionIsUTCAcrossDaylightSaving(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	saved := time.Local
	time.Local = berlin
	t.Cleanup(func() { time.Local = saved })

	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := apptest.New(t, engine)
			clk := &clock{t: time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)}
			e.Deps.State.Now, e.Deps.Compliance.Now = clk.Now, clk.Now
			e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
			types := apptest.ShopBotTypes()
			types["types"].([]any)[0].(map[string]any)["retention"] = map[string]any{"state": "1d", "cart_note": "1h"}
			e.PutDocument("object-types", types)
			shop := e.AgentKey("shop-bot", "acme", auth.ScopeAgentState)
			write := func(conv string, body map[string]any) {
				e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{"scope": map[string]any{"kind": "conversation", "id": conv}, "body": body})
			}
			read := func(conv string) string {
				return string(e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", shop, map[string]any{"scope": map[string]any{"kind": "conversation", "id": conv}}).Body)
			}
			sweep := func(phase string) int {
				out, err := e.Deps.Compliance.SweepBatch(context.Background(), "", phase, "", 100)
				require.NoError(t, err)
				require.True(t, out.Done)
				return out.Removed
			}
			start := clk.Now()
			write("c-1", map[string]any{"step": "cart", "cart_note": "gift wrap"})
			write("c-2", map[string]any{"step": "browse"})

			clk.Set(start.Add(time.Hour - time.Second))
			require.Contains(t, read("c-1"), "cart_note")
			require.Equal(t, 0, sweep(compliance.PhaseFields))

			clk.Set(start.Add(time.Hour))
			require.NotContains(t, read("c-1"), "cart_note", "an expired field is never served")
			require.Equal(t, 1, sweep(compliance.PhaseFields))
			require.Equal(t, 0, sweep(compliance.PhaseFields))
			require.JSONEq(t, `{"step":"cart"}`, bodyOf(t, read("c-1")))
			require.Contains(t, read("c-1"), `"version":1`, "the sweep keeps the version")

			clk.Set(start.Add(24*time.Hour - time.Second))
			require.Equal(t, 0, sweep(compliance.PhaseStates))
			require.Contains(t, read("c-2"), `"version":1`)

			clk.Set(start.Add(24 * time.Hour))
			require.Contains(t, read("c-2"), `"version":0`, "an expired state reads as never written")
			require.Equal(t, 2, sweep(compliance.PhaseStates))
			n, err := e.DB.NewSelect().Model((*models.AgentState)(nil)).Count(context.Background())
			require.NoError(t, err)
			require.Zero(t, n)

			rs := string(e.MustDo(http.StatusOK, "GET", "/v1/receipts", e.AdminKey, nil).Body)
			require.Contains(t, rs, `"action":"retention.sweep"`)
			require.Contains(t, string(e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).Body), `"ok":true`)
		})
	}
}

// Turns expire turns.retention_days (here 2) after their time, counted in UTC: with the
// process in Europe/Berlin the night after its clocks jumped to summer time, the sweep at
// 2026-03-30 00:30 UTC (02:30 CEST) removes exactly the turns before 2026-03-28 00:30 UTC.
// Counting two calendar days back in local time would put the cut an hour later (01:30 UTC)
// and remove the turn at 01:00 UTC too. Turns given with an offset are compared as instants.
func TestTurnRetentionIsUTCAcrossDaylightSaving(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	saved := time.Local
	time.Local = berlin
	t.Cleanup(func() { time.Local = saved })

	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := apptest.New(t, engine)
			clk := &clock{t: time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC)}
			e.Deps.Turns.Now, e.Deps.Compliance.Now = clk.Now, clk.Now
			e.PutDocument("features", map[string]any{"turns": map[string]any{"retention_days": 2}})
			integ := e.PersonKey("integrator", auth.RoleIntegration)
			turn := func(text, at string) map[string]any {
				return map[string]any{"conversation_id": "c-1", "speaker": "customer", "text": text, "at": at}
			}
			e.MustDo(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"turns": []any{
				turn("expired", "2026-03-28T00:29:59Z"),
				turn("expired, local offset", "2026-03-28T01:29:59+01:00"),
				turn("at the cut", "2026-03-28T00:30:00Z"),
				turn("an hour later", "2026-03-28T01:00:00Z"),
				turn("later, local offset", "2026-03-28T02:15:00+01:00"),
				turn("recent", "2026-03-29T11:00:00Z"),
			}})
			texts := func() []string {
				got, err := e.Deps.Turns.Recent(context.Background(), e.SpaceID, "conversation", "c-1", time.Time{})
				require.NoError(t, err)
				out := []string{}
				for _, g := range got {
					out = append(out, g.Text)
				}
				return out
			}
			sweep := func(limit int) (int, bool) {
				out, err := e.Deps.Compliance.SweepBatch(context.Background(), "", compliance.PhaseTurns, "", limit)
				require.NoError(t, err)
				return out.Removed, out.Done
			}

			clk.Set(time.Date(2026, 3, 30, 0, 29, 59, 0, time.UTC))
			n, done := sweep(100)
			require.Equal(t, 0, n, "nothing is two days old yet")
			require.True(t, done)

			clk.Set(time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC))
			require.Equal(t, "02:30", clk.Now().Format("15:04"), "the process runs in Berlin summer time")
			n, done = sweep(1)
			require.Equal(t, 1, n)
			require.False(t, done, "a full batch leaves the next one to say it is done")
			n, done = sweep(1)
			require.Equal(t, 1, n)
			require.False(t, done, "a full batch again")
			n, done = sweep(1)
			require.Equal(t, 0, n)
			require.True(t, done)
			require.Equal(t, []string{"at the cut", "an hour later", "later, local offset", "recent"}, texts())

			rs := string(e.MustDo(http.StatusOK, "GET", "/v1/receipts", e.AdminKey, nil).Body)
			require.Contains(t, rs, `"phase":"turns"`)
			require.Contains(t, string(e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).Body), `"ok":true`)
		})
	}
}

// Export packages expire after 7 days: the API stops serving them and the sweep removes them.
func TestExportPackagesExpire(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := apptest.New(t, engine)
			clk := &clock{t: time.Date(2026, 10, 20, 12, 0, 0, 0, time.UTC)}
			e.Deps.Compliance.Now = clk.Now
			comp := e.PersonKey("dpo", auth.RoleCompliance)
			id, err := e.Deps.Compliance.RequestExport(context.Background(), principalOf(t, e, comp), compliance.ExportRequest{Subject: "email:zoe@example.com"})
			require.NoError(t, err)
			_, err = e.Deps.Compliance.BuildExport(context.Background(), e.SpaceID, id)
			require.NoError(t, err)
			clk.Set(clk.t.Add(compliance.DefaultExportTTL - time.Second))
			e.MustDo(http.StatusOK, "GET", "/v1/exports/"+id+"/package", comp, nil)
			out, err := e.Deps.Compliance.SweepBatch(context.Background(), "", compliance.PhaseExports, "", 10)
			require.NoError(t, err)
			require.Equal(t, 0, out.Removed)
			clk.Set(clk.t.Add(time.Second))
			e.MustDo(http.StatusNotFound, "GET", "/v1/exports/"+id, comp, nil)
			out, err = e.Deps.Compliance.SweepBatch(context.Background(), "", compliance.PhaseExports, "", 10)
			require.NoError(t, err)
			require.Equal(t, 1, out.Removed)
		})
	}
}

// POST /v1/retention/sweep (admin) runs RetentionSweepWorkflow now on the caller's space.
func TestSweepEndpointRunsTheWorkflow(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			e := newEnv(t, engine)
			e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
			e.PutDocument("object-types", apptest.ShopBotTypes())
			shop := e.AgentKey("shop-bot", "acme", auth.ScopeAgentState)
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{"scope": map[string]any{"kind": "conversation", "id": "c-old"}, "body": map[string]any{"step": "x"}})
			past := time.Now().UTC().Add(-time.Minute)
			_, err := e.DB.NewUpdate().Model((*models.AgentState)(nil)).Set("expires_at = ?", past).
				Set("expires_hour = ?", state.ExpiresHour(past)).Where("1 = 1").Exec(context.Background())
			require.NoError(t, err)
			integ := e.PersonKey("integrator", auth.RoleIntegration)
			e.MustDo(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"turns": []any{
				map[string]any{"conversation_id": "c-old", "speaker": "agent", "text": "old", "at": time.Now().UTC().Add(-91 * 24 * time.Hour).Format(time.RFC3339)},
				map[string]any{"conversation_id": "c-old", "speaker": "agent", "text": "new"},
			}})

			e.MustDo(http.StatusForbidden, "POST", "/v1/retention/sweep", e.PersonKey("dpo", auth.RoleCompliance), nil)
			e.MustDo(http.StatusBadRequest, "POST", "/v1/retention/sweep", e.AdminKey, `{"all":true}`)
			id := e.MustDo(http.StatusAccepted, "POST", "/v1/retention/sweep", e.AdminKey, nil).JSON(t)["workflow_id"].(string)
			waitWorkflow(t, id)
			n, err := e.DB.NewSelect().Model((*models.AgentState)(nil)).Count(context.Background())
			require.NoError(t, err)
			require.Zero(t, n)
			left, err := e.Deps.Turns.Recent(context.Background(), e.SpaceID, "conversation", "c-old", time.Time{})
			require.NoError(t, err)
			require.Len(t, left, 1, "the turn past 90 days is swept, the new one kept")
			require.Equal(t, "new", left[0].Text)
			require.Contains(t, string(e.MustDo(http.StatusOK, "GET", "/v1/receipts/verify", e.AdminKey, nil).Body), `"ok":true`)
		})
	}
}

// The retention schedule is created on worker start, idempotently.
func TestRetentionScheduleIsIdempotent(t *testing.T) {
	if temporalClient == nil {
		t.Skip("integration test: needs the Temporal dev server (not in -short)")
	}
	ctx := context.Background()
	require.NoError(t, worker.EnsureRetentionSchedule(ctx, temporalClient, "compliance-schedule", 0))
	require.NoError(t, worker.EnsureRetentionSchedule(ctx, temporalClient, "compliance-schedule", 0))
	d, err := temporalClient.ScheduleClient().GetHandle(ctx, workflows.RetentionScheduleID).Describe(ctx)
	require.NoError(t, err)
	require.Len(t, d.Schedule.Spec.Intervals, 1)
	require.Equal(t, time.Hour, d.Schedule.Spec.Intervals[0].Every)
}

func principalOf(t *testing.T, e *apptest.Env, key string) auth.Principal {
	t.Helper()
	p, err := auth.Authenticate(context.Background(), e.DB, key)
	require.NoError(t, err)
	return p
}

func bodyOf(t *testing.T, read string) string {
	t.Helper()
	var m struct {
		Body map[string]any `json:"body"`
	}
	require.NoError(t, jsonUnmarshal(read, &m))
	return string(mustMarshal(m.Body))
}
