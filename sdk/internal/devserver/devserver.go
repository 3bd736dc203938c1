// Package devserver runs the real agentmemory binary (`agentmemory dev --fake-model`) for the
// SDK module's tests: one process per test binary on a port and data directory of its own, a
// space with agent memory and knowledge on, keys minted through the API, knowledge bases made
// ready, and a counting reverse proxy to count the requests an SDK sends (CTX-4). Standard
// library only. The binary is $AGENTMEMORY_BIN or built from the repository; the Temporal CLI
// is $AGENTMEMORY_TEMPORAL_CLI or the repository's bin/temporal (tests skip without it).
package devserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Server is a running `agentmemory dev`. URL is its base URL; Admin a person key with role
// admin of the space Space.
type Server struct {
	URL   string
	Admin string
	Space string
	cmd   *exec.Cmd
	bin   string
	dir   string
	log   string
}

var (
	once    sync.Once
	shared  *Server
	failure string
	skip    string
)

// Main runs a test binary's tests and stops the shared server afterwards: call it from
// TestMain as os.Exit(devserver.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.stop()
	}
	return code
}

// Shared returns the test binary's server, starting it on first use. It skips the test under
// -short or without a Temporal CLI, and fails it when the server cannot start.
func Shared(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the real binary and a Temporal dev server")
	}
	once.Do(func() { shared, skip, failure = start() })
	if skip != "" {
		SkipCapability(t, "%s", skip)
	}
	if failure != "" {
		t.Fatal(failure)
	}
	return shared
}

// repoRoot is the repository's root: two directories above this file's sdk/internal.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// start builds (or finds) the binary, starts it and creates the space; it returns a skip or
// failure message instead of the server when it cannot.
func start() (*Server, string, string) {
	root := repoRoot()
	cli := os.Getenv("AGENTMEMORY_TEMPORAL_CLI")
	if cli == "" {
		cli = filepath.Join(root, "bin", "temporal")
	}
	if _, err := os.Stat(cli); err != nil {
		return nil, fmt.Sprintf("no Temporal CLI at %s (make temporal, or set AGENTMEMORY_TEMPORAL_CLI)", cli), ""
	}
	dir, err := os.MkdirTemp("", "agentmemory-sdk-")
	if err != nil {
		return nil, "", err.Error()
	}
	bin, err := binary(root, dir)
	if err != nil {
		return nil, "", err.Error()
	}
	s := &Server{dir: dir, bin: bin, log: filepath.Join(dir, "dev.log"), Space: "sdk"}
	if err := s.run(bin, cli); err != nil {
		return nil, "", err.Error()
	}
	if err := s.createSpace(bin); err != nil {
		s.stop()
		return nil, "", err.Error()
	}
	return s, "", ""
}

// binary returns $AGENTMEMORY_BIN or builds cmd/agentmemory into dir.
func binary(root, dir string) (string, error) {
	if bin := os.Getenv("AGENTMEMORY_BIN"); bin != "" {
		return bin, nil
	}
	bin := filepath.Join(dir, "agentmemory")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/agentmemory")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// run starts `agentmemory dev` on a free port and waits (90 s at most) for /healthz.
func (s *Server) run(bin, cli string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return err
	}
	logFile, err := os.Create(s.log)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }() // the child holds its own descriptor
	cmd := exec.Command(bin, "dev", "--addr", addr, "--data-dir", s.dir, "--temporal-ui-port", "0", "--fake-model")
	cmd.Env = append(os.Environ(), "AGENTMEMORY_TEMPORAL_CLI="+cli, "OLLAMA_HOST=http://127.0.0.1:1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start agentmemory dev: %w", err)
	}
	s.cmd, s.URL = cmd, "http://"+addr
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(s.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	s.stop()
	return fmt.Errorf("agentmemory dev did not serve /healthz; see %s", s.log)
}

// createSpace creates the space (direct PUT on) and turns agent memory and knowledge on.
func (s *Server) createSpace(bin string) error {
	out, err := exec.Command(bin, "space", "create", s.Space, "--direct-put", "--data-dir", s.dir).Output()
	if err != nil {
		return fmt.Errorf("space create: %w", err)
	}
	var space struct {
		AdminKey string `json:"admin_key"`
	}
	if err := json.Unmarshal(out, &space); err != nil {
		return fmt.Errorf("space create: %w", err)
	}
	s.Admin = space.AdminKey
	return s.Features(60)
}

// Features writes the space's features document: agent memory on for agents' writes,
// knowledge on, and agent_memory.cache_seconds (the block and context freshness, CTX-4).
func (s *Server) Features(cacheSeconds int) error {
	doc := map[string]any{
		"agent_state":  map[string]any{"enabled": true},
		"agent_memory": map[string]any{"enabled": true, "writes": "agents", "max_notes_per_source": 500, "cache_seconds": cacheSeconds},
		"knowledge":    map[string]any{"enabled": true},
	}
	return s.Do("PUT", "/v1/documents/features", s.Admin, doc, nil)
}

func (s *Server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM) // a process already gone is what we want
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }() // its exit status after SIGTERM says nothing
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill() // best effort: the test binary exits next
		<-done
	}
	s.cmd = nil
	_ = os.RemoveAll(s.dir) // a temporary directory: leaving it behind harms nothing
}

// Do sends one JSON request with key (body nil: none) and decodes a 2xx answer into out
// (nil: ignored). Any other status is an error holding the answer.
func (s *Server) Do(method, path, key string, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(buf.String()))
	}
	if out != nil {
		return json.Unmarshal(buf.Bytes(), out)
	}
	return nil
}

// MustDo is Do failing t on an error.
func (s *Server) MustDo(t testing.TB, method, path, key string, body, out any) {
	t.Helper()
	if err := s.Do(method, path, key, body, out); err != nil {
		t.Fatal(err)
	}
}

// AllScopes are an agent key's scopes for every SDK call: state, notes (read and write),
// knowledge and the context call.
var AllScopes = []string{"agent_state", "agent_memory", "agent_memory:write", "knowledge:read", "context"}

// unique numbers the agents and bases a test binary creates, so that a test run again on the
// same server (go test -count=N) starts from no notes and no base of that name.
var unique atomic.Int64

// Key mints an agent key for a new agent named agent plus a number unique to this call
// (vendor "sdk-vendor"), with scopes: each key writes and reads notes of its own.
func (s *Server) Key(t testing.TB, agent string, scopes ...string) string {
	t.Helper()
	agent = fmt.Sprintf("%s-%d", agent, unique.Add(1))
	var out struct {
		Key string `json:"key"`
	}
	s.MustDo(t, "POST", "/v1/keys", s.Admin, map[string]any{"kind": "agent", "agent": agent, "vendor": "sdk-vendor", "scopes": scopes}, &out)
	return out.Key
}

// Document is a knowledge document as POST /v1/knowledge/{kb}/documents takes it.
type Document struct {
	SourceURI string `json:"source_uri"`
	Title     string `json:"title"`
	Version   string `json:"version"`
	Text      string `json:"text"`
	Format    string `json:"format"`
}

// KnowledgeBase creates a base named name plus a unique number, readable by the whole
// space, submits docs and waits (60 s at most) until each is ready; it returns the base's id.
func (s *Server) KnowledgeBase(t testing.TB, name string, docs ...Document) string {
	t.Helper()
	id, _ := s.KnowledgeBaseIn(t, s.Admin, name, docs...)
	return id
}

// KnowledgeBaseIn is KnowledgeBase in the space of admin (a key with role admin, of a space
// whose knowledge is on); it returns the base's id and its name (name plus the number).
func (s *Server) KnowledgeBaseIn(t testing.TB, admin, name string, docs ...Document) (id, baseName string) {
	t.Helper()
	name = fmt.Sprintf("%s-%d", name, unique.Add(1))
	var base struct {
		ID string `json:"id"`
	}
	settings := map[string]any{"embedding_model": "sdk-embed", "top_k": 3, "max_tokens": 600, "readers": map[string]any{"space": true}}
	s.MustDo(t, "POST", "/v1/knowledge", admin, map[string]any{"name": name, "settings": settings}, &base)
	for _, d := range docs {
		var sub struct {
			DocumentID string `json:"document_id"`
		}
		s.MustDo(t, "POST", "/v1/knowledge/"+base.ID+"/documents", admin, d, &sub)
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			var doc struct {
				Status string `json:"status"`
			}
			s.MustDo(t, "GET", "/v1/knowledge/"+base.ID+"/documents/"+sub.DocumentID, admin, nil, &doc)
			if doc.Status == "ready" {
				break
			}
			if doc.Status != "pending" || time.Now().After(deadline) {
				t.Fatalf("knowledge document %s: status %q, want ready", d.SourceURI, doc.Status)
			}
		}
	}
	return base.ID, name
}

// Note is a note as GET /v1/agent-memory/notes/{id} answers it (the members tests read).
type Note struct {
	ID    string   `json:"id"`
	Kind  string   `json:"kind"`
	Title string   `json:"title"`
	Body  string   `json:"body"`
	Tags  []string `json:"tags"`
}

// ReadNote reads note id with key (an agent key that may read it).
func (s *Server) ReadNote(t testing.TB, key, id string) Note {
	t.Helper()
	var n Note
	s.MustDo(t, "GET", "/v1/agent-memory/notes/"+id, key, nil, &n)
	return n
}

// MCPTool is one tool of the MCP server's tools/list as listed.
type MCPTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// MCPTools lists the tools the MCP server offers key (POST /mcp tools/list), without the SDK.
func (s *Server) MCPTools(t testing.TB, key string) []MCPTool {
	t.Helper()
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	req, err := http.NewRequest("POST", s.URL+"/mcp", bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	for _, line := range strings.Split(buf.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "data:"); ok {
			data = []byte(rest)
		}
	}
	var out struct {
		Result struct {
			Tools []MCPTool `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("tools/list: %d %s: %v", resp.StatusCode, buf.String(), err)
	}
	return out.Result.Tools
}

// skipLogEnv names the file where a capability skip is recorded, one "test\treason" line each
// (the main module's internal/skips writes the same lines; `make test` sums them up at its end).
const skipLogEnv = "AGENTMEMORY_SKIP_LOG"

// SkipCapability records the skip of t (a tool or a capability is missing here, not -short)
// in the skip log when AGENTMEMORY_SKIP_LOG names one, then skips t. A log that cannot be
// written fails the test: an unrecorded skip would hide what the run did not test.
func SkipCapability(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if path := os.Getenv(skipLogEnv); path != "" {
		clean := strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			_, err = f.WriteString(clean.Replace(t.Name()) + "\t" + clean.Replace(strings.TrimSpace(reason)) + "\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			t.Fatalf("record the skip (%s): %v", reason, err)
		}
	}
	t.Skip(reason)
}

// SpaceRef is a space of the server: its id and an admin key (every person role).
type SpaceRef struct{ ID, Admin string }

// NewSpace creates another space named name (direct PUT on) with `agentmemory space create`.
func (s *Server) NewSpace(t testing.TB, name string) SpaceRef {
	t.Helper()
	out, err := exec.Command(s.bin, "space", "create", name, "--direct-put", "--data-dir", s.dir).Output()
	if err != nil {
		t.Fatalf("space create: %v", err)
	}
	var sp struct {
		SpaceID  string `json:"space_id"`
		AdminKey string `json:"admin_key"`
	}
	if err := json.Unmarshal(out, &sp); err != nil {
		t.Fatalf("space create printed %q: %v", out, err)
	}
	return SpaceRef{ID: sp.SpaceID, Admin: sp.AdminKey}
}

// SharedSpace is the shared space (Space) as a SpaceRef.
func (s *Server) SharedSpace(t testing.TB) SpaceRef {
	t.Helper()
	var self struct {
		SpaceID string `json:"space_id"`
	}
	s.MustDo(t, "GET", "/v1/keys/self", s.Admin, nil, &self)
	return SpaceRef{ID: self.SpaceID, Admin: s.Admin}
}

// OpenBridge opens a bridge from space from to space to (docs/boards.md "Bridges"): on each
// side a security person proposes it (POST /v1/bridges) and a second one approves the change;
// agents of to read the boards listed ({"type", "ids"}). It returns the bridge's id.
func (s *Server) OpenBridge(t testing.TB, from, to SpaceRef, agents []string, boards []map[string]any) string {
	t.Helper()
	return s.OpenBridgeTerms(t, from, to, map[string]any{"agents": agents, "boards": boards})
}

// OpenBridgeTerms is OpenBridge with the bridge's terms other than its id, from and to
// (agents, and boards or knowledge_bases or both, as POST /v1/bridges takes them).
func (s *Server) OpenBridgeTerms(t testing.TB, from, to SpaceRef, extra map[string]any) string {
	t.Helper()
	terms := map[string]any{"from": from.ID, "to": to.ID}
	for k, v := range extra {
		terms[k] = v
	}
	for _, side := range []SpaceRef{from, to} {
		var keys [2]string
		for i := range keys {
			var out struct {
				Key string `json:"key"`
			}
			name := fmt.Sprintf("security-%d", unique.Add(1))
			s.MustDo(t, "POST", "/v1/keys", side.Admin, map[string]any{"kind": "person", "name": name, "roles": []string{"security"}}, &out)
			keys[i] = out.Key
		}
		var prop struct {
			Bridge   struct{ ID string } `json:"bridge"`
			ChangeID string              `json:"change_id"`
		}
		s.MustDo(t, "POST", "/v1/bridges", keys[0], terms, &prop)
		s.MustDo(t, "POST", "/v1/documents/bridges/changes/"+prop.ChangeID+"/approve", keys[1], nil, nil)
		terms["id"] = prop.Bridge.ID
	}
	return terms["id"].(string)
}
