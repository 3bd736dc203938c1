package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// exportWalkthrough is docs/export.md's walk-through block (between its
// walkthrough:export markers), as written.
func exportWalkthrough(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "export.md"))
	require.NoError(t, err)
	text := string(data)
	begin, end := "<!-- walkthrough:export:begin -->\n```sh\n", "```\n<!-- walkthrough:export:end -->"
	i := strings.Index(text, begin)
	require.GreaterOrEqual(t, i, 0, "docs/export.md has no walkthrough:export block")
	j := strings.Index(text[i:], end)
	require.Greater(t, j, 0, "docs/export.md's walkthrough:export block has no end")
	return text[i+len(begin) : i+j]
}

// TestExportWalkthroughOnTheEmbeddedDefault (issue 33 §6): docs/export.md's walk-through runs
// as written against `agentmemory dev` (SQLite, its own Temporal dev server, as make run
// starts it) whose data dir is ./data of the script's directory: the directory sink's
// workflow, started by the reconcile pass, writes the note's part and a manifest, and the
// part holds the note.
func TestExportWalkthroughOnTheEmbeddedDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the Temporal dev server")
	}
	for _, tool := range []string{"bash", "curl", "zcat", "find", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	block := exportWalkthrough(t)
	bin := buildBinary(t)
	root := t.TempDir()
	dataDir := filepath.Join(root, "data")
	ports, err := freePorts(2)
	require.NoError(t, err)
	env := append(shippedEnviron(), "AGENTMEMORY_TEMPORAL_CLI="+filepath.Join(repoRoot(t), "bin", "temporal"), "AGENTMEMORY_DATA_DIR="+dataDir)
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	p := start(t, bin, env, "dev", "--addr", addr, "--data-dir", dataDir, "--temporal-ui-port", fmt.Sprint(ports[1]))
	waitHealthy(t, p, "http://"+addr+"/healthz")
	t.Cleanup(func() { p.stop(t) })
	url := "http://" + addr
	admin := createSpace(t, bin, env, "export-walkthrough")
	key := mintAgentKey(t, url, admin, "agent_state", "agent_memory", "agent_memory:write")

	cmd := exec.Command("bash", "-c", "set -o pipefail\n"+block)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "U="+url, "ADMIN="+admin, "KEY="+key)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "stdout: %s\nstderr: %s", out.String(), errb.String())
	o := out.String()
	for _, want := range []string{
		`"table":"notes"`, `"op":"upsert"`, "/lake/manifest.json",
		"/lake/table=notes/date=", ".jsonl.gz",
		`"Follow next_cursor until empty."`,
	} {
		require.Contains(t, o, want, "the walk-through's output:\n%s\nstderr: %s", o, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(o), "\n")
	var rec struct {
		Table string `json:"table"`
		Op    string `json:"op"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &rec), "the last line is the part's first record: %s", lines[len(lines)-1])
	require.Equal(t, "notes", rec.Table)
}

// mintAgentKey mints an agent key with scopes through POST /v1/keys as admin.
func mintAgentKey(t *testing.T, url, admin string, scopes ...string) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"kind": "agent", "agent": "shop-bot", "vendor": "acme-ai", "scopes": scopes})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url+"/v1/keys", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }() // read below; nothing to flush
	var k struct {
		Key string `json:"key"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&k))
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	return k.Key
}
