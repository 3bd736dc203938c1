package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/spaces"
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		setupWM(e)
		agent := e.AgentKey("shop-bot", "acme-ai", "agent_state", "agent_memory", "agent_memory:write", "context")
		_, operator, err := spaces.MintOperatorKey(context.Background(), e.DB, "json limits", time.Now())
		require.NoError(t, err)
		n := 0
		for _, r := range specRoutes(t) {
			if !r.HasBody {
				continue
			}
			key := e.AdminKey
			switch r.Path {
			case "/mcp":
				key = agent // MCP is for agent keys
			case "/v1/spaces":
				key = operator // spaces are created with an operator key only
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
	e := apptest.New(t, "sqlite")
	deep := bytes.Repeat([]byte("["), 1<<20-64)
	reader := e.PersonKey("ana", "reviewer")
	for _, path := range []string{"/v1/documents/object-types", "/v1/documents/features"} {
		res := e.Do("PUT", path, reader, deep)
		require.Equal(t, http.StatusForbidden, res.Status, "%s: %s", path, res.Body)
	}
	res := e.Do("PUT", "/v1/documents/nope", e.AdminKey, deep)
	require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Body)
	for _, path := range []string{"/v1/keys", "/v1/erasures", "/v1/exports"} {
		res = e.Do("POST", path, reader, deep)
		require.Equal(t, http.StatusForbidden, res.Status, "%s: %s", path, res.Body)
	}
	res = e.Do("PUT", "/v1/agent-state", "", deep)
	require.Equal(t, http.StatusUnauthorized, res.Status, "%s", res.Body)
}

// TestRequestIDIsABoundedToken (issue 11 §4): a caller's X-Request-Id is adopted only when it
// is a short token; an e-mail (or any other text) is replaced by a generated id and never
// reaches the log.
func TestRequestIDIsABoundedToken(t *testing.T) {
	var logged bytes.Buffer
	e := apptest.New(t, "sqlite", func(d *api.Deps) {
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

// TestRequestIDRefusesPhoneNumbers (issue 27): phone numbers in the token alphabet (digits
// only or with . - _ : separators), e-mails, long tokens and control characters are replaced
// by a generated id and never echoed nor logged; the service's own shape and ordinary tokens
// with short digit runs are adopted.
func TestRequestIDRefusesPhoneNumbers(t *testing.T) {
	var logged bytes.Buffer
	e := apptest.New(t, "sqlite", func(d *api.Deps) {
		d.Logger = slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	cases := []struct {
		name, id string
		adopted  bool
	}{
		{"digits-only phone", "5551234567", false},
		{"E.164 without plus", "5511987654321", false},
		{"dashed phone", "555-123-4567", false},
		{"dotted phone", "44.20.7946.0958", false},
		{"underscored phone", "11_98765_4321", false},
		{"colon phone", "555:123:4567", false},
		{"phone inside a token", "req-5551234567", false},
		{"phone with plus", "+5551234567", false},
		{"e-mail", "ana.souza@example.com", false},
		{"65 characters", strings.Repeat("a", 65), false},
		{"control character", "req\x01abc", false},
		{"newline", "req\nabc", false},
		{"the service's shape", "3f9a0c5e7b2d4a16", true},
		{"short digit runs", "req-01:abc.DEF_9", true},
		{"six digits", "job-123456", true},
		{"digits split by letters", "a1234b5678c9012", true},
	}
	for _, c := range cases {
		res := e.Do("GET", "/v1/receipts", e.AdminKey, nil, "X-Request-Id", c.id)
		require.Equal(t, http.StatusOK, res.Status, c.name)
		got := res.Header.Get("X-Request-Id")
		if c.adopted {
			require.Equal(t, c.id, got, "%s: got %q, want it adopted", c.name, got)
			require.Contains(t, logged.String(), c.id, c.name)
			continue
		}
		require.Regexp(t, `^[0-9a-f]{16}$`, got, "%s: a generated id", c.name)
		require.NotEqual(t, c.id, got, c.name)
		require.NotContains(t, logged.String(), c.id, "%s: never logged", c.name)
	}
	for _, part := range []string{"5551234567", "555-123-4567", "7946.0958", "98765_4321", "example.com"} {
		require.NotContains(t, logged.String(), part)
	}
}

// TestLoneSurrogateEscapesAreRefused (issue 11 §4): a \ud800-style escape is refused as raw
// invalid UTF-8 is (400 invalid_json), as a body value and in a scope id, and changes nothing:
// "\ud800lone" no longer opens the state of "\ufffdlone".
func TestLoneSurrogateEscapesAreRefused(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		c := conv("c-sur")
		mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"offer": "a"}})
		for _, body := range []string{
			`{"scope":{"kind":"conversation","id":"c-sur"},"body":{"offer":"\ud800lone"}}`,
			`{"scope":{"kind":"conversation","id":"c-sur"},"body":{"offer":"x\udc00"}}`,
			`{"scope":{"kind":"conversation","id":"\ud800lone"},"body":{"offer":"b"}}`,
		} {
			r := e.Do(http.MethodPut, "/v1/agent-state", key, body)
			requireError(t, r, http.StatusBadRequest, "invalid_json")
		}
		r := e.Do(http.MethodPost, "/v1/agent-state/read", key, `{"scope":{"kind":"conversation","id":"\ud800lone"}}`)
		requireError(t, r, http.StatusBadRequest, "invalid_json")
		got := read(e, key, c, "")
		require.Equal(t, int64(1), got.Version)
		require.Equal(t, "a", got.Body["offer"])
		require.Equal(t, int64(0), read(e, key, conv("\ufffdlone"), "").Version, "nothing was written under the replacement character")
		// A valid pair is text like any other.
		mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"offer": "😀"}})
		r = e.Do(http.MethodPut, "/v1/agent-state", key, `{"scope":{"kind":"conversation","id":"c-sur"},"body":{"offer":"\ud83d\ude00!"}}`)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	})
}

// TestNumbersOutsideFloat64AreRefused (issue 11 §4): a number field given 1e400 or 1e-400
// (non-zero digits that underflow to 0) is 400 invalid_number and changes nothing.
func TestNumbersOutsideFloat64AreRefused(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		c := conv("c-num")
		mustStore(e, key, map[string]any{"scope": c, "body": map[string]any{"price": 1.5}})
		for _, n := range []string{"1e400", "-1e400", "1e-400", "0.5e-330"} {
			r := e.Do(http.MethodPut, "/v1/agent-state", key, `{"scope":{"kind":"conversation","id":"c-num"},"body":{"price":`+n+`}}`)
			requireError(t, r, http.StatusBadRequest, "invalid_number")
		}
		got := read(e, key, c, "")
		require.Equal(t, int64(1), got.Version)
		require.Equal(t, `{"price":1.5}`, got.Raw)
		for _, n := range []string{"0e-400", "1.7976931348623157e308", "5e-324"} {
			r := e.Do(http.MethodPut, "/v1/agent-state", key, `{"scope":{"kind":"conversation","id":"c-num"},"body":{"price":`+n+`}}`)
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", n, r.Body)
		}
	})
}

// TestWMCapCountsCanonicalBytes (WM-8, issue 11 §4): the same emoji text sent raw or
// \u-escaped is stored as the same bytes and counted the same: at a cap the raw form fits
// exactly, the escaped form (three times longer on the wire) is accepted too.
func TestWMCapCountsCanonicalBytes(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const n = 20
		text := strings.Repeat("😀", n)
		capBytes := len(`{"offer":""}`) + len(text)
		enableWM(e, typesDoc(wmType("shop-bot", "conversation", capBytes, nil)))
		key := e.AgentKey("shop-bot", "acme-ai", "agent_state")

		mustStore(e, key, map[string]any{"scope": conv("c-raw"), "body": map[string]any{"offer": text}})
		escaped := `{"scope":{"kind":"conversation","id":"c-esc"},"body":{"offer":"` + strings.Repeat(`\ud83d\ude00`, n) + `"}}`
		r := e.Do(http.MethodPut, "/v1/agent-state", key, escaped)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.Equal(t, true, r.JSON(t)["stored"], "the escaped form fits the cap its raw form fits: %s", r.Body)

		rawState, escState := read(e, key, conv("c-raw"), ""), read(e, key, conv("c-esc"), "")
		require.Equal(t, rawState.Raw, escState.Raw)
		require.Equal(t, `{"offer":"`+text+`"}`, escState.Raw)
		var counted []int
		require.NoError(t, e.DB.NewSelect().Table("agent_states").Column("bytes").Scan(context.Background(), &counted))
		require.Equal(t, []int{capBytes, capBytes}, counted, "both counted as the same stored bytes")

		// One more emoji is over the cap, raw or escaped, counted in stored bytes.
		r = e.Do(http.MethodPut, "/v1/agent-state", key, `{"scope":{"kind":"conversation","id":"c-esc"},"body":{"offer":"`+strings.Repeat(`\ud83d\ude00`, n+1)+`"}}`)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		m := r.JSON(t)
		require.Equal(t, false, m["stored"])
		require.Equal(t, int64(capBytes+4), num(t, m["bytes"]))
	})
}

// TestContentTypeIsChecked (issue 11 §4): on every route with a requestBody in openapi.json,
// a body sent as text, XML or a form is 415 unsupported_media_type; JSON types (with a UTF-8
// charset) are read. A body on a route without a requestBody is 400 unexpected_body.
func TestContentTypeIsChecked(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key := setupWM(e)
		body := `{"scope":{"kind":"conversation","id":"c-ct"},"body":{"offer":"a"}}`
		for _, ct := range []string{"text/plain", "application/xml", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=latin1", "", "json", "application/+json"} {
			r := e.Do(http.MethodPut, "/v1/agent-state", key, body, "Content-Type", ct)
			requireError(t, r, http.StatusUnsupportedMediaType, "unsupported_media_type")
		}
		require.Equal(t, int64(0), read(e, key, conv("c-ct"), "").Version, "nothing was written")
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON; charset=UTF-8", "application/vnd.agentmemory+json"} {
			r := e.Do(http.MethodPut, "/v1/agent-state", key, body, "Content-Type", ct)
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", ct, r.Body)
		}
		// Every body route of the spec refuses text/plain before reading it.
		for _, r := range specRoutes(t) {
			if !r.HasBody || r.Path == "/mcp" {
				continue
			}
			res := e.Do(r.Method, concrete(r.Path), e.AdminKey, `{}`, "Content-Type", "text/plain")
			requireError(t, res, http.StatusUnsupportedMediaType, "unsupported_media_type")
		}
		// Routes without a requestBody take none; an empty body is fine.
		for _, r := range specRoutes(t) {
			if r.HasBody {
				continue
			}
			res := e.Do(r.Method, concrete(r.Path), e.AdminKey, `{"a":1}`)
			requireError(t, res, http.StatusBadRequest, "unexpected_body")
		}
		e.MustDo(http.StatusOK, http.MethodGet, "/v1/receipts", e.AdminKey, "")
		// Optional bodies (retire, approve, reject, sweep) may still be absent.
		r := e.Do(http.MethodPost, "/v1/retention/sweep", e.AdminKey, nil)
		require.NotEqual(t, http.StatusUnsupportedMediaType, r.Status, "%s", r.Body)
	})
}
