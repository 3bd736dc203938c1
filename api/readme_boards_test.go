package api_test

import (
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// The README's boards walk-through runs as written against the real API: the grant holds
// (same vendor gets nothing), a stale write is merged by its fields' rules and says so, a
// reject field refuses, a lease keeps others out, and the metadata lists the writers.
func TestReadmeBoardsWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	block := readmeBlock(t, "walkthrough:boards")
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		srv := httptest.NewServer(e.Server)
		defer srv.Close()
		out, errs, _ := runWalkthrough(t, block, srv.URL, e.AdminKey, "")
		require.Empty(t, errs)
		for _, want := range []string{
			`"applied":true`,
			`"code":"board_grant_required"`,
			`{"stored":true,"version":1,"settled":[],"reason":null}`,
			`{"stored":true,"version":2,"settled":[{"field":"hits","rule":"sum"},{"field":"severity","rule":"cel"},{"field":"tags","rule":"union"}],"reason":null}`,
			`"body":{"hits":2,"severity":3,"tags":["disk","db-1"],"title":"disk full on db-1"},"version":2`,
			`"code":"board_conflict"`, `"settled":[{"field":"title","rule":"reject","rejected":true}]`,
			`"token":1`, `"code":"lease_held"`, `"writers":["scout","triage"]`,
		} {
			require.True(t, strings.Contains(out, want), "the walk-through's output lacks %s:\n%s", want, out)
		}
	})
}
