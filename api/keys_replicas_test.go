package api_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/models"
)

// keyReplica builds one API replica over e's database (its own pool) with its own key store
// opened by the binary's code from cfg's key-store settings (its own key cache too).
func keyReplica(t *testing.T, e *apptest.Env, set func(*config.Config)) (*api.Server, *app.App) {
	t.Helper()
	d, err := db.Open(context.Background(), databaseURL(t, e), dbtest.Shipped())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close(d) })
	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	cfg.Secret, cfg.DataDir = apptest.Secret, t.TempDir()
	set(&cfg)
	a, err := app.Build(context.Background(), cfg, app.Overrides{DB: d})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	return api.NewServer(a.APIDeps(nil)), a
}

func call(srv *api.Server, method, path, key string) int {
	req := httptest.NewRequest(method, path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec.Code
}

// Issue 29 §2: every replica forgets a destroyed key at its next request. Replica A reads a
// note (its key cache now holds the note's key); replica B, with its own key cache over the
// same key store (the file store shared on one machine, or the PostgreSQL key database),
// hard-deletes the note, which destroys the key; the note's row restored from a backup and
// handed to the running A does not open at A's next request. Both databases, both key stores.
func TestReplicaForgetsAKeyAnotherReplicaDestroyed(t *testing.T) {
	kek := make([]byte, 32)
	_, err := rand.Read(kek)
	require.NoError(t, err)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		for name, set := range map[string]func(t *testing.T) func(*config.Config){
			"file": func(t *testing.T) func(*config.Config) {
				path := filepath.Join(t.TempDir(), "keys.json")
				return func(c *config.Config) { c.KeystorePath = path }
			},
			"postgres": func(t *testing.T) func(*config.Config) {
				url := dbtest.URL(t, "postgres")
				return func(c *config.Config) { c.KeystoreURL, c.KEK = url, base64.StdEncoding.EncodeToString(kek) }
			},
		} {
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				enableNotes(e, nil)
				store := set(t)
				srvA, a := keyReplica(t, e, store)
				srvB, _ := keyReplica(t, e, store)
				bot := writer(e, "shop-bot-"+name, "acme")
				id := create(&apptest.Env{T: t, Server: srvA}, bot, note("Refund "+name, "Validate the purchase first."))
				require.Equal(t, http.StatusOK, call(srvA, "GET", notesPath+"/"+id, e.AdminKey), "A opens the note and caches its key")

				var saved []models.Note
				require.NoError(t, e.DB.NewSelect().Model(&saved).Where("id = ?", id).Scan(ctx))
				require.Len(t, saved, 1)
				require.Equal(t, http.StatusOK, call(srvB, "DELETE", notesPath+"/"+id, e.AdminKey), "B deletes it")
				ok, err := a.Keys.Exists(ctx, notes.NoteKeyID(id))
				require.NoError(t, err)
				require.False(t, ok, "the key is gone from the shared store")

				// A copy of the row restored from a backup, handed to the running A.
				_, err = e.DB.NewInsert().Model(&saved).Exec(ctx)
				require.NoError(t, err)
				require.Equal(t, http.StatusNotFound, call(srvA, "GET", notesPath+"/"+id, e.AdminKey), "A's next request opens nothing")
			})
		}
	})
}
