package api_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/config"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

// wmFields are the declared fields of the test agent's working-memory type: one of each kind
// the rules need (an object for whole replacement, an integer for 64-bit round trips, two pii
// fields).
func wmFields() map[string]any {
	return map[string]any{
		"step":      map[string]any{"type": "enum", "values": []string{"greet", "sizes", "checkout", "done"}},
		"offer":     map[string]any{"type": "string"},
		"cart_note": map[string]any{"type": "text", "pii": true},
		"contact":   map[string]any{"type": "string", "pii": true, "sensitivity": "high"},
		"cart":      map[string]any{"type": "object"},
		"count":     map[string]any{"type": "integer"},
		"price":     map[string]any{"type": "number"},
		"flag":      map[string]any{"type": "boolean"},
		"tags":      map[string]any{"type": "array"},
		"order_id":  map[string]any{"type": "string"},
	}
}

// wmType is an agent-owned type named name with wmFields, scoped by scope.
func wmType(name, scope string, maxBytes int, retention map[string]any) map[string]any {
	as := map[string]any{"scope": scope, "write": "both"}
	if maxBytes > 0 {
		as["max_bytes"] = maxBytes
	}
	t := map[string]any{"type": name, "ownership": "agent", "fields": wmFields(), "agent_state": as}
	if retention != nil {
		t["retention"] = retention
	}
	return t
}

func typesDoc(types ...map[string]any) map[string]any {
	list := make([]any, len(types))
	for i, t := range types {
		list[i] = t
	}
	return map[string]any{"types": list}
}

// enableWM turns the agent_state feature on and, when types is not nil, stores it as the
// object-types document.
func enableWM(e *apptest.Env, types map[string]any) {
	e.T.Helper()
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
	if types != nil {
		e.PutDocument("object-types", types)
	}
}

// setupWM enables working memory with the shop-bot type scoped by conversation and returns a
// shop-bot agent key with scope agent_state.
func setupWM(e *apptest.Env) string {
	e.T.Helper()
	enableWM(e, typesDoc(wmType("shop-bot", "conversation", 0, nil)))
	return e.AgentKey("shop-bot", "acme-ai", "agent_state")
}

func conv(id string) map[string]any { return map[string]any{"kind": "conversation", "id": id} }

// write sends PUT /v1/agent-state.
func write(e *apptest.Env, key string, req map[string]any, headers ...string) apptest.Response {
	e.T.Helper()
	return e.Do(http.MethodPut, "/v1/agent-state", key, req, headers...)
}

// mustStore writes and requires 200 stored:true, returning the version.
func mustStore(e *apptest.Env, key string, req map[string]any) int64 {
	e.T.Helper()
	r := e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", key, req)
	m := r.JSON(e.T)
	require.Equal(e.T, true, m["stored"], "got %s, want stored:true", r.Body)
	require.Nil(e.T, m["reason"], "got %s", r.Body)
	return num(e.T, m["version"])
}

// state is a decoded read answer plus its raw body text.
type state struct {
	Body    map[string]any
	Raw     string // the raw "body" member
	Version int64
	Updated any
}

// read sends POST /v1/agent-state/read and requires 200.
func read(e *apptest.Env, key string, scope map[string]any, agent string) state {
	e.T.Helper()
	req := map[string]any{"scope": scope}
	if agent != "" {
		req["agent"] = agent
	}
	r := e.MustDo(http.StatusOK, http.MethodPost, "/v1/agent-state/read", key, req)
	var raw struct {
		Body      json.RawMessage `json:"body"`
		Version   int64           `json:"version"`
		UpdatedAt any             `json:"updated_at"`
	}
	require.NoError(e.T, json.Unmarshal(r.Body, &raw))
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw.Body))
	dec.UseNumber()
	require.NoError(e.T, dec.Decode(&body))
	return state{Body: body, Raw: string(raw.Body), Version: raw.Version, Updated: raw.UpdatedAt}
}

func num(t testing.TB, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	require.True(t, ok, "got %v (%T), want a JSON number", v, v)
	i, err := strconv.ParseInt(string(n), 10, 64)
	require.NoError(t, err)
	return i
}

// errMember returns error.member of an error answer.
func errMember(t testing.TB, r apptest.Response) string {
	t.Helper()
	e, _ := r.JSON(t)["error"].(map[string]any)
	m, _ := e["member"].(string)
	return m
}

// requireError requires status and error code and returns the error object.
func requireError(t testing.TB, r apptest.Response, status int, code string) map[string]any {
	t.Helper()
	require.Equal(t, status, r.Status, "got %d, want %d: %s", r.Status, status, r.Body)
	m, _ := r.JSON(t)["error"].(map[string]any)
	require.Equal(t, code, m["code"], "got code %v, want %s: %s", m["code"], code, r.Body)
	return m
}

// dbText returns every value of every row of every table of the Env's database, as text
// (byte columns as their raw bytes), one line per row, prefixed with the table name.
func dbText(t testing.TB, e *apptest.Env) string {
	t.Helper()
	ctx := context.Background()
	var tables []string
	q := `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`
	if db.IsSQLite(e.DB) {
		q = `SELECT name FROM sqlite_master WHERE type = 'table'`
	}
	require.NoError(t, e.DB.NewRaw(q).Scan(ctx, &tables))
	require.NotEmpty(t, tables)
	var out strings.Builder
	for _, tbl := range tables {
		rows, err := e.DB.QueryContext(ctx, "SELECT * FROM "+tbl)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			out.WriteString(tbl)
			for _, v := range vals {
				out.WriteByte('\t')
				switch v := v.(type) {
				case []byte:
					out.Write(v)
				case nil:
				default:
					fmt.Fprint(&out, v)
				}
			}
			out.WriteByte('\n')
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return out.String()
}

// sqliteFiles returns the bytes of the SQLite database file and its WAL (empty on PostgreSQL).
func sqliteFiles(t testing.TB, e *apptest.Env) []byte {
	t.Helper()
	if !db.IsSQLite(e.DB) {
		return nil
	}
	var rows []struct {
		Seq  int            `bun:"seq"`
		Name string         `bun:"name"`
		File sql.NullString `bun:"file"`
	}
	require.NoError(t, e.DB.NewRaw("PRAGMA database_list").Scan(context.Background(), &rows))
	var all []byte
	for _, r := range rows {
		if r.Name != "main" || !r.File.Valid {
			continue
		}
		for _, p := range []string{r.File.String, r.File.String + "-wal"} {
			b, err := os.ReadFile(p)
			if err == nil {
				all = append(all, b...)
			}
		}
	}
	require.NotEmpty(t, all, "the SQLite file was not found")
	return all
}

// requireNotStored requires that none of needles appears (case-insensitively) in any row of
// any table, nor (on SQLite) anywhere in the database file or its WAL.
func requireNotStored(t testing.TB, e *apptest.Env, needles ...string) {
	t.Helper()
	text := strings.ToLower(dbText(t, e))
	files := bytes.ToLower(sqliteFiles(t, e))
	for _, n := range needles {
		ln := strings.ToLower(n)
		require.NotContains(t, text, ln, "%q is stored in clear in a table row", n)
		require.False(t, bytes.Contains(files, []byte(ln)), "%q is in the SQLite file in clear", n)
	}
}

// newReplica is a second API server wired on its own over e's database, as another replica
// process would be: its own connection pool (opened from the database's URL) and its own
// services (state, subjects, documents, turns, notes, compliance), so nothing held in memory
// by one is seen by the other. Only the subject key store is shared, as replicas share theirs
// (the key service, AGENTMEMORY_KEYSTORE_URL).
func newReplica(e *apptest.Env) *api.Server {
	e.T.Helper()
	srv, _ := newReplicaApp(e)
	return srv
}

// newReplicaApp is newReplica with the replica's service graph too (for tests that drive a
// worker's activity, such as a document's ingest, on that replica), and opts applied to its
// Deps before its server is built.
func newReplicaApp(e *apptest.Env, opts ...func(*api.Deps)) (*api.Server, *app.App) {
	t := e.T
	t.Helper()
	d, err := db.Open(context.Background(), databaseURL(t, e), dbtest.Shipped())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close(d) })
	require.NotSame(t, e.DB, d)
	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	cfg.Secret, cfg.DataDir = apptest.Secret, t.TempDir()
	// The binary's composition root over the replica's own pool; only the key store is e's.
	a, err := app.Build(context.Background(), cfg, app.Overrides{DB: d, Keys: e.Keys})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	require.NotSame(t, e.App.State, a.State)
	deps := a.APIDeps(nil)
	deps.MaxBodyBytes = e.Deps.MaxBodyBytes
	for _, o := range opts {
		o(&deps)
	}
	return api.NewServer(deps), a
}

// databaseURL is the URL of e's database: its SQLite file, or the PostgreSQL test server
// with e's schema as search_path.
func databaseURL(t testing.TB, e *apptest.Env) string {
	t.Helper()
	ctx := context.Background()
	if db.IsSQLite(e.DB) {
		var rows []struct {
			Seq  int            `bun:"seq"`
			Name string         `bun:"name"`
			File sql.NullString `bun:"file"`
		}
		require.NoError(t, e.DB.NewRaw("PRAGMA database_list").Scan(ctx, &rows))
		for _, r := range rows {
			if r.Name == "main" && r.File.Valid && r.File.String != "" {
				return "sqlite://" + r.File.String
			}
		}
		t.Fatal("the SQLite file was not found")
	}
	var schema string
	require.NoError(t, e.DB.NewRaw("SELECT current_schema()").Scan(ctx, &schema))
	return dbtest.PostgresURL() + "&search_path=" + schema
}

func jsonInt(i int64) string { return strconv.FormatInt(i, 10) }
