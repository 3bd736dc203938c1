package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"
)

// world is what setup made: the clients of both spaces and the owner's note.
type world struct {
	a, b                client // admin keys of spaces A and B
	owner, rival, other client // agents: A vendor a, A vendor b, B vendor a
	minted              []minted
	operator            *client // the operator key that created both spaces, when the run was given one
	noteID, marker      string
	spaceAdmins         []minted       // the admin keys of the spaces the run created (revoked last)
	rivalNoteID         string         // the note A's vendor-B agent stored through MCP remember
	before              map[string]any // the owner's note as first read
	notesBefore         int
	subject             *subjectRun // the erasure check's subject, once its state is written
}

// minted is a key the run minted, and the admin of its space (who revokes it).
type minted struct {
	admin client
	id    string
}

// route is one operation of /openapi.json.
type route struct{ method, path string }

// agentKey mints an agent key in admin's space and remembers it for cleanup.
func (w *world) agentKey(ctx context.Context, admin client, agent, vendor string) (client, error) {
	return w.mint(ctx, admin, map[string]any{"kind": "agent", "agent": agent, "vendor": vendor,
		"scopes": []string{"agent_memory", "agent_memory:write", "context"}})
}

// personKey mints a person key with one role in space A and remembers it for cleanup.
func (w *world) personKey(ctx context.Context, name, role string) (client, error) {
	return w.mint(ctx, w.a, map[string]any{"kind": "person", "name": name, "roles": []string{role}})
}

// mint sends POST /v1/keys with body as admin and remembers the key for cleanup.
func (w *world) mint(ctx context.Context, admin client, body map[string]any) (client, error) {
	m, err := admin.must(ctx, http.StatusCreated, "POST", "/v1/keys", body)
	if err != nil {
		return client{}, err
	}
	id, _ := m["key_id"].(string)
	key, _ := m["key"].(string)
	if id == "" || key == "" {
		return client{}, fmt.Errorf("POST /v1/keys answered no key_id or key")
	}
	w.minted = append(w.minted, minted{admin: admin, id: id})
	return client{base: admin.base, key: key, http: admin.http}, nil
}

// setup turns agent memory and working memory on in both spaces, mints the three agent keys and writes the
// owner's note (visibility vendor), carrying a marker unique to the run that no answer to
// another space or vendor may contain.
func setup(ctx context.Context, o Options) (*world, error) {
	w := &world{a: client{o.URL, o.AdminKey, o.HTTP}, b: client{o.URL, o.PeerAdminKey, o.HTTP}}
	if err := w.spaces(ctx, o); err != nil {
		return w, err
	}
	for _, admin := range []client{w.a, w.b} {
		if _, err := admin.must(ctx, http.StatusOK, "PUT", "/v1/documents/features", map[string]any{"agent_memory": map[string]any{"enabled": true},
			"agent_state": map[string]any{"enabled": true}}); err != nil {
			return w, fmt.Errorf("turn agent memory and working memory on (the spaces need --direct-put): %w", err)
		}
	}
	var err error
	if w.owner, err = w.agentKey(ctx, w.a, "conformance-owner", "conformance-vendor-a"); err != nil {
		return w, err
	}
	if w.rival, err = w.agentKey(ctx, w.a, "conformance-rival", "conformance-vendor-b"); err != nil {
		return w, err
	}
	if w.other, err = w.agentKey(ctx, w.b, "conformance-owner", "conformance-vendor-a"); err != nil {
		return w, err
	}
	// The first minted key's id is random: the marker is unique to this run.
	w.marker = "conformance" + lettersOnly(strings.ToLower(strings.TrimPrefix(w.minted[0].id, "key_")))
	n, err := w.owner.must(ctx, http.StatusCreated, "POST", "/v1/agent-memory/notes", map[string]any{"kind": "procedure",
		"title": "Conformance " + w.marker, "body": "Check " + w.marker + " stays in its space.", "visibility": "vendor", "tags": []string{"conformance"}})
	if err != nil {
		return w, err
	}
	w.noteID = n["id"].(string)
	if w.before, err = w.owner.must(ctx, http.StatusOK, "GET", "/v1/agent-memory/notes/"+w.noteID, nil); err != nil {
		return w, err
	}
	w.notesBefore, err = w.countNotes(ctx)
	return w, err
}

// operatorPrefix starts a deployment operator's key (internal/spaces.OperatorPrefix).
const operatorPrefix = "amop_"

// spaces finds the run's two spaces: with an operator key as --admin-key it creates them
// (POST /v1/spaces, direct PUT allowed) and cleanup later revokes their admin keys too;
// otherwise --admin-key and --peer-admin-key are the admin keys of two existing spaces.
func (w *world) spaces(ctx context.Context, o Options) error {
	if !strings.HasPrefix(o.AdminKey, operatorPrefix) {
		if o.AdminKey == "" || o.PeerAdminKey == "" || o.AdminKey == o.PeerAdminKey {
			return fmt.Errorf("conformance needs a deployment operator key (agentmemory operator-key create) as --admin-key, " +
				"or the admin keys of two different spaces (--admin-key, --peer-admin-key)")
		}
		return nil
	}
	if o.PeerAdminKey != "" {
		return fmt.Errorf("--admin-key is an operator key: the run creates both spaces, leave --peer-admin-key out")
	}
	op := client{o.URL, o.AdminKey, o.HTTP}
	w.operator = &op
	run := time.Now().UTC().Format("20060102T150405")
	for i, admin := range []*client{&w.a, &w.b} {
		m, err := op.must(ctx, http.StatusCreated, "POST", "/v1/spaces", map[string]any{
			"name": fmt.Sprintf("conformance-%c-%s", 'a'+i, run), "direct_put": true})
		if err != nil {
			return fmt.Errorf("create the run's spaces with the operator key: %w", err)
		}
		key, _ := m["admin_key"].(string)
		*admin = client{o.URL, key, o.HTTP}
		self, err := admin.must(ctx, http.StatusOK, "GET", "/v1/keys/self", nil)
		if err != nil {
			return err
		}
		id, _ := self["key_id"].(string)
		w.spaceAdmins = append(w.spaceAdmins, minted{admin: *admin, id: id})
	}
	return nil
}

// lettersOnly maps the digits of id to the letters g-p, one to one: a marker holding a run of
// digits can read as a phone number, which the personal-data gate refuses in a note.
func lettersOnly(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return 'g' + (r - '0')
		}
		return r
	}, id)
}

// countNotes is how many notes space A's admin lists.
func (w *world) countNotes(ctx context.Context) (int, error) {
	m, err := w.a.must(ctx, http.StatusOK, "GET", "/v1/agent-memory/notes?limit=200", nil)
	if err != nil {
		return 0, err
	}
	list, _ := m["notes"].([]any)
	return len(list), nil
}

// routes lists the operations of the deployment's /openapi.json, sorted.
func (w *world) routes(ctx context.Context) ([]route, error) {
	code, data, _, err := w.a.do(ctx, "GET", "/openapi.json", nil)
	if err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("GET /openapi.json: %d %v", code, err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var out []route
	for p, ops := range doc.Paths {
		for m := range ops {
			switch m {
			case "get", "post", "put", "delete", "patch":
				out = append(out, route{strings.ToUpper(m), p})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path+out[i].method < out[j].path+out[j].method })
	return out, nil
}

var param = regexp.MustCompile(`\{[^}]+\}`)

// fill puts id in every path parameter of p.
func fill(p, id string) string { return param.ReplaceAllString(p, id) }

// isolation: every /v1 route with a path parameter, called by space B's admin and agent and by
// the other vendor's agent with the owner's note id, answers the not-found/forbidden shape (a
// JSON error, never 2xx or 5xx); every GET answer to them is free of the owner's marker.
func (w *world) isolation(ctx context.Context, rep *Report, routes []route) {
	callers := []struct {
		name string
		c    client
	}{{"space B admin", w.b}, {"space B agent", w.other}, {"vendor B agent", w.rival}}
	if w.operator != nil { // the operator key reads no space
		callers = append(callers, struct {
			name string
			c    client
		}{"operator key", *w.operator})
	}
	w.spaceCreation(ctx, rep)
	for _, r := range routes {
		if !strings.HasPrefix(r.path, "/v1/") || (r.method != "GET" && !param.MatchString(r.path)) {
			continue // a write without an id writes into the caller's own space
		}
		for _, who := range callers {
			code, data, _, err := who.c.do(ctx, r.method, fill(r.path, w.noteID), nil)
			rep.add("isolation", r.method+" "+r.path+" as "+who.name, err == nil && isolated(code, data, w.marker, param.MatchString(r.path)),
				fmt.Sprintf("answered %d: %.200s %s", code, data, errOrNil(err)))
		}
	}
}

// spaceCreation: a space's keys (its admin's, its agent's) never create a space: POST
// /v1/spaces answers them the not-found/forbidden shape, never 2xx or 5xx.
func (w *world) spaceCreation(ctx context.Context, rep *Report) {
	for _, who := range []struct {
		name string
		c    client
	}{{"space A admin", w.a}, {"space B admin", w.b}, {"space A agent", w.owner}} {
		code, data, _, err := who.c.do(ctx, "POST", "/v1/spaces", map[string]any{"name": "conformance-refused"})
		rep.add("isolation", "POST /v1/spaces as "+who.name+" is refused", err == nil && isolated(code, data, w.marker, true),
			fmt.Sprintf("answered %d: %.200s %s", code, data, errOrNil(err)))
	}
}

// isolated reports whether an answer to another tenant is acceptable: below 500, free of the
// marker, a JSON error when not 2xx, and not 2xx at all for a route naming the owner's id.
func isolated(code int, data []byte, marker string, namesID bool) bool {
	switch {
	case code >= 500 || code == 0, strings.Contains(string(data), marker):
		return false
	case code/100 == 2:
		return !namesID
	default:
		return errorShape(data)
	}
}

// errorShape reports whether data is {"error": {"code": "..."}}.
func errorShape(data []byte) bool {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	return json.Unmarshal(data, &e) == nil && e.Error.Code != ""
}

// badInput: every write route of /v1, sent a malformed body by space A's admin, and every GET
// sent malformed paging, answers below 500; afterwards A holds as many notes as before.
func (w *world) badInput(ctx context.Context, rep *Report, routes []route) {
	for _, r := range routes {
		if !strings.HasPrefix(r.path, "/v1/") {
			continue
		}
		path, body := fill(r.path, "x%ff"), any(`{"`)
		if r.method == "GET" {
			path, body = fill(r.path, "x")+"?limit=-1&after=%00&max_tokens=abc", nil
		}
		code, _, _, err := w.a.do(ctx, r.method, path, body)
		rep.add("bad_input", r.method+" "+r.path, err == nil && code > 0 && code < 500, fmt.Sprintf("answered %d %s", code, errOrNil(err)))
	}
	n, err := w.countNotes(ctx)
	rep.add("bad_input", "nothing stored", err == nil && n == w.notesBefore, fmt.Sprintf("notes %d before, %d after %s", w.notesBefore, n, errOrNil(err)))
}

func errOrNil(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// unchanged: the owner reads its note back as it was (version, title, body, status).
func (w *world) unchanged(ctx context.Context, rep *Report) {
	now, err := w.owner.must(ctx, http.StatusOK, "GET", "/v1/agent-memory/notes/"+w.noteID, nil)
	ok := err == nil
	for _, k := range []string{"version", "body", "title", "status", "visibility"} {
		ok = ok && fmt.Sprint(now[k]) == fmt.Sprint(w.before[k])
	}
	rep.add("isolation", "the owner's note is unchanged", ok, fmt.Sprintf("%v %s", now, errOrNil(err)))
}

// receipts: both spaces' receipt chains verify end to end.
func (w *world) receipts(ctx context.Context, rep *Report) {
	for _, s := range []struct {
		name  string
		admin client
	}{{"space A", w.a}, {"space B", w.b}} {
		m, err := s.admin.must(ctx, http.StatusOK, "GET", "/v1/receipts/verify", nil)
		rep.add("receipts", "chain of "+s.name+" verifies", err == nil && m["ok"] == true, fmt.Sprintf("%v %s", m, errOrNil(err)))
	}
}

// console: the sign-in page sends a Content-Security-Policy without inline script and
// refuses framing.
func (w *world) console(ctx context.Context, rep *Report) {
	code, _, h, err := client{base: w.a.base, http: w.a.http}.do(ctx, "GET", "/console/login", nil)
	if err != nil || code != http.StatusOK {
		rep.add("console", "GET /console/login", false, fmt.Sprintf("%d %s", code, errOrNil(err)))
		return
	}
	csp := h.Get("Content-Security-Policy")
	rep.add("console", "Content-Security-Policy", csp != "" && !strings.Contains(csp, "unsafe-inline"), "CSP "+csp)
	frame := h.Get("X-Frame-Options") == "DENY" || strings.Contains(csp, "frame-ancestors 'none'")
	rep.add("console", "framing refused", frame, "X-Frame-Options "+h.Get("X-Frame-Options"))
}

// cleanup retires the owner's note, deletes the erasure check's state when the erasure did
// not remove it, and revokes every key the run minted.
func (w *world) cleanup(ctx context.Context, rep *Report) {
	if w.noteID != "" {
		_, err := w.owner.must(ctx, http.StatusOK, "POST", "/v1/agent-memory/notes/"+w.noteID+"/retire", map[string]any{})
		rep.add("cleanup", "retire the run's note", err == nil, errOrNil(err))
	}
	if w.rivalNoteID != "" {
		_, err := w.rival.must(ctx, http.StatusOK, "POST", "/v1/agent-memory/notes/"+w.rivalNoteID+"/retire", map[string]any{})
		rep.add("cleanup", "retire vendor B's remembered note", err == nil, errOrNil(err))
	}
	if s := w.subject; s != nil && !s.gone {
		// The erasure did not end (no worker): delete the state naming the subject directly.
		_, err := s.agent.must(ctx, http.StatusOK, "POST", "/v1/agent-state/delete", map[string]any{"scope": s.scope})
		rep.add("cleanup", "delete the subject's state", err == nil, errOrNil(err))
	}
	for _, m := range w.minted {
		code, _, _, err := m.admin.do(ctx, "DELETE", "/v1/keys/"+m.id, nil)
		rep.add("cleanup", "revoke a minted key", err == nil && code == http.StatusNoContent, fmt.Sprintf("%d %s", code, errOrNil(err)))
	}
	for _, m := range w.spaceAdmins { // each revokes itself: the run's spaces keep no live key
		code, _, _, err := m.admin.do(ctx, "DELETE", "/v1/keys/"+m.id, nil)
		rep.add("cleanup", "revoke a created space's admin key", err == nil && code == http.StatusNoContent, fmt.Sprintf("%d %s", code, errOrNil(err)))
	}
}
