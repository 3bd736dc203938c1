package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/logs/logstest"
)

// repoRoot walks up from the test's directory to the directory holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test directory")
		dir = parent
	}
}

// devServer starts a Temporal dev server from ./bin/temporal (installed by `make temporal`).
func devServer(t *testing.T) *testsuite.DevServer {
	t.Helper()
	path := filepath.Join(repoRoot(t), "bin", "temporal")
	_, err := os.Stat(path)
	require.NoError(t, err, "the Temporal CLI is missing at %s: run `make temporal`", path)
	srv, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{
		ExistingPath: path, LogLevel: "error", Stdout: io.Discard, Stderr: io.Discard,
		ClientOptions: &client.Options{Logger: app.TemporalLogger(slog.New(slog.DiscardHandler))},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// buildBinary builds the real agentmemory binary into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentmemory")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// proc is a running agentmemory process.
type proc struct {
	cmd    *exec.Cmd
	stderr *logstest.Buffer
	done   chan error
}

func start(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), stderr: &logstest.Buffer{}, done: make(chan error, 1)}
	p.cmd.Env = env
	p.cmd.Stderr = p.stderr
	p.cmd.Stdout = io.Discard
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// stop sends SIGTERM and waits (at most a minute) for the process to exit; it requires exit 0.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	p.wait(t)
}

func (p *proc) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.done:
		require.NoError(t, err, "exit after SIGTERM: got %v, want 0; stderr:\n%s", err, p.stderr.String())
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		t.Fatalf("the process did not exit within a minute of SIGTERM; stderr:\n%s", p.stderr.String())
	}
}

// waitHealthy polls url until it answers 200 (the process is starting; bounded to 30 s).
func waitHealthy(t *testing.T, p *proc, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p.cmd.ProcessState != nil {
			t.Fatalf("the process exited; stderr:\n%s", p.stderr.String())
		}
		res, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s not healthy after 30 s; stderr:\n%s", url, p.stderr.String())
}

type client2 struct {
	t    *testing.T
	base string
	http *http.Client
}

func (c client2) do(method, path, key string, body any) (int, map[string]any, error) {
	var rd io.Reader // no body at all when there is none: routes without one refuse "null"
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var m map[string]any
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return res.StatusCode, nil, fmt.Errorf("decode %q: %w", raw, err)
	}
	return res.StatusCode, m, nil
}

func (c client2) must(status int, method, path, key string, body any) map[string]any {
	c.t.Helper()
	got, m, err := c.do(method, path, key, body)
	require.NoError(c.t, err)
	require.Equal(c.t, status, got, "%s %s: got %d, want %d: %v", method, path, got, status, m)
	return m
}

// ack is the last acknowledged (200 stored:true) write of one scope.
type ack struct {
	version int64
	step    string
}

// TestSIGTERMLosesNoAcknowledgedWrite runs the real binary: `agentmemory serve` on SQLite and
// on PostgreSQL with a real Temporal dev server, a burst of working-memory writes from 8
// clients, SIGTERM in the middle of it; the process must drain and exit 0, and after a
// restart every acknowledged write must read back at its version or newer. The worker must
// stop cleanly on SIGTERM too.
func TestSIGTERMLosesNoAcknowledgedWrite(t *testing.T) {
	// The load runs with the shipped pool defaults (issue 11 §2): shippedEnviron passes no
	// AGENTMEMORY_DB_* variable to the processes.
	if testing.Short() {
		t.Skip("builds the binary and starts a Temporal dev server")
	}
	srv := devServer(t)
	bin := buildBinary(t)
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			dir := t.TempDir()
			dbURL := dbtest.URL(t, engine)
			if engine == "sqlite" {
				dbURL = "sqlite://" + filepath.Join(dir, "agentmemory.db")
			}
			ports, err := freePorts(2)
			require.NoError(t, err)
			port, mport := ports[0], ports[1]
			env := append(shippedEnviron(),
				"DATABASE_URL="+dbURL,
				"AGENTMEMORY_SECRET=shutdown-test-secret-0123456789abcdef",
				"AGENTMEMORY_DATA_DIR="+dir,
				"AGENTMEMORY_KEYSTORE="+filepath.Join(dir, "keys.json"),
				"TEMPORAL_ADDRESS="+srv.FrontendHostPort(),
				"AGENTMEMORY_TASK_QUEUE=shutdown-"+engine,
				fmt.Sprintf("AGENTMEMORY_ADDR=127.0.0.1:%d", port),
				"AGENTMEMORY_SHUTDOWN_TIMEOUT=20s",
				"AGENTMEMORY_LOG_FORMAT=json",
			)
			var out bytes.Buffer
			create := exec.Command(bin, "space", "create", "shutdown", "--direct-put")
			create.Env, create.Stdout, create.Stderr = env, &out, &out
			require.NoError(t, create.Run(), "space create: %s", out.String())
			var space struct {
				AdminKey string `json:"admin_key"`
			}
			require.NoError(t, json.Unmarshal(out.Bytes(), &space), "space create printed %q", out.String())

			base := fmt.Sprintf("http://127.0.0.1:%d", port)
			c := client2{t: t, base: base, http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
			serve := start(t, bin, env, "serve")
			waitHealthy(t, serve, base+"/healthz")
			ready := c.must(http.StatusOK, "GET", "/readyz", "", nil)
			require.Equal(t, map[string]any{"database": "ok", "temporal": "ok"}, ready["checks"])

			c.must(http.StatusOK, "PUT", "/v1/documents/features", space.AdminKey, map[string]any{"agent_state": map[string]any{"enabled": true}})
			c.must(http.StatusOK, "PUT", "/v1/documents/object-types", space.AdminKey, map[string]any{"types": []any{map[string]any{
				"type": "shop-bot", "ownership": "agent",
				"fields":      map[string]any{"step": map[string]any{"type": "string"}},
				"agent_state": map[string]any{"scope": "conversation"},
			}}})
			key := c.must(http.StatusCreated, "POST", "/v1/keys", space.AdminKey, map[string]any{
				"kind": "agent", "agent": "shop-bot", "vendor": "acme", "scopes": []string{"agent_state"},
			})["key"].(string)

			// The burst: 8 writers, each on its own conversation, until the server goes away
			// (at most 3,000 writes each). SIGTERM goes out after 200 acknowledged writes.
			const writers = 8
			acks := make([]ack, writers)
			var acked atomic.Int64
			sigterm := make(chan struct{})
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					scope := map[string]any{"kind": "conversation", "id": fmt.Sprintf("conv-%d", w)}
					for i := range 3000 {
						step := fmt.Sprintf("s%d", i)
						status, m, err := c.do("PUT", "/v1/agent-state", key, map[string]any{"scope": scope, "agent": "shop-bot", "body": map[string]any{"step": step}})
						if err != nil || status != http.StatusOK {
							return // the server is shutting down: this write was not acknowledged
						}
						if m["stored"] == true {
							v, _ := m["version"].(json.Number).Int64()
							acks[w] = ack{version: v, step: step}
							if acked.Add(1) == 200 {
								close(sigterm)
							}
						}
					}
				}()
			}
			select {
			case <-sigterm:
			case <-time.After(time.Minute):
				t.Fatalf("200 writes not acknowledged within a minute; stderr:\n%s", serve.stderr.String())
			}
			t0 := time.Now()
			require.NoError(t, serve.cmd.Process.Signal(syscall.SIGTERM))
			serve.wait(t)
			t.Logf("serve exited %s after SIGTERM", time.Since(t0).Round(time.Millisecond))
			wg.Wait()
			logged := serve.stderr.String()
			require.Contains(t, logged, `"msg":"api stopped"`, "the API did not finish draining")
			total := int64(0)
			for _, a := range acks {
				total += a.version
			}
			require.GreaterOrEqual(t, acked.Load(), int64(200))
			t.Logf("%s: %d writes acknowledged before the server went away", engine, acked.Load())

			serve = start(t, bin, env, "serve")
			waitHealthy(t, serve, base+"/healthz")
			c.http = &http.Client{Timeout: 30 * time.Second}
			for w, a := range acks {
				m := c.must(http.StatusOK, "POST", "/v1/agent-state/read", key, map[string]any{"scope": map[string]any{"kind": "conversation", "id": fmt.Sprintf("conv-%d", w)}, "agent": "shop-bot"})
				v, _ := m["version"].(json.Number).Int64()
				require.GreaterOrEqual(t, v, a.version, "conv-%d: read version %d, want at least the acknowledged %d", w, v, a.version)
				if v == a.version {
					require.Equal(t, a.step, m["body"].(map[string]any)["step"], "conv-%d at version %d", w, v)
				}
			}
			serve.stop(t)
			for _, secret := range []string{key, space.AdminKey, "conv-"} {
				require.False(t, strings.Contains(serve.stderr.String()+logged, secret), "the logs carry %q", secret)
			}

			// The worker stops cleanly on SIGTERM; its metrics listener serves meanwhile.
			menv := append(env, fmt.Sprintf("AGENTMEMORY_METRICS_ADDR=127.0.0.1:%d", mport))
			worker := start(t, bin, menv, "worker")
			t0 = time.Now()
			waitHealthy(t, worker, fmt.Sprintf("http://127.0.0.1:%d/healthz", mport))
			t.Logf("worker healthy %s after start", time.Since(t0).Round(time.Millisecond))
			res, err := (&http.Client{Timeout: 30 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", mport))
			require.NoError(t, err)
			text, _ := io.ReadAll(res.Body)
			res.Body.Close()
			require.True(t, strings.Contains(string(text), "agentmemory_outbox_pending_events 0"), "worker /metrics lacks the outbox gauge")
			t0 = time.Now()
			worker.stop(t)
			t.Logf("worker exited %s after SIGTERM", time.Since(t0).Round(time.Millisecond))
			require.Contains(t, worker.stderr.String(), `"msg":"worker stopped"`)
		})
	}
}

// shippedEnviron is this process's environment without any AGENTMEMORY_DB_* variable, so that
// a server started with it runs the pool configuration the service ships with.
func shippedEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTMEMORY_DB_") {
			out = append(out, kv)
		}
	}
	return out
}
