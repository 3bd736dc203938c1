package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/logs/logstest"
	"github.com/agentmemory/agentmemory/internal/skips"
)

// repoTemporal returns the Temporal CLI installed by `make temporal`.
func repoTemporal(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "bin", "temporal"))
	require.NoError(t, err)
	if _, err := os.Stat(p); err != nil {
		skips.Capability(t, "the Temporal CLI is not installed: run make temporal")
	}
	return p
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestSpaceCreatePrintsOneJSONObject(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := run(context.Background(), []string{"space", "create", "acme", "--data-dir", dir}, env(nil), &out, io.Discard)
	require.NoError(t, err)
	var got map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), "stdout: %s", out.String())
	require.Len(t, got, 2)
	require.True(t, strings.HasPrefix(got["space_id"], "sp_"), "space_id %q", got["space_id"])
	require.True(t, strings.HasPrefix(got["admin_key"], "am_"), "admin_key must start with am_")
}

// TestDevServesAndRestartsOnItsDataDir starts `agentmemory dev`, writes a state through the
// API, stops it, starts it again on the same data dir and reads the state back.
func TestDevServesAndRestartsOnItsDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the Temporal dev server")
	}
	cli := repoTemporal(t)
	dir := t.TempDir()
	port, err := freePort()
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// dev keeps the file store: a shared key store URL (here one nothing listens on) is ignored.
	getenv := env(map[string]string{"AGENTMEMORY_TEMPORAL_CLI": cli,
		"AGENTMEMORY_KEYSTORE_URL": "postgres://nobody@127.0.0.1:1/keys", "AGENTMEMORY_KEK": "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80="})

	startDev := func() (stop func(), out *logstest.Buffer) {
		ctx, cancel := context.WithCancel(context.Background())
		out = &logstest.Buffer{}
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"dev", "--addr", addr, "--data-dir", dir}, getenv, out, io.Discard) }()
		require.Eventually(t, func() bool {
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 60*time.Second, 100*time.Millisecond, "dev did not serve /healthz; output: %s", out)
		return func() {
			cancel()
			require.NoError(t, <-done)
		}, out
	}

	stop, out := startDev()
	require.Contains(t, out.String(), "space create")
	require.Contains(t, out.String(), "web UI at http://")
	require.Contains(t, out.String(), "subject keys stay in the data dir")
	require.Contains(t, out.String(), "distillations ask the model llama3.2 at http://127.0.0.1:11434")

	var created bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"space", "create", "acme", "--direct-put", "--data-dir", dir}, getenv, &created, io.Discard))
	var sp map[string]string
	require.NoError(t, json.Unmarshal(created.Bytes(), &sp))
	admin := sp["admin_key"]

	call := func(method, path, key, body string) (int, map[string]any) {
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		return resp.StatusCode, m
	}
	code, _ := call("PUT", "/v1/documents/features", admin, `{"agent_state":{"enabled":true}}`)
	require.Equal(t, 200, code)
	code, _ = call("PUT", "/v1/documents/object-types", admin, `{"types":[{"type":"bot","ownership":"agent","fields":{"step":{"type":"string"}},"agent_state":{"scope":"conversation"}}]}`)
	require.Equal(t, 200, code)
	code, key := call("POST", "/v1/keys", admin, `{"kind":"agent","agent":"bot","vendor":"v","scopes":["agent_state"]}`)
	require.Equal(t, 201, code)
	agentKey := key["key"].(string)
	code, res := call("PUT", "/v1/agent-state", agentKey, `{"scope":{"kind":"conversation","id":"c-1"},"body":{"step":"sizes"}}`)
	require.Equal(t, 200, code)
	require.Equal(t, true, res["stored"])
	stop()

	stop, out = startDev()
	defer stop()
	require.NotContains(t, out.String(), "create a space", "the hint is printed although a space exists")
	code, res = call("POST", "/v1/agent-state/read", agentKey, `{"scope":{"kind":"conversation","id":"c-1"}}`)
	require.Equal(t, 200, code)
	require.Equal(t, float64(1), res["version"])
	require.Equal(t, map[string]any{"step": "sizes"}, res["body"])
}

// An operator recovers a space whose admin keys were all revoked by minting a new admin key
// from the command line.
func TestSpaceAdminKeyRecoversASpace(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"space", "create", "acme", "--data-dir", dir}, env(nil), &out, io.Discard))
	var first map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &first))

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"space", "admin-key", first["space_id"], "--data-dir", dir}, env(nil), &out, io.Discard))
	var second map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &second))
	require.Equal(t, first["space_id"], second["space_id"])
	require.NotEqual(t, first["admin_key"], second["admin_key"])
	require.True(t, strings.HasPrefix(second["admin_key"], "am_"))

	err := run(context.Background(), []string{"space", "admin-key", "sp_unknown", "--data-dir", dir}, env(nil), io.Discard, io.Discard)
	require.ErrorContains(t, err, "no space")
}

// `dev --fake-model` drafts a distillation with the built-in fake model: the proposal reaches
// pending with a note labelled as fake; the start message says so, the web UI port is the one
// asked, and shutdown logs that the worker stopped.
func TestDevFakeModelDistilsToPending(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the Temporal dev server")
	}
	cli := repoTemporal(t)
	dir := t.TempDir()
	ports, err := freePorts(2)
	require.NoError(t, err)
	port, uiPort := ports[0], ports[1]
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// OLLAMA_HOST names a server nothing listens on: the fake model replaces it.
	getenv := env(map[string]string{"AGENTMEMORY_TEMPORAL_CLI": cli, "OLLAMA_HOST": "http://127.0.0.1:1"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, logs := &logstest.Buffer{}, &logstest.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"dev", "--fake-model", "--addr", addr, "--data-dir", dir, "--temporal-ui-port", fmt.Sprint(uiPort)}, getenv, out, logs)
	}()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "dev did not serve /healthz; output: %s", out)
	require.Contains(t, out.String(), "FAKE MODEL at http://127.0.0.1:")
	require.Contains(t, out.String(), fmt.Sprintf("web UI at http://127.0.0.1:%d\n", uiPort))
	require.Contains(t, logs.String(), "fake model on")
	require.NotContains(t, out.String(), "distillations ask the model")

	var created bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"space", "create", "acme", "--direct-put", "--data-dir", dir}, getenv, &created, io.Discard))
	var sp map[string]string
	require.NoError(t, json.Unmarshal(created.Bytes(), &sp))
	call := func(method, path, body string) (int, map[string]any) {
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+sp["admin_key"])
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		return resp.StatusCode, m
	}
	code, res := call("PUT", "/v1/documents/features", `{"agent_memory":{"enabled":true},"knowledge":{"enabled":true}}`)
	require.Equal(t, 200, code, "%v", res)
	// A knowledge base: its embedder is the fake model, which a plain restart does not have.
	code, res = call("POST", "/v1/knowledge", `{"name":"handbook"}`)
	require.Equal(t, 201, code, "%v", res)
	code, res = call("POST", "/v1/keys", `{"kind":"agent","agent":"shop-bot","vendor":"v","scopes":["agent_memory"]}`)
	require.Equal(t, 201, code, "%v", res)
	code, res = call("POST", "/v1/turns", `{"turns":[{"conversation_id":"c-7","speaker":"customer","text":"My jeans came in the wrong size"},{"conversation_id":"c-7","speaker":"agent","text":"I will start a return"}]}`)
	require.Less(t, code, 300, "%v", res)
	code, res = call("POST", "/v1/agent-memory/distill", `{"conversation_id":"c-7","source_id":"shop-bot"}`)
	require.Less(t, code, 300, "%v", res)
	prop, _ := res["proposal_id"].(string)
	require.NotEmpty(t, prop, "%v", res)
	var got map[string]any
	require.Eventually(t, func() bool {
		_, got = call("GET", "/v1/agent-memory/proposals/"+prop, "")
		return got["status"] == "pending"
	}, 60*time.Second, 200*time.Millisecond, "proposal did not reach pending: %v", got)
	note, _ := got["note"].(map[string]any)
	require.Contains(t, note["title"], "[fake model]")
	require.Contains(t, note["body"], "fake model")

	cancel()
	require.NoError(t, <-done)
	require.Contains(t, logs.String(), "worker stopped")
	require.NotContains(t, logs.String(), "embedder does not answer", "the fake model answered the embedder")

	// A plain restart (issue 27): the start log warns that the base's embedder does not answer,
	// and no "create a space" hint is printed since a space exists.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	out, logs = &logstest.Buffer{}, &logstest.Buffer{}
	go func() {
		done <- run(ctx, []string{"dev", "--addr", addr, "--data-dir", dir, "--temporal-ui-port", fmt.Sprint(uiPort)}, getenv, out, logs)
	}()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "embedder does not answer") },
		60*time.Second, 100*time.Millisecond, "no warning about the unreachable embedder; log: %s", logs)
	require.Contains(t, logs.String(), `--fake-model again`)
	require.NotContains(t, out.String(), "create a space")
	cancel()
	require.NoError(t, <-done)
}

// healthcheck is listed in the root command's help.
func TestHelpListsHealthcheck(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"--help"}, env(nil), &out, io.Discard))
	require.Contains(t, out.String(), "healthcheck")
	require.Contains(t, out.String(), "dev")
}

// TestDevRefusesABusyAddressFirst: `agentmemory dev` binds its API address before it opens
// the data dir or starts the Temporal dev server, so a busy address fails at once, named in
// the error, and nothing was created in the data dir.
func TestDevRefusesABusyAddressFirst(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	addr := busy.Addr().String()
	dir := filepath.Join(t.TempDir(), "data")
	err = run(context.Background(), []string{"dev", "--addr", addr, "--data-dir", dir},
		env(map[string]string{"AGENTMEMORY_TEMPORAL_CLI": "/nonexistent/temporal"}), io.Discard, io.Discard)
	require.Error(t, err)
	require.Contains(t, err.Error(), "the API address "+addr)
	_, statErr := os.Stat(dir)
	require.True(t, os.IsNotExist(statErr), "the data dir was created: %v", statErr)
}
