package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"agentmemory/internal/auth"
	"agentmemory/internal/config"
	"agentmemory/internal/db/dbtest"
	"agentmemory/internal/keystore"
	"agentmemory/internal/spaces"
	"agentmemory/internal/state"
	"agentmemory/models"
	"agentmemory/workflows"
)

// replica is one app instance (an API replica; the first also runs the worker).
type replica struct {
	t   *testing.T
	app *app
	h   http.Handler
}

func (r replica) call(status int, method, path, key string, body any) map[string]any {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(r.t, err)
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	w := httptest.NewRecorder()
	r.h.ServeHTTP(w, req)
	require.Equal(r.t, status, w.Code, "%s %s: got %d, want %d: %s", method, path, w.Code, status, w.Body.String())
	var out map[string]any
	require.NoError(r.t, json.Unmarshal(w.Body.Bytes(), &out))
	return out
}

// Issue 12 §5: two replicas (each its own pools and data dir) over one main database share
// the PostgreSQL key store. One seals a subject's state, the other opens it; an erasure run
// through the first makes the second fail closed; a copy of the main database taken before
// the erasure cannot be opened for that subject afterwards. On SQLite (one file shared by both)
// and on PostgreSQL.
func TestReplicasShareTheKeyStore(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: Temporal dev server and PostgreSQL")
	}
	tc := devServer(t).Client()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) { replicasShareKeys(t, tc, engine) })
	}
}

func replicasShareKeys(t *testing.T, tc client.Client, engine string) {
	ctx := context.Background()
	mainURL := "sqlite://" + filepath.Join(t.TempDir(), "agentmemory.db")
	if engine == "postgres" {
		mainURL = dbtest.URL(t, "postgres")
	}
	vars := map[string]string{
		"DATABASE_URL":             mainURL,
		"AGENTMEMORY_SECRET":       "replicas-test-secret-0123456789abcdef",
		"AGENTMEMORY_KEYSTORE_URL": dbtest.URL(t, "postgres"),
		"AGENTMEMORY_KEK":          base64.StdEncoding.EncodeToString(randomKEK(t)),
		"AGENTMEMORY_TASK_QUEUE":   "replicas-" + auth.NewID("tq"),
		"AGENTMEMORY_LOG_FORMAT":   "text",
	}
	open := func() replica {
		vars["AGENTMEMORY_DATA_DIR"] = t.TempDir() // no file shared but the SQLite database
		cfg, err := config.Load(env(vars))
		require.NoError(t, err)
		a, err := openApp(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
		require.NoError(t, err)
		t.Cleanup(a.close)
		require.IsType(t, &keystore.Postgres{}, a.keys, "AGENTMEMORY_KEYSTORE_URL must select the PostgreSQL store")
		return replica{t: t, app: a, h: a.apiServer(tc)}
	}
	one, two := open(), open()
	w, err := one.app.startWorker(tc)
	require.NoError(t, err)
	t.Cleanup(w.Stop)

	ready := two.call(http.StatusOK, "GET", "/readyz", "", nil)
	require.Equal(t, map[string]any{"database": "ok", "keystore": "ok"}, ready["checks"])

	spaceID, admin, err := spaces.Create(ctx, one.app.db, "acme", time.Now())
	require.NoError(t, err)
	one.call(http.StatusOK, "PUT", "/v1/documents/features", admin, map[string]any{"agent_state": map[string]any{"enabled": true}})
	one.call(http.StatusOK, "PUT", "/v1/documents/object-types", admin, map[string]any{"types": []any{map[string]any{
		"type": "crm-bot", "ownership": "agent",
		"fields": map[string]any{
			"tier": map[string]any{"type": "string", "sensitivity": "medium"},
			"note": map[string]any{"type": "text", "pii": true, "sensitivity": "high"},
		},
		"agent_state": map[string]any{"scope": "subject"},
	}}})
	crm := one.call(http.StatusCreated, "POST", "/v1/keys", admin, map[string]any{
		"kind": "agent", "agent": "crm-bot", "vendor": "acme", "scopes": []string{auth.ScopeAgentState},
	})["key"].(string)
	dpo := one.call(http.StatusCreated, "POST", "/v1/keys", admin, map[string]any{
		"kind": "person", "name": "dpo", "roles": []string{auth.RoleCompliance},
	})["key"].(string)

	scope := map[string]any{"kind": "subject", "id": "email:ana.souza@example.com"}
	one.call(http.StatusOK, "PUT", "/v1/agent-state", crm, map[string]any{"scope": scope, "body": map[string]any{"tier": "gold", "note": "prefers letters"}})
	got := two.call(http.StatusOK, "POST", "/v1/agent-state/read", crm, map[string]any{"scope": scope})
	require.Equal(t, "gold", got["body"].(map[string]any)["tier"], "replica two must open what replica one sealed: %v", got)

	// The backup: the subject's rows as a copy of the main database holds them.
	var backup []models.AgentState
	require.NoError(t, one.app.db.NewSelect().Model(&backup).Where("space_id = ? AND subject_hash != ''", spaceID).Scan(ctx))
	require.Len(t, backup, 1)
	require.False(t, bytes.Contains(backup[0].Body, []byte("prefers letters")), "the state is stored in clear")
	keyID := state.SubjectKeyID(backup[0].SubjectHash)
	_, err = two.app.keys.DataKey(ctx, keyID, false)
	require.NoError(t, err, "the subject key is not in the shared store")

	id := one.call(http.StatusAccepted, "POST", "/v1/erasures", dpo, map[string]any{"subject": "email:ana.souza@example.com"})["erasure_id"].(string)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, tc.GetWorkflow(wctx, workflows.ErasureWorkflowID(id), "").Get(wctx, nil))
	require.Equal(t, "completed", two.call(http.StatusOK, "GET", "/v1/erasures/"+id, dpo, nil)["status"])

	// Replica two fails closed: no key, nothing to read, and the backup's row stays shut.
	_, err = two.app.keys.DataKey(ctx, keyID, false)
	require.ErrorIs(t, err, keystore.ErrNoKey)
	got = two.call(http.StatusOK, "POST", "/v1/agent-state/read", crm, map[string]any{"scope": scope})
	require.Equal(t, map[string]any{}, got["body"], "replica two still reads the erased subject")
	ok, err := two.app.state.Unseal(ctx, &backup[0])
	require.NoError(t, err)
	require.False(t, ok, "the backup's state opened after the erasure")

	// /readyz reports a key store that does not answer.
	require.NoError(t, two.app.keys.(*keystore.Postgres).Close())
	notReady := two.call(http.StatusServiceUnavailable, "GET", "/readyz", "", nil)
	require.Equal(t, "unavailable", notReady["error"].(map[string]any)["checks"].(map[string]any)["keystore"], "%v", notReady)
}
