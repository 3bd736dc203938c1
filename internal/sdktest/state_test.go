package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/sdk"
)

// server runs the real API on a fixed loopback address that can be stopped and started again.
type server struct {
	t    *testing.T
	addr string
	deps api.Deps
	srv  *http.Server
}

func startServer(t *testing.T, deps api.Deps) *server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &server{t: t, addr: ln.Addr().String(), deps: deps}
	s.serve(ln)
	t.Cleanup(s.stop)
	return s
}

func (s *server) serve(ln net.Listener) {
	s.srv = &http.Server{Handler: api.NewServer(s.deps)}
	go s.srv.Serve(ln) //nolint:errcheck
}

func (s *server) stop() {
	if s.srv != nil {
		s.srv.Close()
		s.srv = nil
	}
}

// restart starts a new API process-equivalent (a new server over the same database).
func (s *server) restart() {
	ln, err := net.Listen("tcp", s.addr)
	require.NoError(s.t, err)
	s.serve(ln)
}

func (s *server) url() string { return "http://" + s.addr }

func setup(t *testing.T, e *apptest.Env) string {
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
	e.PutDocument("object-types", apptest.ShopBotTypes())
	return e.AgentKey("shop-bot", "acme-ai", "agent_state")
}

func TestStateReadYourWritesAndDelete(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setup(t, e)
		srv := startServer(t, e.Deps)
		c, err := sdk.New(sdk.Options{BaseURL: srv.url(), Key: key, AgentVersion: "test/1"})
		require.NoError(t, err)
		ctx := context.Background()
		st := c.AgentState(sdk.Conversation("c-1"))

		cur, err := st.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(0), cur.Version)

		res, err := st.Put(ctx, map[string]any{"step": "sizes", "offer": "familia-plus"})
		require.NoError(t, err)
		require.True(t, res.Stored)
		require.Equal(t, int64(1), res.Version)

		res, err = st.Put(ctx, map[string]any{"offer": sdk.Delete})
		require.NoError(t, err)
		require.Equal(t, int64(2), res.Version)

		cur, err = st.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(2), cur.Version)
		require.Equal(t, []string{"step"}, cur.Fields())
		require.JSONEq(t, `"sizes"`, string(cur.Body["step"]))

		_, err = st.Put(ctx, map[string]any{"step": "checkout"}, sdk.CAS(1))
		var apiErr *sdk.Error
		require.ErrorAs(t, err, &apiErr)
		require.True(t, errors.Is(err, sdk.ErrConflict))
		require.Equal(t, int64(2), apiErr.Version)

		res, err = st.Put(ctx, map[string]any{"bogus": 1})
		require.NoError(t, err)
		require.False(t, res.Stored)
		require.Equal(t, "not_declared_field", *res.Reason)
	})
}

// TestQueuedWriteSurvivesServerRestart: the service goes away, a write is queued (in a file),
// the agent's process restarts too, the service comes back, and the write is resent with the
// same if_version; a queued CAS that then conflicts is reported, never merged.
func TestQueuedWriteSurvivesServerRestart(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setup(t, e)
		srv := startServer(t, e.Deps)
		queue := filepath.Join(t.TempDir(), "queue.json")
		ctx := context.Background()
		c, err := sdk.New(sdk.Options{BaseURL: srv.url(), Key: key, QueueFile: queue})
		require.NoError(t, err)
		st := c.AgentState(sdk.Conversation("c-9"))
		res, err := st.Put(ctx, map[string]any{"step": "one"})
		require.NoError(t, err)
		require.Equal(t, int64(1), res.Version)

		srv.stop()
		res, err = st.Put(ctx, map[string]any{"offer": "late"}, sdk.IfVersion(1))
		require.NoError(t, err)
		require.True(t, res.Queued)
		res, err = st.Put(ctx, map[string]any{"step": "cas"}, sdk.CAS(1))
		require.NoError(t, err)
		require.True(t, res.Queued)
		require.Equal(t, 2, c.Pending())

		// The agent's process restarts: a new client loads the queue file.
		c2, err := sdk.New(sdk.Options{BaseURL: srv.url(), Key: key, QueueFile: queue})
		require.NoError(t, err)
		require.Equal(t, 2, c2.Pending())

		srv.restart()
		require.NoError(t, c2.Flush(ctx))
		require.Equal(t, 0, c2.Pending())
		conflicts := c2.Conflicts()
		require.Len(t, conflicts, 1, "the CAS at version 1 meets version 2")
		require.Equal(t, int64(1), conflicts[0].IfVersion)
		require.Equal(t, int64(2), conflicts[0].CurrentVersion)
		require.JSONEq(t, `"cas"`, string(conflicts[0].Body["step"]))

		cur, err := c2.AgentState(sdk.Conversation("c-9")).Get(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(2), cur.Version)
		require.JSONEq(t, `{"offer":"late","step":"one"}`, mustJSON(t, cur.Body))
	})
}

func TestReplayKeepsStateLocal(t *testing.T) {
	c, err := sdk.New(sdk.Options{Replay: true})
	require.NoError(t, err)
	ctx := context.Background()
	st := c.AgentState(sdk.Conversation("c-1"))
	cur, err := st.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(0), cur.Version)
	res, err := st.Put(ctx, map[string]any{"step": "a", "offer": "x"})
	require.NoError(t, err)
	require.Equal(t, int64(1), res.Version)
	_, err = st.Put(ctx, map[string]any{"offer": sdk.Delete}, sdk.IfVersion(1))
	require.NoError(t, err)
	_, err = st.Put(ctx, map[string]any{"step": "b"}, sdk.CAS(1))
	require.ErrorIs(t, err, sdk.ErrConflict)
	cur, err = st.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), cur.Version)
	require.JSONEq(t, `{"step":"a"}`, mustJSON(t, cur.Body))
}

func mustJSON(t *testing.T, v any) string {
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

// TestNeverServesOlderThanSeen puts a lagging replica in front of the real API. Absent
// answers (version 0) for a while: the client retries until the replica catches up. Older
// non-zero versions: the client serves the newer state it holds. Version 0 that persists
// through the retries: the state is gone (erased, expired) and the client drops its copy.
func TestNeverServesOlderThanSeen(t *testing.T) {
	e := apptest.New(t, "sqlite")
	key := setup(t, e)
	var lagging atomic.Int32
	var stale atomic.Value
	stale.Store(`{"body":{},"version":0,"updated_at":null}`)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/agent-state/read" && lagging.Load() > 0 {
			lagging.Add(-1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(stale.Load().(string)))
			return
		}
		e.Server.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	c, err := sdk.New(sdk.Options{BaseURL: proxy.URL, Key: key})
	require.NoError(t, err)
	ctx := context.Background()
	st := c.AgentState(sdk.Conversation("c-lag"))
	_, err = st.Put(ctx, map[string]any{"step": "a"})
	require.NoError(t, err)
	_, err = st.Put(ctx, map[string]any{"step": "b"})
	require.NoError(t, err)

	lagging.Store(2) // two absent answers, then the replica has caught up
	cur, err := st.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), cur.Version)
	require.Equal(t, int32(0), lagging.Load(), "the client retried past the stale answers")

	// From now on the replica lags one version behind: the client serves what it read.
	stale.Store(`{"body":{"step":"a"},"version":1,"updated_at":null}`)
	lagging.Store(100)
	cur, err = st.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), cur.Version)
	require.JSONEq(t, `"b"`, string(cur.Body["step"]))

	// The service answers "absent" through every retry: the client drops its copy.
	stale.Store(`{"body":{},"version":0,"updated_at":null}`)
	lagging.Store(100)
	cur, err = st.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(0), cur.Version, "got version %d, want 0: the service no longer has the state", cur.Version)
	require.Empty(t, cur.Body)
	require.Less(t, lagging.Load(), int32(100), "the client retried before believing the absence")
}

// TestErasedStateIsNotServed: a client wrote and read a subject's state; the state is then
// erased in the service (its row removed, as erasure does); the same client's next read
// answers version 0 with an empty body, not its cached copy.
func TestErasedStateIsNotServed(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setup(t, e)
		c, err := sdk.New(sdk.Options{BaseURL: startServer(t, e.Deps).url(), Key: key})
		require.NoError(t, err)
		ctx := context.Background()
		st := c.AgentState(sdk.Conversation("c-erased"), sdk.WithSubject("email:ana@example.com"))
		_, err = st.Put(ctx, map[string]any{"step": "sizes"})
		require.NoError(t, err)
		cur, err := st.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), cur.Version)

		n, err := e.DB.NewDelete().Model((*models.AgentState)(nil)).Where("space_id = ?", e.SpaceID).Exec(ctx)
		require.NoError(t, err)
		rows, _ := n.RowsAffected()
		require.EqualValues(t, 1, rows)

		cur, err = st.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(0), cur.Version, "got version %d, want 0 after erasure", cur.Version)
		require.Empty(t, cur.Body, "got %v, want the empty state", cur.Body)
	})
}
