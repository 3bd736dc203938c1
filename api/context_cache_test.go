package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// TestContextFreshness: block and context answers carry the space's freshness period as
// Cache-Control max-age (CTX-4): 60 s by default, agent_memory.cache_seconds when set, 0 as
// no-cache; a 304 carries it too; a period out of 0..3600 is refused naming the member.
func TestContextFreshness(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := newContextEnv(t, e)
		ctxReq := map[string]any{"task": map[string]any{"object_types": []string{"order"}}}
		check := func(want string) {
			t.Helper()
			b := e.MustDo(http.StatusOK, "GET", blockPath, c.writerKey, nil)
			require.Equal(t, want, b.Header.Get("Cache-Control"))
			nm := e.MustDo(http.StatusNotModified, "GET", blockPath, c.writerKey, nil, "If-None-Match", b.Header.Get("ETag"))
			require.Equal(t, want, nm.Header.Get("Cache-Control"), "a 304 renews the period")
			x := e.MustDo(http.StatusOK, "POST", contextPath, c.bot, ctxReq)
			require.Equal(t, want, x.Header.Get("Cache-Control"))
		}
		check("private, max-age=60")

		features := func(seconds any) map[string]any {
			return map[string]any{"agent_memory": map[string]any{"enabled": true, "cache_seconds": seconds}, "knowledge": map[string]any{"enabled": true}}
		}
		e.PutDocument("features", features(300))
		check("private, max-age=300")
		e.PutDocument("features", features(0))
		check("private, no-cache")

		for _, bad := range []any{-1, 3601} {
			r := e.Do("PUT", "/v1/documents/features", e.AdminKey, features(bad))
			require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
			require.Contains(t, string(r.Body), "agent_memory.cache_seconds")
		}
		check("private, no-cache")
	})
}
