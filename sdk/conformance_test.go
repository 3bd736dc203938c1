package sdk_test

// The conformance suite (sdk/conformance/README.md) run through the Go SDK against the real
// binary: standard library and the SDK only, so the SDK stays a module of its own.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/sdk"
	"github.com/agentmemory/agentmemory/sdk/internal/devserver"
	"github.com/agentmemory/agentmemory/sdk/tools"
)

// conformanceCapabilities are the optional capabilities of the suite the Go SDK has: the
// model tool kit (package tools).
var conformanceCapabilities = map[string]bool{"tools": true}

type confSetup struct {
	SpaceName string `json:"space_name"`
	Documents []struct {
		Name string          `json:"name"`
		Body json.RawMessage `json:"body"`
	} `json:"documents"`
	AgentKey  map[string]any `json:"agent_key"`
	Knowledge []struct {
		Name      string            `json:"name"`
		Settings  json.RawMessage   `json:"settings"`
		Documents []json.RawMessage `json:"documents"`
	} `json:"knowledge"`
}

type confClientSpec struct {
	Queue  string   `json:"queue"`
	Replay bool     `json:"replay"`
	Scopes []string `json:"scopes"`
}

type confCase struct {
	Name        string                    `json:"name"`
	Description string                    `json:"description"`
	Requires    []string                  `json:"requires"`
	Clients     map[string]confClientSpec `json:"clients"`
	Steps       []map[string]any          `json:"steps"`
}

// devServer is `agentmemory dev` on a data dir and port of its own.
type devServer struct {
	t         *testing.T
	bin, dir  string
	addr, url string
	env       []string
	cmd       *exec.Cmd
	log       *os.File
	admin     string
	bases     map[string]string // knowledge base name (setup.json) -> id
}

func (s *devServer) start() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command(s.bin, "dev", "--addr", s.addr, "--data-dir", s.dir, "--temporal-ui-port", "0", "--fake-model")
	cmd.Env, cmd.Stdout, cmd.Stderr = s.env, s.log, s.log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start agentmemory dev: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.stop()
	s.t.Fatalf("agentmemory dev did not serve /healthz; see %s", s.log.Name())
}

func (s *devServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// call is one JSON request of the setup (without the SDK); it fails the test on non-2xx.
func (s *devServer) call(method, path, key string, body []byte, out any) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode >= 300 {
		s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, buf.String())
	}
	if out != nil {
		if err := json.Unmarshal(buf.Bytes(), out); err != nil {
			s.t.Fatal(err)
		}
	}
}

// setupKnowledge creates setup.json's knowledge bases, submits their documents and waits
// (60 s at most) until each is ready; it returns the bases' ids by name.
func (s *devServer) setupKnowledge(setup confSetup) map[string]string {
	s.t.Helper()
	ids := map[string]string{}
	for _, kb := range setup.Knowledge {
		body, _ := json.Marshal(map[string]any{"name": kb.Name, "settings": kb.Settings})
		var base struct {
			ID string `json:"id"`
		}
		s.call("POST", "/v1/knowledge", s.admin, body, &base)
		ids[kb.Name] = base.ID
		for _, d := range kb.Documents {
			var sub struct {
				DocumentID string `json:"document_id"`
			}
			s.call("POST", "/v1/knowledge/"+base.ID+"/documents", s.admin, d, &sub)
			deadline := time.Now().Add(60 * time.Second)
			for {
				var doc struct {
					Status string `json:"status"`
				}
				s.call("GET", "/v1/knowledge/"+base.ID+"/documents/"+sub.DocumentID, s.admin, nil, &doc)
				if doc.Status == "ready" {
					break
				}
				if doc.Status != "pending" || time.Now().After(deadline) {
					s.t.Fatalf("knowledge document of %s: status %q, want ready", kb.Name, doc.Status)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	return ids
}

func (s *devServer) mintKey(spec map[string]any) string {
	body, _ := json.Marshal(spec)
	var out struct {
		Key string `json:"key"`
	}
	s.call("POST", "/v1/keys", s.admin, body, &out)
	return out.Key
}

// conformanceBinary returns $AGENTMEMORY_BIN or builds the binary from the repository root.
func conformanceBinary(t *testing.T, root string) string {
	if bin := os.Getenv("AGENTMEMORY_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "agentmemory")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/agentmemory")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary and a Temporal dev server")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cli := os.Getenv("AGENTMEMORY_TEMPORAL_CLI")
	if cli == "" {
		cli = filepath.Join(root, "bin", "temporal")
	}
	if _, err := os.Stat(cli); err != nil {
		devserver.SkipCapability(t, "no Temporal CLI at %s (make temporal, or set AGENTMEMORY_TEMPORAL_CLI)", cli)
	}
	var setup confSetup
	readJSON(t, filepath.Join("conformance", "setup.json"), &setup)
	files, _ := filepath.Glob(filepath.Join("conformance", "cases", "*.json"))
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no conformance cases")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	logFile, err := os.Create(filepath.Join(dir, "dev.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	srv := &devServer{t: t, bin: conformanceBinary(t, root), dir: dir, addr: addr, url: "http://" + addr, log: logFile,
		env: append(os.Environ(), "AGENTMEMORY_TEMPORAL_CLI="+cli, "OLLAMA_HOST=http://127.0.0.1:1")}
	srv.start()
	defer srv.stop()

	out, err := exec.Command(srv.bin, "space", "create", setup.SpaceName, "--direct-put", "--data-dir", dir).Output()
	if err != nil {
		t.Fatalf("space create: %v", err)
	}
	var space struct {
		AdminKey string `json:"admin_key"`
	}
	if err := json.Unmarshal(out, &space); err != nil {
		t.Fatal(err)
	}
	srv.admin = space.AdminKey
	for _, d := range setup.Documents {
		srv.call("PUT", "/v1/documents/"+d.Name, srv.admin, d.Body, nil)
	}
	srv.bases = srv.setupKnowledge(setup)

	for _, f := range files {
		var c confCase
		readJSON(t, f, &c)
		t.Run(c.Name, func(t *testing.T) {
			for _, r := range c.Requires {
				if !conformanceCapabilities[r] {
					devserver.SkipCapability(t, "requires %s", r)
				}
			}
			srv.t = t
			defer srv.start() // a case that stopped the server leaves it running for the next
			newConfRunner(t, srv, setup, c).run()
		})
	}
}

func readJSON(t *testing.T, path string, out any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// confRunner runs one case.
type confRunner struct {
	t       *testing.T
	srv     *devServer
	c       confCase
	dir     string
	keySpec map[string]any
	keys    map[string]string
	clients map[string]*sdk.Client
	saved   map[string]map[string]any
	leases  map[string]*sdk.Lease
	where   string
}

func newConfRunner(t *testing.T, srv *devServer, setup confSetup, c confCase) *confRunner {
	r := &confRunner{t: t, srv: srv, c: c, dir: t.TempDir(), keys: map[string]string{}, clients: map[string]*sdk.Client{},
		saved: map[string]map[string]any{}, keySpec: map[string]any{}, leases: map[string]*sdk.Lease{}}
	for k, v := range setup.AgentKey {
		r.keySpec[k] = v
	}
	r.keySpec["agent"] = fmt.Sprint(setup.AgentKey["agent"]) + "-" + strings.ReplaceAll(c.Name, "_", "-")
	if len(r.c.Clients) == 0 {
		r.c.Clients = map[string]confClientSpec{"a": {}}
	}
	base := srv.mintKey(r.keySpec)
	for name, spec := range r.c.Clients {
		if spec.Scopes != nil {
			ks := map[string]any{}
			for k, v := range r.keySpec {
				ks[k] = v
			}
			ks["scopes"] = spec.Scopes
			r.keys[name] = srv.mintKey(ks)
		} else {
			r.keys[name] = base
		}
		r.clients[name] = r.newClient(name)
	}
	return r
}

func (r *confRunner) newClient(name string) *sdk.Client {
	spec := r.c.Clients[name]
	opt := sdk.Options{BaseURL: r.srv.url, Key: r.keys[name], Replay: spec.Replay, MaxRetries: 1, RetryBackoff: 50 * time.Millisecond}
	if spec.Queue == "file" {
		opt.QueueFile = filepath.Join(r.dir, name+"-queue.json")
	}
	c, err := sdk.New(opt)
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

func (r *confRunner) run() {
	for i, s := range r.c.Steps {
		op, _ := s["op"].(string)
		r.where = fmt.Sprintf("%s step %d (%s)", r.c.Name, i, op)
		switch op {
		case "server.stop":
			r.srv.stop()
			continue
		case "server.start":
			r.srv.start()
			continue
		}
		name := "a"
		if n, ok := s["client"].(string); ok {
			name = n
		}
		if op == "client.restart" {
			r.clients[name] = r.newClient(name)
			continue
		}
		out, err := r.do(r.clients[name], op, s)
		if err != nil {
			var ae *sdk.Error
			switch {
			case errors.As(err, &ae):
				out = map[string]any{"error": ae.Code}
			case strings.Contains(err.Error(), "unreachable"):
				out = map[string]any{"error": "unreachable"}
			default:
				r.t.Fatalf("%s: %v", r.where, err)
			}
		}
		if as, ok := s["as"].(string); ok {
			r.saved[as] = out
		}
		expect, _ := s["expect"].(map[string]any)
		r.check(out, expect)
	}
}

func str(v any) string { s, _ := v.(string); return s }

func strs(v any) []string {
	var out []string
	if list, ok := v.([]any); ok {
		for _, x := range list {
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}

func scopeOf(v any) sdk.Scope {
	m, _ := v.(map[string]any)
	return sdk.Scope{Kind: str(m["kind"]), ID: str(m["id"])}
}

func rawBody(b map[string]json.RawMessage) map[string]any {
	out := map[string]any{}
	for k, v := range b {
		var x any
		_ = json.Unmarshal(v, &x)
		out[k] = x
	}
	return out
}

func (r *confRunner) do(c *sdk.Client, op string, s map[string]any) (map[string]any, error) {
	ctx := context.Background()
	switch op {
	case "state.get":
		st, err := c.AgentState(scopeOf(s["scope"])).Get(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"version": st.Version, "body": rawBody(st.Body)}, nil
	case "state.put":
		body := map[string]any{}
		in, _ := s["body"].(map[string]any)
		for k, v := range in {
			if reflect.DeepEqual(v, map[string]any{"$delete": true}) {
				v = sdk.Delete
			}
			body[k] = v
		}
		var opts []sdk.PutOption
		iv, hasIV := s["if_version"].(float64)
		if str(s["mode"]) == "cas" {
			opts = append(opts, sdk.CAS(int64(iv)))
		} else if hasIV {
			opts = append(opts, sdk.IfVersion(int64(iv)))
		}
		res, err := c.AgentState(scopeOf(s["scope"])).Put(ctx, body, opts...)
		var ae *sdk.Error
		if errors.As(err, &ae) && errors.Is(err, sdk.ErrConflict) {
			return map[string]any{"stored": false, "reason": "conflict", "version": ae.Version, "queued": false}, nil
		}
		if err != nil {
			return nil, err
		}
		out := map[string]any{"stored": res.Stored, "version": res.Version, "reason": res.Reason, "fields": res.Fields, "queued": res.Queued}
		if res.Fields == nil {
			out["fields"] = []string{}
		}
		return out, nil
	case "state.pending":
		return map[string]any{"pending": c.Pending()}, nil
	case "state.conflicts":
		want := scopeOf(s["scope"])
		list := []any{}
		for _, cf := range c.Conflicts() {
			if cf.Scope == want {
				list = append(list, map[string]any{"scope": map[string]any{"kind": cf.Scope.Kind, "id": cf.Scope.ID},
					"if_version": cf.IfVersion, "current_version": cf.CurrentVersion, "body": rawBody(cf.Body)})
			}
		}
		return map[string]any{"conflicts": list}, nil
	case "memory.block":
		mt, _ := s["max_tokens"].(float64)
		b, err := c.Block(ctx, sdk.BlockOptions{MaxTokens: int(mt), Tags: strs(s["tags"]), View: str(s["view"])})
		if err != nil {
			return nil, err
		}
		return map[string]any{"enabled": b.Enabled, "not_modified": b.NotModified, "text": b.Text, "etag": b.ETag}, nil
	case "memory.remember":
		n := sdk.Note{Kind: str(s["kind"]), Title: str(s["title"]), Body: str(s["body"]), Tags: strs(s["tags"])}
		if conv := str(s["conversation"]); conv != "" {
			n.Evidence = &sdk.Evidence{ConversationID: conv}
		}
		got, err := c.Remember(ctx, n, str(s["idempotency_key"]))
		var ae *sdk.Error
		if errors.As(err, &ae) {
			return map[string]any{"status": "error", "error": ae.Code, "kinds": append([]string{}, ae.Kinds...), "replayed": false}, nil
		}
		if err != nil {
			return nil, err
		}
		out := map[string]any{"status": "stored", "replayed": got.Replayed, "kinds": []string{}, "error": nil}
		switch {
		case got.ProposalID != "":
			out["status"] = "proposed"
		case got.DuplicateOf != "":
			out["status"] = "duplicate"
		}
		if got.Note != nil {
			out["note_id"] = got.Note.ID
		}
		return out, nil
	case "memory.search":
		lim, _ := s["limit"].(float64)
		notes, err := c.Search(ctx, str(s["query"]), strs(s["tags"]), int(lim))
		if err != nil {
			return nil, err
		}
		titles := []string{}
		for _, n := range notes {
			titles = append(titles, n.Title)
		}
		return map[string]any{"count": len(notes), "titles": titles}, nil
	case "knowledge.retrieve":
		kbs := strs(s["kbs"])
		for i, name := range kbs {
			if id, ok := r.srv.bases[name]; ok {
				kbs[i] = id
			}
		}
		req := sdk.RetrieveRequest{Query: str(s["query"]), KBs: kbs}
		if v, ok := s["top_k"].(float64); ok {
			req.TopK = int(v)
		}
		if v, ok := s["max_tokens"].(float64); ok {
			req.MaxTokens = int(v)
		}
		if v, ok := s["min_score"].(float64); ok {
			req.MinScore = v
		}
		if v, ok := s["filters"].(map[string]any); ok {
			req.Filters = v
		}
		res, err := c.Retrieve(ctx, req)
		if err != nil {
			return nil, err
		}
		titles, sources, versions, inContext := []string{}, []string{}, []string{}, 0
		for _, ch := range res.Chunks {
			titles, sources, versions = append(titles, ch.Title), append(sources, ch.SourceURI), append(versions, ch.Version)
			if ch.InContext {
				inContext++
			}
		}
		return map[string]any{"mode": res.Mode, "count": len(res.Chunks), "titles": titles, "sources": sources, "versions": versions,
			"in_context": inContext, "context": res.Context}, nil
	case "board.get", "board.put", "board.lease", "board.lease_release":
		return r.board(ctx, c, op, s)
	case "tools.list", "tools.call":
		return r.tools(ctx, c, op, s)
	}
	r.t.Fatalf("%s: unknown op", r.where)
	return nil, nil
}

// tools runs tools.list (the kit's names with agent memory and writes asked for) and
// tools.call (the dispatcher's result: error, kinds, status, and for a search count, titles).
func (r *confRunner) tools(ctx context.Context, c *sdk.Client, op string, s map[string]any) (map[string]any, error) {
	kit, err := tools.New(ctx, c, tools.Options{WriteAgentMemory: true})
	if err != nil {
		return nil, err
	}
	if op == "tools.list" {
		return map[string]any{"names": kit.Names()}, nil
	}
	args, err := json.Marshal(s["arguments"])
	if err != nil {
		return nil, err
	}
	text, err := kit.Dispatch(ctx, str(s["name"]), string(args))
	if err != nil {
		return nil, err
	}
	var res struct {
		Status *string `json:"status"`
		Error  *struct {
			Code  string   `json:"code"`
			Kinds []string `json:"kinds"`
		} `json:"error"`
		Notes []struct {
			Title string `json:"title"`
		} `json:"notes"`
	}
	if err := json.Unmarshal([]byte(text), &res); err != nil {
		return nil, err
	}
	out := map[string]any{"status": res.Status}
	if res.Error != nil {
		out["error"], out["kinds"] = res.Error.Code, append([]string{}, res.Error.Kinds...)
	}
	if res.Notes != nil {
		titles := []string{}
		for _, n := range res.Notes {
			titles = append(titles, n.Title)
		}
		out["count"], out["titles"] = len(res.Notes), titles
	}
	return out, nil
}

// normal is v as plain JSON values (numbers float64), for comparison.
func normal(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

func (r *confRunner) check(out, expect map[string]any) {
	r.t.Helper()
	for k, want := range expect {
		msg := fmt.Sprintf("%s: %s (outcome %v)", r.where, k, normal(out))
		switch k {
		case "text_contains", "context_contains":
			member := strings.TrimSuffix(k, "_contains")
			for _, part := range strs(want) {
				if !strings.Contains(str(out[member]), part) {
					r.t.Errorf("%s: %s lacks %q", msg, member, part)
				}
			}
		case "text_equals", "etag_equals", "etag_differs", "note_id_equals":
			member := strings.TrimSuffix(strings.TrimSuffix(k, "_equals"), "_differs")
			saved, ok := r.saved[str(want)]
			if !ok {
				r.t.Fatalf("%s: no saved outcome %q", msg, want)
			}
			same := reflect.DeepEqual(out[member], saved[member])
			if same != strings.HasSuffix(k, "_equals") {
				r.t.Errorf("%s: %v vs saved %v", msg, out[member], saved[member])
			}
		case "conflicts":
			got, _ := normal(out["conflicts"]).([]any)
			wants, _ := want.([]any)
			if len(got) != len(wants) {
				r.t.Errorf("%s: %d conflicts, want %d", msg, len(got), len(wants))
				continue
			}
			for i, w := range wants {
				g, _ := got[i].(map[string]any)
				for m, wv := range w.(map[string]any) {
					if !reflect.DeepEqual(g[m], normal(wv)) {
						r.t.Errorf("%s: conflict %d %s = %v, want %v", msg, i, m, g[m], wv)
					}
				}
			}
		default:
			got, ok := out[k]
			if !ok {
				r.t.Errorf("%s: missing", msg)
				continue
			}
			if !reflect.DeepEqual(normal(got), normal(want)) {
				r.t.Errorf("%s: got %v, want %v", msg, normal(got), normal(want))
			}
		}
	}
}

// board runs the board ops (issue 31): get, put (with a saved lease when the step names one),
// lease (saved under the step's lease name) and lease_release.
func (r *confRunner) board(ctx context.Context, c *sdk.Client, op string, s map[string]any) (map[string]any, error) {
	ref, _ := s["board"].(map[string]any)
	b := c.Board(str(ref["type"]), str(ref["id"]))
	switch op {
	case "board.get":
		st, err := b.Get(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"version": st.Version, "body": rawBody(st.Body)}, nil
	case "board.lease":
		ttl, _ := s["ttl_seconds"].(float64)
		l, err := b.Lease(ctx, time.Duration(ttl)*time.Second)
		if err != nil {
			return nil, err
		}
		r.leases[str(s["lease"])] = l
		return map[string]any{"token": l.Token}, nil
	case "board.lease_release":
		return map[string]any{}, r.leases[str(s["lease"])].Release(ctx)
	}
	iv, _ := s["if_version"].(float64)
	put := b.Put
	if name := str(s["lease"]); name != "" {
		put = r.leases[name].Put
	}
	res, err := put(ctx, s["body"], int64(iv))
	if err != nil {
		return nil, err
	}
	settled := []any{}
	for _, o := range res.Settled {
		settled = append(settled, map[string]any{"field": o.Field, "rule": o.Rule})
	}
	return map[string]any{"stored": res.Stored, "version": res.Version, "settled": settled}, nil
}
