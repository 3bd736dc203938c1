package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/replay"
	"github.com/agentmemory/agentmemory/models"
)

var abcdSample = filepath.Join("..", "..", "testdata", "abcd", "abcd_sample.json")

// agentmemory replay against a real loopback HTTP server running the real API, on SQLite and
// PostgreSQL: every ABCD conversation leaves one state, read back as written, the e-mail
// masked; a second run reports the conflicts of the existing states and still succeeds.
func TestReplayCommand(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		srv := httptest.NewServer(e.Server)
		defer srv.Close()
		e.PutDocument("features", replay.Features())
		var types bytes.Buffer
		require.NoError(t, run(context.Background(), []string{"replay", "--types", "abcd-agent"}, noEnv, &types, &types))
		e.PutDocument("object-types", json.RawMessage(types.Bytes()))
		key := e.AgentKey("abcd-agent", "abcd", "agent_state")

		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"replay", "--dataset", abcdSample, "--url", srv.URL, "--key", key}, noEnv, &out, &errOut)
		require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		t.Logf("\n%s", out.String())
		require.Contains(t, out.String(), "states written: 3, writes stored: 72, refused: 0, conflicts: 0")
		require.NotContains(t, out.String(), key)

		// The states as the API serves them: flow, subflow, step reached, order id, masked e-mail.
		got := readState(t, e, key, "abcd-3592")
		require.Equal(t, int64(29), got.Version)
		require.Equal(t, map[string]any{"flow": "product_defect", "subflow": "return_size", "step": "notify-team",
			"turn": float64(29), "order_id": "3348917502", "customer_email": "<email>"}, got.Body)
		require.Equal(t, "timing_4", readState(t, e, key, "abcd-3695").Body["subflow"])

		var rows []models.AgentState
		require.NoError(t, e.DB.NewSelect().Model(&rows).Scan(context.Background()))
		require.Len(t, rows, 3)
		for _, r := range rows {
			require.Equal(t, "agentmemory-replay/1", r.AgentVersion)
			require.NotContains(t, string(r.Body), "@email.com")
		}

		// Again, with the URL and key from the environment: the states exist, so each first
		// write conflicts once, is reported, and the replay takes over from that version.
		env := map[string]string{"AGENTMEMORY_URL": srv.URL, "AGENTMEMORY_KEY": key}
		out.Reset()
		err = run(context.Background(), []string{"replay", "--dataset", abcdSample, "--limit", "2"}, func(k string) string { return env[k] }, &out, &errOut)
		require.NoError(t, err, out.String())
		require.Contains(t, out.String(), "states written: 2, writes stored: 50, refused: 0, conflicts: 2")
		require.Equal(t, int64(29+29), readState(t, e, key, "abcd-3592").Version)
	})
}

// Without a key the replay says what is missing; with a key the API refuses it fails.
func TestReplayCommandErrors(t *testing.T) {
	e := apptest.New(t, "sqlite")
	srv := httptest.NewServer(e.Server)
	defer srv.Close()
	var out bytes.Buffer
	err := run(context.Background(), []string{"replay", "--dataset", abcdSample, "--url", srv.URL}, noEnv, &out, &out)
	require.ErrorContains(t, err, "AGENTMEMORY_KEY")

	// The feature is off in this space: 403 feature_disabled ends the replay with an error.
	key := e.AgentKey("abcd-agent", "abcd", "agent_state")
	err = run(context.Background(), []string{"replay", "--dataset", abcdSample, "--url", srv.URL, "--key", key}, noEnv, &out, &out)
	require.ErrorContains(t, err, "feature_disabled")
	require.NotContains(t, err.Error(), key)

	err = run(context.Background(), []string{"replay", "--dataset", "nope.json", "--key", key}, noEnv, &out, &out)
	require.Error(t, err)
}

func noEnv(string) string { return "" }

type readBack struct {
	Body    map[string]any
	Version int64
}

func readState(t *testing.T, e *apptest.Env, key, id string) readBack {
	t.Helper()
	r := e.MustDo(http.StatusOK, http.MethodPost, "/v1/agent-state/read", key, map[string]any{"scope": map[string]any{"kind": "conversation", "id": id}})
	var rb readBack
	require.NoError(t, json.Unmarshal(r.Body, &rb))
	require.False(t, strings.Contains(string(r.Body), "cminh730@"), "the e-mail is served in clear")
	return rb
}
