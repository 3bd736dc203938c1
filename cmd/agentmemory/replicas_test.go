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
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/models"
	"github.com/agentmemory/agentmemory/workflows"
)

// replica is one app instance (an API replica; the first also runs the worker).
type replica struct {
	t   *testing.T
	app *app.App
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

// raw is the body of a 200 GET, byte for byte.
func (r replica) raw(path, key string) []byte {
	r.t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	w := httptest.NewRecorder()
	r.h.ServeHTTP(w, req)
	require.Equal(r.t, http.StatusOK, w.Code, "GET %s: %s", path, w.Body.String())
	return w.Body.Bytes()
}

// waitWorkflow waits up to a minute for the workflow id to end without error.
func waitWorkflow(t *testing.T, tc client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, tc.GetWorkflow(ctx, id, "").Get(ctx, nil), "workflow %s", id)
}

// Issue 12, end to end: two replicas (each its own pools and data dir) over one main database
// share the PostgreSQL key store (§5). One seals a subject's state, the other opens it. The
// subject also has turns, an identity link, a profile and an export package; an erasure run
// through the first replica completes with a certificate that lists every store with what it
// removed and a probe of 0 (§2, §3), whose signature the CLI verifies against
// /v1/signing-keys while one changed byte fails it (§4). Afterwards the second replica fails
// closed, and a copy of the main database taken before the erasure cannot be opened for that
// subject. On SQLite (one file shared by both; the copy is a real file) and on PostgreSQL (the
// copy is the rows as read before the erasure).
func TestErasureEndToEndAcrossReplicas(t *testing.T) {
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
		"AGENTMEMORY_SIGNING_KEY":  base64.StdEncoding.EncodeToString(randomKEK(t)), // a 32-byte Ed25519 seed
		"AGENTMEMORY_TASK_QUEUE":   "replicas-" + auth.NewID("tq"),
		"AGENTMEMORY_LOG_FORMAT":   "text",
	}
	open := func() replica {
		vars["AGENTMEMORY_DATA_DIR"] = t.TempDir() // no file shared but the SQLite database
		cfg, err := config.Load(env(vars))
		require.NoError(t, err)
		a, err := openApp(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
		require.NoError(t, err)
		t.Cleanup(a.Close)
		require.IsType(t, &keystore.Postgres{}, a.Keys.(*keystore.Cache).Unwrap(), "AGENTMEMORY_KEYSTORE_URL must select the PostgreSQL store")
		return replica{t: t, app: a, h: a.Server(tc)}
	}
	one, two := open(), open()

	// Issue 12 §5: a replica given a wrong AGENTMEMORY_KEK never starts (serve and worker
	// exit non-zero with this error); it cannot wrap keys the others cannot open.
	wrongVars := map[string]string{}
	for k, v := range vars {
		wrongVars[k] = v
	}
	wrong := randomKEK(t)
	wrongVars["AGENTMEMORY_KEK"] = base64.StdEncoding.EncodeToString(wrong)
	wrongCfg, err := config.Load(env(wrongVars))
	require.NoError(t, err)
	_, err = openApp(ctx, wrongCfg, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	require.ErrorIs(t, err, keystore.ErrWrongKEK)
	require.ErrorContains(t, err, keystore.KEKID(wrong))
	w, err := one.app.StartWorker(tc)
	require.NoError(t, err)
	t.Cleanup(w.Stop)

	ready := two.call(http.StatusOK, "GET", "/readyz", "", nil)
	require.Equal(t, map[string]any{"database": "ok", "keystore": "ok"}, ready["checks"])

	spaceID, admin, err := spaces.CreateWith(ctx, one.app.DB, "acme", time.Now(), spaces.CreateOptions{DirectPut: true})
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

	integ := one.call(http.StatusCreated, "POST", "/v1/keys", admin, map[string]any{
		"kind": "person", "name": "integrator", "roles": []string{auth.RoleIntegration},
	})["key"].(string)

	const handle = "email:ana.souza@example.com"
	scope := map[string]any{"kind": "subject", "id": handle}
	one.call(http.StatusOK, "PUT", "/v1/agent-state", crm, map[string]any{"scope": scope, "body": map[string]any{"tier": "gold", "note": "prefers letters"}})
	profileID := one.call(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{
		"name": "Ana Souza", "handles": []string{handle, "phone:+55 11 98765-4321"},
	})["profile_id"].(string)
	one.call(http.StatusCreated, "POST", "/v1/identity-links", integ, map[string]any{"conversation_id": "c-ana", "subject": handle, "status": "confirmed"})
	one.call(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"turns": []map[string]any{
		{"conversation_id": "c-ana", "speaker": "customer", "text": "my address is ana.souza@example.com"},
		{"conversation_id": "c-ana", "speaker": "agent", "text": "thanks, noted"},
	}})
	exportID := one.call(http.StatusAccepted, "POST", "/v1/exports", dpo, map[string]any{"subject": handle})["export_id"].(string)
	waitWorkflow(t, tc, workflows.ExportWorkflowID(exportID))
	require.Equal(t, "completed", two.call(http.StatusOK, "GET", "/v1/exports/"+exportID, dpo, nil)["status"])
	got := two.call(http.StatusOK, "POST", "/v1/agent-state/read", crm, map[string]any{"scope": scope})
	require.Equal(t, "gold", got["body"].(map[string]any)["tier"], "replica two must open what replica one sealed: %v", got)

	// The backup: the subject's rows as a copy of the main database holds them.
	var backup []models.AgentState
	require.NoError(t, one.app.DB.NewSelect().Model(&backup).Where("space_id = ? AND subject_hash != ''", spaceID).Scan(ctx))
	require.Len(t, backup, 1)
	require.False(t, bytes.Contains(backup[0].Body, []byte("prefers letters")), "the state is stored in clear")
	keyID := state.SubjectKeyID(backup[0].SubjectHash)
	var fileCopy string // SQLite: a real copy of the database file, taken before the erasure
	if engine == "sqlite" {
		fileCopy = filepath.Join(t.TempDir(), "backup.db")
		_, err := one.app.DB.ExecContext(ctx, "VACUUM INTO ?", fileCopy)
		require.NoError(t, err)
	}
	_, err = two.app.Keys.DataKey(ctx, keyID, false)
	require.NoError(t, err, "the subject key is not in the shared store")

	id := one.call(http.StatusAccepted, "POST", "/v1/erasures", dpo, map[string]any{"subject": handle})["erasure_id"].(string)
	waitWorkflow(t, tc, workflows.ErasureWorkflowID(id))
	require.Equal(t, "completed", two.call(http.StatusOK, "GET", "/v1/erasures/"+id, dpo, nil)["status"])
	two.call(http.StatusNotFound, "GET", "/v1/profiles/"+profileID, integ, nil)
	two.call(http.StatusNotFound, "GET", "/v1/exports/"+exportID, dpo, nil)

	// The signed certificate, as a third party receives it from the other replica.
	signed := two.raw("/v1/erasures/"+id+"/certificate", dpo)
	var doc struct {
		Certificate struct {
			Stores []struct {
				Store          string `json:"store"`
				Removed, Probe int
			} `json:"stores"`
			NothingFound bool `json:"nothing_found"`
		} `json:"certificate"`
	}
	require.NoError(t, json.Unmarshal(signed, &doc))
	require.False(t, doc.Certificate.NothingFound)
	removed := map[string]int{}
	for _, st := range doc.Certificate.Stores {
		require.Zero(t, st.Probe, "store %s still holds the subject", st.Store)
		removed[st.Store] = st.Removed
	}
	for _, store := range []string{"state", "turns", "exports", "subjects", "keys"} {
		require.Positive(t, removed[store], "store %s removed nothing: %s", store, signed)
	}
	require.Contains(t, removed, "outbox", "every registered store is listed")
	require.NotContains(t, string(signed), "ana.souza")

	// The CLI verifies it against the keys the service publishes; one changed byte fails it.
	srv := httptest.NewServer(two.h)
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "certificate.json")
	require.NoError(t, os.WriteFile(file, signed, 0o600))
	out, err := cli(t, nil, "verify-certificate", file, "--keys", srv.URL+"/v1/signing-keys")
	require.NoError(t, err, out)
	require.Contains(t, out, "signature: valid")
	changed := bytes.Replace(signed, []byte(`"store":"state"`), []byte(`"store":"stat3"`), 1)
	require.NotEqual(t, signed, changed)
	require.NoError(t, os.WriteFile(file, changed, 0o600))
	_, err = cli(t, nil, "verify-certificate", file, "--keys", srv.URL+"/v1/signing-keys")
	require.ErrorIs(t, err, signing.ErrBadSignature)

	// Replica two fails closed: the shared key store has no key, and there is nothing to read.
	// Its own key cache (keystore.Cached) may still hold the key for up to its TTL, which
	// serves no erased bytes because the rows are gone; a process started on a restored copy
	// starts with an empty cache, so the backup's row stays shut there (docs/compliance.md).
	_, err = two.app.Keys.(*keystore.Cache).Unwrap().DataKey(ctx, keyID, false)
	require.ErrorIs(t, err, keystore.ErrNoKey)
	got = two.call(http.StatusOK, "POST", "/v1/agent-state/read", crm, map[string]any{"scope": scope})
	require.Equal(t, map[string]any{}, got["body"], "replica two still reads the erased subject")
	three := open()
	ok, err := three.app.State.Unseal(ctx, &backup[0])
	require.NoError(t, err)
	require.False(t, ok, "the backup's state opened after the erasure")
	if fileCopy != "" {
		old, err := db.Open(ctx, "sqlite://"+fileCopy, db.Options{MaxOpenConns: 1})
		require.NoError(t, err)
		defer old.Close()
		var copied []models.AgentState
		require.NoError(t, old.NewSelect().Model(&copied).Where("space_id = ? AND subject_hash != ''", spaceID).Scan(ctx))
		require.Len(t, copied, 1, "the copy holds the subject's sealed state")
		ok, err := three.app.State.Unseal(ctx, &copied[0])
		require.NoError(t, err)
		require.False(t, ok, "the state in the file copy opened after the erasure")
	}

	// /readyz reports a key store that does not answer.
	require.NoError(t, two.app.Keys.(*keystore.Cache).Unwrap().(*keystore.Postgres).Close())
	notReady := two.call(http.StatusServiceUnavailable, "GET", "/readyz", "", nil)
	require.Equal(t, "unavailable", notReady["error"].(map[string]any)["checks"].(map[string]any)["keystore"], "%v", notReady)
}
