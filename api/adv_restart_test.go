package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

// Adversarial (issue 16): the app is closed and built again on the same database (a restart
// of one replica, its pool, write gate and checkpointer included) three times while another
// replica keeps serving: every restart sees what was stored before it (working memory and
// notes, the block included) and writes at once.
func TestRestartOnTheSameDatabase(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		enableWM(e, typesDoc(wmType("shop-bot", "conversation", 0, nil)))
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}, "agent_memory": map[string]any{"enabled": true}})
		stateKey := e.AgentKey("shop-bot", "acme", "agent_state")
		bot := writer(e, "shop-bot", "acme")
		var notes []string
		for i := 0; i < 3; i++ {
			d, err := db.Open(context.Background(), databaseURL(t, e), dbtest.Shipped())
			require.NoError(t, err)
			cfg, err := config.Load(func(string) string { return "" })
			require.NoError(t, err)
			cfg.Secret, cfg.DataDir = apptest.Secret, t.TempDir()
			a, err := app.Build(context.Background(), cfg, app.Overrides{DB: d, Keys: e.Keys})
			require.NoError(t, err)
			deps := a.APIDeps(nil)
			deps.MaxBodyBytes = e.Deps.MaxBodyBytes
			r := &apptest.Env{T: t, Server: api.NewServer(deps)}

			got := r.MustDo(http.StatusOK, http.MethodPost, "/v1/agent-state/read", stateKey, map[string]any{"scope": conv("c-restart")}).JSON(t)
			require.Equal(t, int64(2*i), num(t, got["version"]), "restart %d sees every write before it", i)
			require.ElementsMatch(t, notes, strs(r.MustDo(http.StatusOK, "GET", blockPath, bot, nil).JSON(t)["note_ids"]))

			mustStore(r, stateKey, map[string]any{"scope": conv("c-restart"), "body": map[string]any{"count": i}})
			mustStore(e, stateKey, map[string]any{"scope": conv("c-restart"), "body": map[string]any{"offer": "x"}})
			notes = append(notes, create(r, bot, note("Restart "+string(rune('A'+i)), "Written before restart.")))
			require.ElementsMatch(t, notes, strs(r.MustDo(http.StatusOK, "GET", blockPath, bot, nil).JSON(t)["note_ids"]))
			require.ElementsMatch(t, notes, strs(e.MustDo(http.StatusOK, "GET", blockPath, bot, nil).JSON(t)["note_ids"]))

			a.Close()
			require.NoError(t, db.Close(d))
		}
	})
}
