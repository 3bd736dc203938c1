package api_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"agentmemory/api"
	"agentmemory/api/apitest"
)

// bodyRoute is one operation of api/openapi.json.
type bodyRoute struct {
	Method, Path string
	HasBody      bool
}

// specRoutes lists every operation of api/openapi.json (read from the spec, so a new route is
// covered by the tests below without editing them), in a stable order.
func specRoutes(t *testing.T) []bodyRoute {
	t.Helper()
	data, err := os.ReadFile("openapi.json")
	require.NoError(t, err)
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(data, &spec))
	var out []bodyRoute
	for path, ops := range spec.Paths {
		for method, raw := range ops {
			var op map[string]json.RawMessage
			if json.Unmarshal(raw, &op) != nil {
				continue // "parameters" shared by the path's operations
			}
			_, hasBody := op["requestBody"]
			out = append(out, bodyRoute{Method: strings.ToUpper(method), Path: path, HasBody: hasBody})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path+out[i].Method < out[j].Path+out[j].Method })
	return out
}

// concrete fills a spec path's parameters with values that exist where it matters.
func concrete(path string) string {
	path = strings.ReplaceAll(path, "{name}", "object-types")
	for _, p := range []string{"{key_id}", "{profile_id}", "{id}", "{erasure_id}", "{export_id}"} {
		path = strings.ReplaceAll(path, p, "x_0123456789")
	}
	return path
}

// TestDeepNestingIsRefusedOnEveryBodyRoute (issue 11 §1): 1 MB of nesting sent with a key
// that may use the route is refused with 400 json_too_deep on every route that reads a body,
// and the server allocates a bounded amount for it (the old parser took ~2 GB for 60 KB).
func TestDeepNestingIsRefusedOnEveryBodyRoute(t *testing.T) {
	bodies := map[string][]byte{
		"arrays":  bytes.Repeat([]byte("["), 1<<20-64),
		"objects": bytes.Repeat([]byte(`{"a":`), (1<<20-64)/5),
	}
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		setupWM(e)
		agent := e.AgentKey("shop-bot", "acme-ai", "agent_state", "agent_memory", "agent_memory:write", "context")
		n := 0
		for _, r := range specRoutes(t) {
			if !r.HasBody {
				continue
			}
			key := e.AdminKey
			if r.Path == "/mcp" {
				key = agent // MCP is for agent keys
			}
			for name, body := range bodies {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				res := e.Do(r.Method, concrete(r.Path), key, body)
				runtime.ReadMemStats(&after)
				require.Equal(t, http.StatusBadRequest, res.Status, "%s %s (%s): %s", r.Method, r.Path, name, res.Body)
				require.Equal(t, "json_too_deep", res.ErrorCode(t), "%s %s (%s)", r.Method, r.Path, name)
				// The body itself (1 MB) is read into memory, with the reader's growth: a few
				// MB; nothing grows with the depth.
				require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(12<<20), "%s %s (%s) allocated too much", r.Method, r.Path, name)
			}
			n++
		}
		require.GreaterOrEqual(t, n, 15, "the spec lists the body routes")
	})
}

// TestBodyIsReadAfterAuthorisation: a key that may not use a route gets 401/403 for a deep
// body, not a parse of it.
func TestBodyIsReadAfterAuthorisation(t *testing.T) {
	e := apitest.New(t, "sqlite")
	deep := bytes.Repeat([]byte("["), 1<<20-64)
	reader := e.PersonKey("ana", "reviewer")
	for _, path := range []string{"/v1/documents/object-types", "/v1/documents/features"} {
		res := e.Do("PUT", path, reader, deep)
		require.Equal(t, http.StatusForbidden, res.Status, "%s: %s", path, res.Body)
	}
	res := e.Do("PUT", "/v1/documents/nope", e.AdminKey, deep)
	require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Body)
	res = e.Do("POST", "/v1/keys", reader, deep)
	require.Equal(t, http.StatusForbidden, res.Status, "%s", res.Body)
	res = e.Do("PUT", "/v1/agent-state", "", deep)
	require.Equal(t, http.StatusUnauthorized, res.Status, "%s", res.Body)
}

// TestRequestIDIsABoundedToken (issue 11 §4): a caller's X-Request-Id is adopted only when it
// is a short token; an e-mail (or any other text) is replaced by a generated id and never
// reaches the log.
func TestRequestIDIsABoundedToken(t *testing.T) {
	var logged bytes.Buffer
	e := apitest.New(t, "sqlite", func(d *api.Deps) {
		d.Logger = slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	for _, bad := range []string{"ana.souza@example.com", "ana souza", strings.Repeat("a", 65), "a/b", "é"} {
		res := e.Do("GET", "/v1/receipts", e.AdminKey, nil, "X-Request-Id", bad)
		require.Equal(t, http.StatusOK, res.Status)
		got := res.Header.Get("X-Request-Id")
		require.Regexp(t, `^[0-9a-f]{16}$`, got, "a generated id")
		require.NotEqual(t, bad, got)
	}
	require.NotContains(t, logged.String(), "ana")
	require.NotContains(t, logged.String(), "example.com")
	require.NotContains(t, logged.String(), strings.Repeat("a", 65))

	good := "req-01:abc.DEF_9"
	res := e.Do("GET", "/v1/receipts", e.AdminKey, nil, "X-Request-Id", good)
	require.Equal(t, good, res.Header.Get("X-Request-Id"))
	require.Contains(t, logged.String(), good)
}
