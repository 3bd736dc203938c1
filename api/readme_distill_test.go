package api_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/skips"
)

// readmeBlock returns the shell block of README.md between <!-- name:begin --> and
// <!-- name:end -->, without its fence.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	require.NoError(t, err)
	text := string(data)
	begin, end := "<!-- "+name+":begin -->\n```sh\n", "```\n<!-- "+name+":end -->"
	i := strings.Index(text, begin)
	require.GreaterOrEqual(t, i, 0, "README.md has no %s block", name)
	j := strings.Index(text[i:], end)
	require.Greater(t, j, 0, "README.md's %s block has no end", name)
	return text[i+len(begin) : i+j]
}

// distillRig serves the real API with a stand-in for Temporal that accepts every start and
// never drafts (as a service without a model: the proposal stays drafting). Approvals go to a
// second server over the same database without workflows, which decides directly, as the
// distillation workflow would. onPoll runs before each proposal read; blocks counts the
// block reads.
type distillRig struct {
	url    string
	blocks atomic.Int32
	onPoll func(id string)
}

func newDistillRig(t *testing.T, e *apptest.Env) *distillRig {
	rig := &distillRig{onPoll: func(string) {}}
	direct := e.Deps
	direct.Workflows = nil
	decider := api.NewServer(direct)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const proposals = "/v1/agent-memory/proposals/"
		switch {
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, proposals) && strings.HasSuffix(r.URL.Path, "/approve"):
			decider.ServeHTTP(w, r)
			return
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, proposals):
			rig.onPoll(strings.TrimPrefix(r.URL.Path, proposals))
		case r.URL.Path == "/v1/agent-memory/block":
			rig.blocks.Add(1)
		}
		e.Server.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rig.url = srv.URL
	return rig
}

// runWalkthrough runs the README block with bash as a user's shell would (no set -e), with U,
// ADMIN and KEY set and sleep a no-op (the loop's minute is not waited). It returns stdout,
// stderr and the value TAG has at the end.
func runWalkthrough(t *testing.T, block, url, admin, key string) (stdout, stderr, tag string) {
	t.Helper()
	script := "sleep() { :; }\n" + block + "\necho \"TAG=[$TAG]\"\n"
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "U="+url, "ADMIN="+admin, "KEY="+key)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "the block ends with the TAG echo; stderr: %s", errb.String())
	o := out.String()
	i := strings.LastIndex(o, "TAG=[")
	require.GreaterOrEqual(t, i, 0, o)
	return o[:i], errb.String(), strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(o[i:]), "TAG=["), "]")
}

// The README's distillation walk-through (issue 27): without a model the proposal stays
// drafting, and the walk-through then stops loudly at the approval (the refusal on stderr, TAG
// empty, the block never asked for) instead of storing an error text in TAG and calling the
// block with it. With a drafted proposal it approves and reads the block by the note's tag.
func TestReadmeDistillWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		skips.Capability(t, "needs bash")
	}
	block := readmeBlock(t, "walkthrough:distill")
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Run("no model", func(t *testing.T) {
				e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = anyWorkflows{} })
				e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
				key := e.AgentKey("shop-bot", "acme-ai", "agent_memory")
				rig := newDistillRig(t, e)
				out, errs, tag := runWalkthrough(t, block, rig.url, e.AdminKey, key)
				require.Contains(t, out, `"status":"drafting"`)
				require.Equal(t, 30, strings.Count(out, `"status":"drafting"`), "the loop polls 30 times, then gives up")
				require.Contains(t, errs, `no "tags" in the answer: {"error":{"code":"`, "the refused approval is shown")
				require.Empty(t, tag, "TAG holds no error text")
				require.Zero(t, rig.blocks.Load(), "the block was asked for after a failed approval")
			})
			t.Run("drafted", func(t *testing.T) {
				e := apptest.New(t, engine, func(d *api.Deps) { d.Workflows = anyWorkflows{} })
				e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true}})
				key := e.AgentKey("shop-bot", "acme-ai", "agent_memory")
				rig := newDistillRig(t, e)
				var once sync.Once
				rig.onPoll = func(id string) { // the model answers before the first poll
					once.Do(func() {
						require.NoError(t, e.Deps.Proposals.MarkPending(context.Background(), id, notes.ProposedNote{
							Kind: "procedure", Title: "Returns start with the purchase", Body: "Validate the purchase before starting a return.",
							Tags: []string{"returns", "sizes"}, Visibility: "source"}))
					})
				}
				out, errs, tag := runWalkthrough(t, block, rig.url, e.AdminKey, key)
				require.Empty(t, errs)
				require.Equal(t, "returns", tag)
				require.Contains(t, out, `"status":"pending","reason":null,"last_error":null`)
				require.Equal(t, int32(1), rig.blocks.Load())
				require.Contains(t, out, "Returns start with the purchase", "the block holds the approved note")
			})
		})
	}
}
