package api_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/models"
)

// WM-10: a read does not wait on the write path. While another transaction holds the state's
// row (PostgreSQL: a row lock) or the database's write lock (SQLite) without committing, a read
// answers at once with the last committed version, and a write of that state waits, then
// stores on top of what committed.
func TestWMReadDoesNotWaitOnAnOpenWrite(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		require.Equal(t, int64(1), mustStore(e, key, map[string]any{"scope": conv("c-1"), "body": map[string]any{"step": "greet"}}))

		ctx := context.Background()
		tx, err := e.DB.BeginTx(ctx, nil)
		require.NoError(t, err)
		// The stuck writer: an uncommitted update of the state's row.
		_, err = tx.NewUpdate().Model((*models.AgentState)(nil)).Set("version = version").Where("agent = ?", "shop-bot").Exec(ctx)
		require.NoError(t, err)

		got := read(e, key, conv("c-1"), "")
		require.Equal(t, int64(1), got.Version)
		require.Equal(t, map[string]any{"step": "greet"}, got.Body)

		done := make(chan apptest.Response, 1)
		go func() {
			done <- write(e, key, map[string]any{"scope": conv("c-1"), "body": map[string]any{"offer": "x"}})
		}()
		require.NoError(t, tx.Rollback())
		r := <-done
		require.Equal(t, 200, r.Status, "%s", r.Body)
		require.Equal(t, int64(2), num(t, r.JSON(t)["version"]))
		require.Equal(t, map[string]any{"step": "greet", "offer": "x"}, read(e, key, conv("c-1"), "").Body)
	})
}
