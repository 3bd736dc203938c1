// Package apptest runs the real API over a fresh database for tests: it builds the service
// graph through the binary's composition root (app.Build), creates a space with an admin
// key, and offers small helpers to call the API and decode its JSON.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// Env is one API over one database, with a space and its admin key (every person role). The
// space is created as `agentmemory space create --direct-put` creates it, so tests set its
// documents up with one PUT; NewSpace makes a space with the default (change requests only).
type Env struct {
	T      testing.TB
	Engine string
	// App is the service graph the API runs on (its worker: App.NewWorker).
	App      *app.App
	DB       *bun.DB
	Deps     api.Deps
	Server   *api.Server
	Hasher   keyed.Hasher
	Keys     keystore.Store
	SpaceID  string
	AdminKey string
}

// Secret is the server secret every Env uses.
const Secret = "apitest-secret-0123456789abcdef0123456789abcdef"

// Each runs fn on a fresh Env per engine ("sqlite", "postgres") as subtests.
func Each(t *testing.T, fn func(t *testing.T, e *Env)) {
	t.Helper()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) { fn(t, New(t, engine)) })
	}
}

// New builds an Env on a fresh database of engine, opened with the service's shipped pool
// configuration (dbtest.Shipped). Options may adjust Deps before the server is built (e.g. a
// fixed clock).
func New(t testing.TB, engine string, opts ...func(*api.Deps)) *Env {
	t.Helper()
	return NewWithPool(t, engine, dbtest.Shipped(), opts...)
}

// NewWithPool is New with the pool configuration pool instead of the shipped one (for a
// benchmark's tuned comparison).
func NewWithPool(t testing.TB, engine string, pool db.Options, opts ...func(*api.Deps)) *Env {
	t.Helper()
	d := dbtest.OpenWith(t, engine, pool)
	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	cfg.Secret, cfg.DataDir = Secret, t.TempDir()
	// deps.Now is every service's clock, so an option's fixed clock reaches them all.
	var deps api.Deps
	a, err := app.Build(context.Background(), cfg, app.Overrides{DB: d, Now: func() time.Time { return deps.Now() }})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	deps = a.APIDeps(nil)
	deps.Now = time.Now
	for _, o := range opts {
		o(&deps)
	}
	if deps.Signer != nil && a.Compliance.Signer == nil {
		a.Compliance.Signer = deps.Signer // certificates are signed when issued, as in the binary
	}
	spaceID, admin, err := spaces.CreateWith(context.Background(), d, "test", time.Now(), spaces.CreateOptions{DirectPut: true})
	require.NoError(t, err)
	return &Env{T: t, Engine: engine, App: a, DB: d, Deps: deps, Server: api.NewServer(deps), Hasher: a.Hasher, Keys: a.Keys, SpaceID: spaceID, AdminKey: admin}
}

// NewSpace creates another space named name in the Env's database and returns its id and
// admin key; directPut is its CreateOptions.DirectPut (false: the default of a new space).
func (e *Env) NewSpace(name string, directPut bool) (spaceID, adminKey string) {
	e.T.Helper()
	spaceID, adminKey, err := spaces.CreateWith(context.Background(), e.DB, name, time.Now(), spaces.CreateOptions{DirectPut: directPut})
	require.NoError(e.T, err)
	return spaceID, adminKey
}

// Response is a recorded answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the answer's body into a map (numbers as json.Number).
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m), "body: %s", r.Body)
	return m
}

// ErrorCode returns error.code of an error answer ("" when absent).
func (r Response) ErrorCode(t testing.TB) string {
	t.Helper()
	m := r.JSON(t)
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// Do sends a request with key as Bearer (none when empty). body may be nil, a string or
// []byte (sent as is) or any value (sent as JSON).
func (e *Env) Do(method, path, key string, body any, headers ...string) Response {
	e.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(e.T, err)
		rd = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	e.Server.ServeHTTP(rec, req)
	return Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// MustDo is Do that requires the given status.
func (e *Env) MustDo(status int, method, path, key string, body any, headers ...string) Response {
	e.T.Helper()
	r := e.Do(method, path, key, body, headers...)
	require.Equal(e.T, status, r.Status, "%s %s: got %d, want %d: %s", method, path, r.Status, status, r.Body)
	return r
}

// AgentKey mints an agent key with scopes and returns it.
func (e *Env) AgentKey(agent, vendor string, scopes ...string) string {
	e.T.Helper()
	r := e.MustDo(http.StatusCreated, "POST", "/v1/keys", e.AdminKey, map[string]any{
		"kind": "agent", "agent": agent, "vendor": vendor, "scopes": scopes,
	})
	return r.JSON(e.T)["key"].(string)
}

// PersonKey mints a person key with roles and returns it.
func (e *Env) PersonKey(name string, roles ...string) string {
	e.T.Helper()
	r := e.MustDo(http.StatusCreated, "POST", "/v1/keys", e.AdminKey, map[string]any{
		"kind": "person", "name": name, "roles": roles,
	})
	return r.JSON(e.T)["key"].(string)
}

// PutDocument stores a space document (features, object-types) as the admin.
func (e *Env) PutDocument(name string, doc any) {
	e.T.Helper()
	e.MustDo(http.StatusOK, "PUT", "/v1/documents/"+name, e.AdminKey, doc)
}

// ShopBotTypes is the object-types document of spec/working-memory.en.md's example, named
// for agent shop-bot.
func ShopBotTypes() map[string]any {
	return map[string]any{"types": []any{map[string]any{
		"type": "shop-bot", "ownership": "agent",
		"fields": map[string]any{
			"step":      map[string]any{"type": "string"}, // free text: the tests write many steps
			"offer":     map[string]any{"type": "string"},
			"cart_note": map[string]any{"type": "text", "pii": true},
		},
		"agent_state": map[string]any{"scope": "conversation", "max_bytes": 16384, "write": "both"},
		"retention":   map[string]any{"state": "30d", "cart_note": "7d"},
	}}}
}
