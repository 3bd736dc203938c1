package api_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
)

// leaseClock is a test leaseClock every service of an Env reads (apptest's deps.Now).
type leaseClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *leaseClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *leaseClock) advance(d time.Duration) {
	c.mu.Lock()
	c.at = c.at.Add(d)
	c.mu.Unlock()
}

// A holder takes a lease, pauses past its time to live, and writes late: a second handler
// took the lease meanwhile (a higher fencing token) and wrote; the late write is refused
// lease_lost and changes nothing, and the second handler's write stands. While a lease is
// held, a write without it is refused lease_held.
func TestBoardLeaseFencesAPausedHolder(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) { leasePausedHolder(t, engine) })
	}
}

func leasePausedHolder(t *testing.T, engine string) {
	{
		clk := &leaseClock{at: time.Now().UTC()}
		e := apptest.New(t, engine, func(d *api.Deps) { d.Now = clk.now })
		b := newBoardEnv(t, e)
		b.grant(t, map[string]any{"vendor": "acme", "access": "read_write"})
		board := map[string]any{"type": "findings", "id": "inc-7"}
		lease := func(key string) map[string]any {
			return e.MustDo(http.StatusOK, "POST", "/v1/boards/lease", key, map[string]any{"type": "findings", "id": "inc-7", "ttl_seconds": 10}).JSON(t)
		}
		write := func(key string, l map[string]any, ifVersion int64, body map[string]any) apptest.Response {
			req := map[string]any{"type": "findings", "id": "inc-7", "if_version": ifVersion, "body": body}
			if l != nil {
				req["lease"] = map[string]any{"lease_id": l["lease_id"], "token": l["token"]}
			}
			return e.Do("PUT", "/v1/boards", key, req)
		}

		first := lease(b.alice)
		require.Equal(t, "1", string(first["token"].(jsonNumber)))
		require.Equal(t, http.StatusOK, write(b.alice, first, 0, map[string]any{"title": "alice"}).Status)
		requireError(t, write(b.bob, nil, 1, map[string]any{"title": "bob"}), http.StatusConflict, "lease_held")
		requireError(t, e.Do("POST", "/v1/boards/lease", b.bob, map[string]any{"type": "findings", "id": "inc-7", "ttl_seconds": 10}), http.StatusConflict, "lease_held")

		clk.advance(11 * time.Second) // alice pauses past her lease
		second := lease(b.bob)
		require.Equal(t, "2", string(second["token"].(jsonNumber)), "the token grows with every grant")
		require.Equal(t, http.StatusOK, write(b.bob, second, 1, map[string]any{"title": "bob"}).Status)

		requireError(t, write(b.alice, first, 1, map[string]any{"title": "alice, late"}), http.StatusConflict, "lease_lost")
		requireError(t, e.Do("POST", "/v1/boards/lease/renew", b.alice, map[string]any{"type": "findings", "id": "inc-7", "ttl_seconds": 10,
			"lease_id": first["lease_id"], "token": first["token"]}), http.StatusConflict, "lease_lost")
		r := e.MustDo(http.StatusOK, "POST", "/v1/boards/read", b.alice, board).JSON(t)
		require.Equal(t, "bob", r["body"].(map[string]any)["title"], "the late write changed nothing")
		require.Equal(t, jsonNumber("2"), r["version"])

		// Released: writes without a lease pass again, and the next lease's token is higher.
		e.MustDo(http.StatusOK, "POST", "/v1/boards/lease/release", b.bob, map[string]any{"type": "findings", "id": "inc-7", "lease_id": second["lease_id"], "token": second["token"]})
		require.Equal(t, http.StatusOK, write(b.alice, nil, 2, map[string]any{"status": "open"}).Status)
		require.Equal(t, "3", string(lease(b.alice)["token"].(jsonNumber)))
	}
}

type jsonNumber = json.Number
