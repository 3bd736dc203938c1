package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

const guidelinesPath = "../../testdata/abcd/guidelines.json"

// The 55 ABCD procedures, rendered as notes: within the limits, stable, never truncated.
func TestGuidelineNotes(t *testing.T) {
	data, err := os.ReadFile(guidelinesPath)
	require.NoError(t, err)
	list, subflows, err := guidelineNotes(data)
	require.NoError(t, err)
	require.Equal(t, 55, subflows)
	again, _, _ := guidelineNotes(data)
	require.Equal(t, list, again, "rendering is deterministic")
	for _, n := range list {
		require.LessOrEqual(t, utf8.RuneCountInString(n.Title), 120, n.Title)
		require.LessOrEqual(t, utf8.RuneCountInString(n.Body), 2000, n.Title)
		require.Len(t, n.Tags, 2)
	}
	// Splitting keeps every character: the parts of a long body join back to the whole.
	steps := []string{strings.Repeat("a", 1500), strings.Repeat("b", 900), strings.Repeat("c", 10)}
	parts := splitSteps("intro\n", steps)
	require.Equal(t, []string{"intro\n" + steps[0], steps[1] + "\n" + steps[2]}, parts)
}

// The guidelines import through the real API on both databases: all 55 subflows pass the
// personal-data gate and become procedure notes; a rerun writes nothing twice.
func TestNotesImportGuidelines(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
		e.AgentKey("support-bot", "abcd", "agent_memory")
		key := e.PersonKey("loader", "integration")
		srv := httptest.NewServer(e.Server)
		defer srv.Close()
		opt := importOptions{path: guidelinesPath, url: srv.URL, key: key, sourceID: "support-bot", visibility: "vendor"}
		sum, err := importGuidelines(t.Context(), srv.Client(), opt)
		require.NoError(t, err)
		require.Equal(t, 55, sum.Subflows)
		require.GreaterOrEqual(t, sum.Notes, 55)
		require.Zero(t, sum.Replayed)
		t.Logf("%d subflows -> %d notes (%d split)", sum.Subflows, sum.Notes, sum.Split)

		r := e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/notes?kind=procedure&limit=500", key, nil)
		require.Equal(t, sum.Notes, bytes.Count(r.Body, []byte(`"kind":"procedure"`)))
		require.Contains(t, string(r.Body), `"tags":["product-defect","initiate-refund"]`)

		again, err := importGuidelines(t.Context(), srv.Client(), opt)
		require.NoError(t, err)
		require.Equal(t, sum.Notes, again.Replayed, "a rerun replays every Idempotency-Key")
		require.Equal(t, sum.IDs, again.IDs)

		// An agent key stops at its hourly limit with a clear error.
		bot := e.AgentKey("other-bot", "abcd", "agent_memory", "agent_memory:write")
		_, err = importGuidelines(t.Context(), srv.Client(), importOptions{path: guidelinesPath, url: srv.URL, key: bot, visibility: "source"})
		require.ErrorContains(t, err, "rate limited")
	})
}
