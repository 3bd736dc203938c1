package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

// newReplicaAt is newReplica whose services read now (a test clock shared with e).
func newReplicaAt(e *apptest.Env, now func() time.Time) *api.Server {
	t := e.T
	t.Helper()
	d, err := db.Open(context.Background(), databaseURL(t, e), dbtest.Shipped())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close(d) })
	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	cfg.Secret, cfg.DataDir = apptest.Secret, t.TempDir()
	a, err := app.Build(context.Background(), cfg, app.Overrides{DB: d, Keys: e.Keys, Now: now})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	deps := a.APIDeps(nil)
	deps.MaxBodyBytes, deps.Now = e.Deps.MaxBodyBytes, now
	return api.NewServer(deps)
}

// replicaCall sends one request to server (swarmDo) and fails t on a transport error.
func replicaCall(t *testing.T, server *api.Server, method, path, key string, body any) swarmAnswer {
	t.Helper()
	r, err := swarmDo(server, method, path, key, body)
	require.NoError(t, err)
	return r
}

// requireAnswer checks a replicaCall's status and, for an error, its code.
func requireAnswer(t *testing.T, r swarmAnswer, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.status, "%s", r.raw)
	if code != "" {
		e, _ := r.body["error"].(map[string]any)
		require.Equal(t, code, e["code"], "%s", r.raw)
	}
}

// plannerTypes is a planner agent whose state is scoped by its instance (scope kind agent),
// and a notifier whose leases are advisory.
func plannerTypes() map[string]any {
	fields := map[string]any{"plan": map[string]any{"type": "string"}, "steps_done": map[string]any{"type": "integer"}}
	return map[string]any{"types": []any{
		map[string]any{"type": "planner", "ownership": "agent", "fields": fields, "agent_state": map[string]any{"scope": "agent"}},
		map[string]any{"type": "notifier", "ownership": "agent", "fields": fields, "agent_state": map[string]any{"scope": "agent", "lease": "advisory"}},
	}}
}

// TestStateLeaseFencesAPausedHolder (issue 31): two runs of one agent instance share its
// state (scope kind agent) through two API replicas. Run 1 takes the lease and writes; run 2,
// on the other replica, is refused lease_held; run 1 pauses past its lease; run 2 takes a
// lease with a higher fencing token and writes; run 1's late write and renewal are refused
// lease_lost and change nothing. After the release, writes without a lease pass and the next
// token is higher again.
func TestStateLeaseFencesAPausedHolder(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			clk := &leaseClock{at: time.Now().UTC()}
			e := apptest.New(t, engine, func(d *api.Deps) { d.Now = clk.now })
			e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
			e.PutDocument("object-types", plannerTypes())
			a, b := e.Server, newReplicaAt(e, clk.now)
			run1, run2 := e.AgentKey("planner", "acme", "agent_state"), e.AgentKey("planner", "acme", "agent_state")
			scope := map[string]any{"kind": "agent", "id": "planner-1"}
			lease := func(s *api.Server, key string) map[string]any {
				r := replicaCall(t, s, "POST", "/v1/agent-state/lease", key, map[string]any{"scope": scope, "ttl_seconds": 10})
				requireAnswer(t, r, http.StatusOK, "")
				return r.body
			}
			write := func(s *api.Server, key string, l map[string]any, ifVersion int64, plan string) swarmAnswer {
				req := map[string]any{"scope": scope, "mode": "cas", "if_version": ifVersion, "body": map[string]any{"plan": plan}}
				if l != nil {
					req["lease"] = map[string]any{"lease_id": l["lease_id"], "token": l["token"]}
				}
				return replicaCall(t, s, "PUT", "/v1/agent-state", key, req)
			}

			first := lease(a, run1)
			require.Equal(t, jsonNumber("1"), first["token"])
			requireAnswer(t, write(a, run1, first, 0, "run 1"), http.StatusOK, "")
			requireAnswer(t, write(b, run2, nil, 1, "run 2, no lease"), http.StatusConflict, "lease_held")
			requireAnswer(t, replicaCall(t, b, "POST", "/v1/agent-state/lease", run2, map[string]any{"scope": scope, "ttl_seconds": 10}), http.StatusConflict, "lease_held")
			// Another instance's state is not held by run 1's lease.
			other := replicaCall(t, b, "PUT", "/v1/agent-state", run2, map[string]any{"scope": map[string]any{"kind": "agent", "id": "planner-2"}, "body": map[string]any{"plan": "x"}})
			requireAnswer(t, other, http.StatusOK, "")

			clk.advance(11 * time.Second) // run 1 pauses past its lease
			second := lease(b, run2)
			require.Equal(t, jsonNumber("2"), second["token"], "the token grows with every grant")
			requireAnswer(t, write(b, run2, second, 1, "run 2"), http.StatusOK, "")

			requireAnswer(t, write(a, run1, first, 2, "run 1, late"), http.StatusConflict, "lease_lost")
			requireAnswer(t, replicaCall(t, a, "POST", "/v1/agent-state/lease/renew", run1, map[string]any{"scope": scope, "ttl_seconds": 10,
				"lease_id": first["lease_id"], "token": first["token"]}), http.StatusConflict, "lease_lost")
			for _, s := range []*api.Server{a, b} {
				r := replicaCall(t, s, "POST", "/v1/agent-state/read", run1, map[string]any{"scope": scope})
				require.Equal(t, "run 2", r.body["body"].(map[string]any)["plan"], "the late write changed nothing")
				require.Equal(t, jsonNumber("2"), r.body["version"])
			}

			// Renewed past the first time to live, the lease still holds; released, it does not.
			clk.advance(8 * time.Second)
			requireAnswer(t, replicaCall(t, a, "POST", "/v1/agent-state/lease/renew", run2, map[string]any{"scope": scope, "ttl_seconds": 10,
				"lease_id": second["lease_id"], "token": second["token"]}), http.StatusOK, "")
			clk.advance(8 * time.Second)
			requireAnswer(t, write(a, run2, second, 2, "run 2, renewed"), http.StatusOK, "")
			requireAnswer(t, replicaCall(t, a, "POST", "/v1/agent-state/lease/release", run2, map[string]any{"scope": scope,
				"lease_id": second["lease_id"], "token": second["token"]}), http.StatusOK, "")
			requireAnswer(t, write(a, run2, second, 3, "released lease"), http.StatusConflict, "lease_lost")
			requireAnswer(t, write(b, run1, nil, 3, "no lease needed"), http.StatusOK, "")
			require.Equal(t, jsonNumber("3"), lease(a, run1)["token"])
		})
	}
}

// Advisory leases (the type says so) still fence their holders, but writes without a lease
// pass while one is held. Bad lease requests are 400 and take no lease.
func TestStateLeaseAdvisoryAndBadInput(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		e.PutDocument("object-types", plannerTypes())
		key := e.AgentKey("notifier", "acme", "agent_state")
		scope := map[string]any{"kind": "agent", "id": "n-1"}
		requireError(t, e.Do("POST", "/v1/agent-state/lease", key, map[string]any{"scope": scope, "ttl_seconds": 0}), http.StatusBadRequest, "invalid_member")
		requireError(t, e.Do("POST", "/v1/agent-state/lease", key, map[string]any{"scope": scope, "ttl_seconds": 3601}), http.StatusBadRequest, "invalid_member")
		requireError(t, e.Do("POST", "/v1/agent-state/lease", key, map[string]any{"ttl_seconds": 5}), http.StatusBadRequest, "invalid_member")
		requireError(t, e.Do("POST", "/v1/agent-state/lease/release", key, map[string]any{"scope": scope}), http.StatusBadRequest, "invalid_member")
		requireError(t, e.Do("POST", "/v1/agent-state/lease/renew", key, map[string]any{"scope": scope, "ttl_seconds": 5}), http.StatusBadRequest, "invalid_member")
		requireError(t, e.Do("POST", "/v1/agent-state/lease", e.AgentKey("ghost", "acme", "agent_state"), map[string]any{"scope": scope, "ttl_seconds": 5}),
			http.StatusBadRequest, "not_declared")
		requireError(t, e.Do("POST", "/v1/agent-state/lease", e.AgentKey("notifier", "acme"), map[string]any{"scope": scope, "ttl_seconds": 5}),
			http.StatusForbidden, "scope_required")

		l := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/lease", key, map[string]any{"scope": scope, "ttl_seconds": 60}).JSON(t)
		require.Equal(t, jsonNumber("1"), l["token"], "the refused requests took no lease")
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, map[string]any{"scope": scope, "body": map[string]any{"plan": "without the lease"}})
		stale := map[string]any{"lease_id": l["lease_id"], "token": 7}
		requireError(t, e.Do("PUT", "/v1/agent-state", key, map[string]any{"scope": scope, "body": map[string]any{"plan": "forged"}, "lease": stale}),
			http.StatusConflict, "lease_lost")
		r := e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", key, map[string]any{"scope": scope}).JSON(t)
		require.Equal(t, "without the lease", r["body"].(map[string]any)["plan"])
		e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, map[string]any{"scope": scope, "body": map[string]any{"steps_done": 2},
			"lease": map[string]any{"lease_id": l["lease_id"], "token": l["token"]}})
		r = e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", key, map[string]any{"scope": scope}).JSON(t)
		require.Equal(t, jsonNumber("2"), r["body"].(map[string]any)["steps_done"], "a merge write under the lease keeps the other fields")
		require.Equal(t, "without the lease", r["body"].(map[string]any)["plan"])
	})
}

// TestStateLeaseHoldsUnderConcurrentWriters (issue 31): while a lease is held, 16 writers
// without it on two replicas are all refused lease_held and the holder's 8 concurrent merge
// writes (one field each) are all stored; the state holds exactly the holder's fields at
// version 8. Then the lease expires, a new one is granted, and the old holder's writes are
// all lease_lost.
func TestStateLeaseHoldsUnderConcurrentWriters(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			clk := &leaseClock{at: time.Now().UTC()}
			e := apptest.New(t, engine, func(d *api.Deps) { d.Now = clk.now })
			e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
			fields := map[string]any{}
			for i := 0; i < 8; i++ {
				fields[fmt.Sprintf("f%d", i)] = map[string]any{"type": "integer"}
			}
			e.PutDocument("object-types", map[string]any{"types": []any{map[string]any{"type": "worker", "ownership": "agent", "fields": fields, "agent_state": map[string]any{"scope": "task"}}}})
			servers := []*api.Server{e.Server, newReplicaAt(e, clk.now)}
			key := e.AgentKey("worker", "acme", "agent_state")
			scope := map[string]any{"kind": "task", "id": "t-1"}
			l := replicaCall(t, servers[0], "POST", "/v1/agent-state/lease", key, map[string]any{"scope": scope, "ttl_seconds": 60})
			requireAnswer(t, l, http.StatusOK, "")
			proof := map[string]any{"lease_id": l.body["lease_id"], "token": l.body["token"]}
			run := func(n int, write func(i int) swarmAnswer) []swarmAnswer {
				out := make([]swarmAnswer, n)
				var wg sync.WaitGroup
				for i := 0; i < n; i++ {
					wg.Add(1)
					go func(i int) { defer wg.Done(); out[i] = write(i) }(i)
				}
				wg.Wait()
				return out
			}
			answers := run(24, func(i int) swarmAnswer {
				req := map[string]any{"scope": scope, "body": map[string]any{fmt.Sprintf("f%d", i%8): i}}
				if i < 8 {
					req["lease"] = proof
				}
				a, err := swarmDo(servers[i%2], "PUT", "/v1/agent-state", key, req)
				if err != nil {
					a.status = -1
				}
				return a
			})
			for i, a := range answers {
				if i < 8 {
					requireAnswer(t, a, http.StatusOK, "")
				} else {
					requireAnswer(t, a, http.StatusConflict, "lease_held")
				}
			}
			r := replicaCall(t, servers[1], "POST", "/v1/agent-state/read", key, map[string]any{"scope": scope})
			require.Equal(t, jsonNumber("8"), r.body["version"])
			body := r.body["body"].(map[string]any)
			require.Len(t, body, 8)
			for i := 0; i < 8; i++ {
				require.Equal(t, jsonNumber(fmt.Sprint(i)), body[fmt.Sprintf("f%d", i)], "only the holder's writes are stored")
			}

			clk.advance(61 * time.Second)
			requireAnswer(t, replicaCall(t, servers[1], "POST", "/v1/agent-state/lease", key, map[string]any{"scope": scope, "ttl_seconds": 60}), http.StatusOK, "")
			late := run(8, func(i int) swarmAnswer {
				a, err := swarmDo(servers[i%2], "PUT", "/v1/agent-state", key, map[string]any{"scope": scope, "body": map[string]any{"f0": 100 + i}, "lease": proof})
				if err != nil {
					a.status = -1
				}
				return a
			})
			for _, a := range late {
				requireAnswer(t, a, http.StatusConflict, "lease_lost")
			}
			r = replicaCall(t, servers[0], "POST", "/v1/agent-state/read", key, map[string]any{"scope": scope})
			require.Equal(t, jsonNumber("8"), r.body["version"], "the late writes changed nothing")
		})
	}
}
