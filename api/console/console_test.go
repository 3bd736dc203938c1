package console_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/api/console"
	"github.com/agentmemory/agentmemory/apptest"
)

// clock is a settable clock shared by the Env's services and the Console.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// each runs fn per engine on an Env whose clock is clk's.
func each(t *testing.T, fn func(t *testing.T, e *apptest.Env, clk *clock)) {
	t.Helper()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			clk := &clock{t: time.Now().UTC()}
			e := apptest.New(t, engine, func(d *api.Deps) { d.Now = clk.Now })
			fn(t, e, clk)
		})
	}
}

// browser is a cookie-keeping client of one Env's server that does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
	// forms are the one-time form tokens of the last page, one per form; post spends one.
	forms []string
}

type page struct {
	Status   int
	Body     string
	Location string
	Header   http.Header
}

var csrfPattern = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

var formPattern = regexp.MustCompile(`name="form" value="([^"]+)"`)

func newBrowser(t *testing.T, e *apptest.Env) *browser {
	srv := httptest.NewServer(e.Server)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: srv.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	res, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	p := page{Status: res.StatusCode, Body: string(data), Location: res.Header.Get("Location"), Header: res.Header}
	if m := csrfPattern.FindStringSubmatch(p.Body); m != nil {
		b.csrf = m[1]
	}
	if ms := formPattern.FindAllStringSubmatch(p.Body, -1); ms != nil {
		b.forms = b.forms[:0]
		for _, m := range ms {
			b.forms = append(b.forms, m[1])
		}
	}
	return p
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
	return b.do(req)
}

// post sends form with the last page's CSRF token (unless form sets csrf itself).
func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	}
	if _, ok := form["form"]; !ok && len(b.forms) > 0 {
		form.Set("form", b.forms[0])
		b.forms = b.forms[1:]
	}
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// signIn signs in with key and requires success.
func signIn(t *testing.T, e *apptest.Env, key string) *browser {
	t.Helper()
	b := newBrowser(t, e)
	b.get("/console/login")
	p := b.post("/console/login", url.Values{"key": {key}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/console", p.Location)
	return b
}

func enableNotes(e *apptest.Env, extra map[string]any) {
	am := map[string]any{"enabled": true}
	for k, v := range extra {
		am[k] = v
	}
	e.PutDocument("features", map[string]any{"agent_memory": am, "agent_state": map[string]any{"enabled": true}})
}

func TestConsoleSignIn(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		b := newBrowser(t, e)
		p := b.get("/console/login")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, `<label for="key">Key</label>`)
		require.Contains(t, p.Body, `>Sign in</button>`)
		csp := p.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "default-src 'none'")
		require.NotContains(t, csp, "script-src")
		require.NotContains(t, csp, "unsafe-inline")
		require.Equal(t, "DENY", p.Header.Get("X-Frame-Options"))
		require.NotContains(t, p.Body, "<script")

		// No CSRF token: 403, no session.
		r := b.post("/console/login", url.Values{"key": {e.AdminKey}, "csrf": {""}})
		require.Equal(t, http.StatusForbidden, r.Status)
		require.Equal(t, http.StatusSeeOther, b.get("/console/notes").Status)

		// An agent key is refused.
		b.get("/console/login")
		r = b.post("/console/login", url.Values{"key": {e.AgentKey("shop-bot", "acme", "agent_memory")}})
		require.Equal(t, http.StatusForbidden, r.Status)
		require.Contains(t, r.Body, "Agent keys cannot sign in")
		require.Equal(t, http.StatusSeeOther, b.get("/console/notes").Status)

		// A person key signs in: the cookie is HttpOnly and SameSite=Strict.
		b.get("/console/login")
		r = b.post("/console/login", url.Values{"key": {e.AdminKey}})
		require.Equal(t, http.StatusSeeOther, r.Status)
		var cookie string
		for _, c := range r.Header.Values("Set-Cookie") {
			if strings.HasPrefix(c, console.SessionCookie+"=") {
				cookie = c
			}
		}
		require.Contains(t, cookie, "HttpOnly")
		require.Contains(t, cookie, "SameSite=Strict")
		require.NotContains(t, cookie, e.AdminKey)
		n, err := e.DB.NewSelect().Table("console_sessions").Where("id = ?", strings.TrimPrefix(strings.Split(cookie, ";")[0], console.SessionCookie+"=")).Count(t.Context())
		require.NoError(t, err)
		require.Zero(t, n, "the session table holds the token's hash, never the token")

		home := b.get("/console")
		require.Equal(t, http.StatusSeeOther, home.Status)
		notes := b.get(home.Location)
		require.Equal(t, http.StatusOK, notes.Status)
		for _, link := range []string{">Notes<", ">Proposals<", ">Settings<", ">Compliance<", ">Profiles<", ">Receipts<", ">Keys<"} {
			require.Contains(t, notes.Body, link)
		}
		require.Equal(t, "DENY", notes.Header.Get("X-Frame-Options"))

		// A POST without the CSRF token (or with a wrong one) is 403 and changes nothing.
		require.Equal(t, http.StatusForbidden, b.post("/console/keys", url.Values{"csrf": {""}, "kind": {"person"}, "name": {"x"}, "roles": {"admin"}}).Status)
		require.Equal(t, http.StatusForbidden, b.post("/console/keys", url.Values{"csrf": {"forged"}, "kind": {"person"}, "name": {"x"}, "roles": {"admin"}}).Status)
		keys := b.get("/console/keys")
		require.NotContains(t, keys.Body, ">x<")

		// Behind TLS (a proxy saying so) the cookie is Secure too.
		req := httptest.NewRequest(http.MethodGet, "/console/login", nil)
		req.Header.Set("X-Forwarded-Proto", "https")
		rec := httptest.NewRecorder()
		e.Server.ServeHTTP(rec, req)
		require.Contains(t, rec.Header().Get("Set-Cookie"), "; Secure")

		// Sign-out ends the session.
		require.Equal(t, http.StatusSeeOther, b.post("/console/logout", nil).Status)
		require.Equal(t, "/console/login", b.get("/console/notes").Location)
	})
}

func TestConsoleSessionExpiryAndRevokedKey(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, clk *clock) {
		key := e.PersonKey("Ada", "admin")
		b := signIn(t, e, key)
		require.Equal(t, http.StatusOK, b.get("/console/keys").Status)

		// Idle expiry.
		clk.Add(console.DefaultIdleTimeout + time.Second)
		require.Equal(t, "/console/login", b.get("/console/keys").Location)

		// Absolute expiry, however active the session.
		b = signIn(t, e, key)
		for elapsed := time.Duration(0); elapsed < console.DefaultMaxAge-20*time.Minute; elapsed += 20 * time.Minute {
			clk.Add(20 * time.Minute)
			require.Equal(t, http.StatusOK, b.get("/console/keys").Status)
		}
		clk.Add(25 * time.Minute)
		require.Equal(t, "/console/login", b.get("/console/keys").Location)

		// A revoked key ends its session on the next request.
		b = signIn(t, e, key)
		require.Equal(t, http.StatusOK, b.get("/console/keys").Status)
		r := e.Do(http.MethodGet, "/v1/receipts?limit=1", key, nil)
		require.Equal(t, http.StatusOK, r.Status)
		admin := signIn(t, e, e.AdminKey)
		admin.get("/console/keys")
		var keyID string
		for _, k := range regexp.MustCompile(`/console/keys/(key_[0-9a-f]+)/revoke`).FindAllStringSubmatch(admin.get("/console/keys").Body, -1) {
			keyID = k[1] // the newest active key other than the admin's own: Ada's
		}
		require.NotEmpty(t, keyID)
		require.Equal(t, http.StatusSeeOther, admin.post("/console/keys/"+keyID+"/revoke", nil).Status)
		require.Equal(t, "/console/login", b.get("/console/keys").Location)
		require.Equal(t, http.StatusUnauthorized, e.Do(http.MethodGet, "/v1/receipts", key, nil).Status)
	})
}

func TestConsoleRoles(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		e.AgentKey("shop-bot", "acme", "agent_memory")
		reviewer := signIn(t, e, e.PersonKey("Rui", "reviewer"))
		require.Equal(t, http.StatusOK, reviewer.get("/console/proposals").Status)
		for _, path := range []string{"/console/keys", "/console/notes", "/console/compliance", "/console/settings", "/console/receipts"} {
			require.Equal(t, http.StatusForbidden, reviewer.get(path).Status, path)
		}
		nav := reviewer.get("/console/proposals").Body
		require.NotContains(t, nav, ">Keys<")
		// Whatever the page shows, the server refuses the action.
		require.Equal(t, http.StatusForbidden, reviewer.post("/console/keys", url.Values{"kind": {"person"}, "name": {"Mallory"}, "roles": {"admin"}}).Status)
		require.Equal(t, http.StatusForbidden, reviewer.post("/console/notes", url.Values{"agent": {"shop-bot"}, "kind": {"procedure"}, "title": {"T"}, "body": {"B"}}).Status)
		require.Equal(t, http.StatusForbidden, reviewer.post("/console/compliance/erasures/preview", url.Values{"subject": {"email:ana@example.com"}}).Status)

		compliance := signIn(t, e, e.PersonKey("Cora", "compliance"))
		require.Equal(t, http.StatusOK, compliance.get("/console/compliance").Status)
		require.Equal(t, http.StatusForbidden, compliance.get("/console/proposals").Status)
		require.Equal(t, http.StatusForbidden, compliance.post("/console/settings/features", url.Values{"document": {`{}`}}).Status)

		// Settings: integration may save object-types but not features (security's).
		integ := signIn(t, e, e.PersonKey("Ivo", "integration"))
		s := integ.get("/console/settings")
		require.Equal(t, http.StatusOK, s.Status)
		require.Equal(t, http.StatusForbidden, integ.post("/console/settings/features", url.Values{"document": {`{"agent_memory":{"enabled":false}}`}}).Status)
		security := signIn(t, e, e.PersonKey("Sol", "security"))
		security.get("/console/settings")
		r := security.post("/console/settings/features", url.Values{"document": {`{"agent_memory":{"enabled":true,"writes":"bogus"}}`}})
		require.Equal(t, http.StatusBadRequest, r.Status)
		require.Contains(t, r.Body, "bogus", "the refused document is kept in the form")
		require.Equal(t, http.StatusSeeOther, security.post("/console/settings/features", url.Values{"document": {`{"agent_memory":{"enabled":true},"agent_state":{"enabled":true}}`}}).Status)

		// An admin without integration reads notes but the service refuses a create for an agent.
		admin := signIn(t, e, e.PersonKey("Ada", "admin"))
		require.Equal(t, http.StatusOK, admin.get("/console/notes").Status)
		admin.get("/console/notes/new")
		r = admin.post("/console/notes", url.Values{"agent": {"shop-bot"}, "kind": {"procedure"}, "title": {"Sizes"}, "body": {"Ask for the size chart."}, "visibility": {"source"}})
		require.Equal(t, http.StatusForbidden, r.Status)
		require.Contains(t, r.Body, "integration")
	})
}

func TestConsoleNotesGateAndBlock(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		e.AgentKey("shop-bot", "acme", "agent_memory")
		b := signIn(t, e, e.PersonKey("Ivo", "integration"))
		b.get("/console/notes/new")
		r := b.post("/console/notes", url.Values{"agent": {"shop-bot"}, "kind": {"procedure"}, "title": {"Returns window"},
			"body": {"Offer an exchange within 30 days of delivery."}, "tags": {"returns"}, "visibility": {"source"}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		notePath := strings.Split(r.Location, "?")[0]
		n := b.get(r.Location)
		require.Contains(t, n.Body, "Note created.")
		require.Contains(t, n.Body, "Returns window")

		// An edit with personal data is refused inline with the kinds, keeping the form.
		r = b.post(notePath+"/versions", url.Values{"kind": {"procedure"}, "title": {"Returns window"},
			"body": {"Write to ana.souza@example.com about exchanges."}, "tags": {"returns"}, "visibility": {"source"}})
		require.Equal(t, http.StatusUnprocessableEntity, r.Status)
		require.Contains(t, r.Body, `<span class="badge bad">email</span>`)
		require.Contains(t, r.Body, "Write to ana.souza@example.com about exchanges.", "the form keeps what was typed")

		// A clean edit makes version 2; the history lists both.
		r = b.post(notePath+"/versions", url.Values{"kind": {"procedure"}, "title": {"Returns window"},
			"body": {"Offer an exchange within 45 days of delivery."}, "tags": {"returns"}, "visibility": {"source"}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		v2 := b.get(r.Location)
		require.Contains(t, v2.Body, "v2 · Returns window")
		require.Contains(t, v2.Body, "v1 · Returns window")

		// The block preview shows the exact text, the tokens and the ETag: the system block is
		// the block of GET /v1/agent-memory/block, the ETag the context call's.
		b.get("/console/notes/block")
		blk := b.post("/console/notes/block", url.Values{"agent": {"shop-bot"}, "types": {"returns"}, "block_max_tokens": {"300"}})
		require.Equal(t, http.StatusOK, blk.Status, blk.Body)
		require.Contains(t, blk.Body, "45 days")
		require.NotContains(t, blk.Body, "30 days")
		int2 := e.PersonKey("Int2", "integration")
		rest := e.MustDo(http.StatusOK, http.MethodGet, "/v1/agent-memory/block?source_id=shop-bot&tags=returns&max_tokens=300", int2, nil)
		require.Contains(t, blk.Body, `<th scope="row">System block</th><td class="num">`+rest.JSON(t)["tokens"].(interface{ String() string }).String()+"</td>")
		ctx := e.MustDo(http.StatusOK, http.MethodPost, "/v1/context", int2, map[string]any{"source_id": "shop-bot", "task": map[string]any{"object_types": []string{"returns"}}})
		require.Contains(t, blk.Body, strings.Trim(ctx.Header.Get("ETag"), `"`))

		// Search by word and the list by agent.
		require.Contains(t, b.get("/console/notes?agent=shop-bot&q=exchange").Body, "Returns window")
		list := b.get("/console/notes?agent=shop-bot&visibility=space")
		require.Contains(t, list.Body, "No notes match")

		// Retire.
		v2ID := strings.TrimPrefix(strings.Split(r.Location, "?")[0], "/console/notes/")
		r = b.post("/console/notes/"+v2ID+"/retire", nil)
		require.Equal(t, http.StatusSeeOther, r.Status)
		require.Contains(t, b.get(r.Location).Body, `<span class="badge">retired</span>`)
	})
}

func TestConsoleProposalDecision(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, map[string]any{"writes": "human_only"})
		bot := e.AgentKey("shop-bot", "acme", "agent_memory", "agent_memory:write")
		r := e.MustDo(http.StatusAccepted, http.MethodPost, "/v1/agent-memory/notes", bot, map[string]any{
			"kind": "procedure", "title": "Size chart first", "body": "Send the size chart before suggesting an exchange."})
		id := r.JSON(t)["proposal_id"].(string)

		first := signIn(t, e, e.PersonKey("Ada", "admin"))
		q := first.get("/console/proposals")
		require.Contains(t, q.Body, "Size chart first")
		require.Contains(t, q.Body, "/console/proposals/"+id)
		pg := first.get("/console/proposals/" + id)
		require.Contains(t, pg.Body, ">Approve</button>")
		require.Contains(t, pg.Body, ">Reject</button>")

		// Approve with an edit carrying personal data: refused inline, still pending.
		r2 := first.post("/console/proposals/"+id+"/approve", url.Values{"kind": {"procedure"}, "title": {"Size chart first"},
			"body": {"Call +55 11 97531-8642 first."}, "visibility": {"source"}})
		require.Equal(t, http.StatusUnprocessableEntity, r2.Status)
		require.Contains(t, r2.Body, `<span class="badge bad">phone</span>`)

		// Approve with a clean edit.
		r2 = first.post("/console/proposals/"+id+"/approve", url.Values{"kind": {"procedure"}, "title": {"Size chart first"},
			"body": {"Send the size chart before any exchange."}, "tags": {"sizes"}, "visibility": {"source"}})
		require.Equal(t, http.StatusSeeOther, r2.Status, r2.Body)
		got := e.MustDo(http.StatusOK, http.MethodGet, "/v1/agent-memory/proposals/"+id, e.AdminKey, nil).JSON(t)
		require.Equal(t, "approved", got["status"])

		// A second reviewer sees who decided, and no buttons.
		second := signIn(t, e, e.PersonKey("Bea", "admin"))
		pg = second.get("/console/proposals/" + id)
		require.Contains(t, pg.Body, "approved</strong> by <strong>Ada")
		require.NotContains(t, pg.Body, ">Approve</button>")
		require.Equal(t, http.StatusConflict, second.post("/console/proposals/"+id+"/reject", url.Values{"reason": {"duplicate"}}).Status)

		// Another proposal, rejected with a reason; the approved note shows as its most similar.
		r = e.MustDo(http.StatusAccepted, http.MethodPost, "/v1/agent-memory/notes", bot, map[string]any{
			"kind": "procedure", "title": "Size chart again", "body": "Send the size chart before any exchange, always."})
		id2 := r.JSON(t)["proposal_id"].(string)
		pg = second.get("/console/proposals/" + id2)
		require.Contains(t, pg.Body, "Most similar notes of shop-bot")
		require.Contains(t, pg.Body, ">Size chart first</a>")
		r2 = second.post("/console/proposals/"+id2+"/reject", url.Values{"reason": {"duplicate"}})
		require.Equal(t, http.StatusSeeOther, r2.Status, r2.Body)
		pg = second.get(r2.Location)
		require.Contains(t, pg.Body, "Proposal rejected.")
		require.Contains(t, pg.Body, "Reason: duplicate.")
		require.Contains(t, pg.Body, "rejected</strong> by <strong>Bea")
	})
}

func TestConsoleProfileShowsNoContent(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		e.PutDocument("object-types", apptest.ShopBotTypes())
		shop := e.AgentKey("shop-bot", "acme", "agent_state")
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", shop, map[string]any{
			"scope": map[string]any{"kind": "conversation", "id": "c-77"}, "subject": "email:ana@example.com",
			"body": map[string]any{"step": "sizes", "offer": "zebra-unique-offer", "cart_note": "blue dress"}})
		integ := e.PersonKey("Ivo", "integration")
		prof := e.MustDo(http.StatusCreated, http.MethodPost, "/v1/profiles", integ, map[string]any{
			"name": "Ana Souza", "handles": []string{"email:ana@example.com", "phone:+55 11 98765-4321"}}).JSON(t)["profile_id"].(string)
		b := signIn(t, e, e.PersonKey("Cora", "compliance"))
		b.get("/console/profiles")
		// By the profile's id, or by another handle of the same profile: the same tab.
		byID := b.post("/console/profiles", url.Values{"profile": {prof}})
		require.Equal(t, http.StatusOK, byID.Status)
		require.Contains(t, byID.Body, "<td>shop-bot</td><td>conversation</td>")
		require.NotContains(t, byID.Body, prof, "the id is not echoed")
		p := b.post("/console/profiles", url.Values{"profile": {"phone:+55 11 98765-4321"}})
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, "<td>shop-bot</td><td>conversation</td>")
		for _, secret := range []string{"zebra-unique-offer", "blue dress", "sizes", "ana@example.com", "98765", "c-77"} {
			require.NotContains(t, p.Body, secret)
		}
	})
}

func TestConsoleErasurePreviewAndKeys(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
		e.PutDocument("object-types", apptest.ShopBotTypes())
		shop := e.AgentKey("shop-bot", "acme", "agent_state")
		e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", shop, map[string]any{
			"scope": map[string]any{"kind": "conversation", "id": "c-1"}, "subject": "email:ana@example.com",
			"body": map[string]any{"step": "cart"}})
		b := signIn(t, e, e.PersonKey("Cora", "compliance"))
		b.get("/console/compliance")
		pv := b.post("/console/compliance/erasures/preview", url.Values{"subject": {"email:ana@example.com"}})
		require.Equal(t, http.StatusOK, pv.Status)
		require.Contains(t, pv.Body, "<td>state</td>")
		require.Contains(t, pv.Body, "agent_state 1")
		require.Contains(t, pv.Body, "Confirm erasure")
		n, err := e.DB.NewSelect().Table("erasures").Count(t.Context())
		require.NoError(t, err)
		require.Zero(t, n, "a preview records nothing")
		// Without confirmation nothing starts.
		require.Equal(t, http.StatusBadRequest, b.post("/console/compliance/erasures", url.Values{"subject": {"email:ana@example.com"}}).Status)

		// Keys: minted once, never listed again.
		admin := signIn(t, e, e.AdminKey)
		admin.get("/console/keys")
		r := admin.post("/console/keys", url.Values{"kind": {"person"}, "name": {"Nia"}, "roles": {"reviewer", "compliance"}})
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		shown := admin.get(r.Location)
		key := regexp.MustCompile(`am_[A-Za-z0-9_-]{43}`).FindString(shown.Body)
		require.NotEmpty(t, key)
		require.NotContains(t, admin.get("/console/keys").Body, key)
		require.Equal(t, http.StatusOK, e.Do(http.MethodGet, "/v1/agent-memory/proposals", key, nil).Status)

		// Receipts: the chain with its Verify.
		rc := admin.get("/console/receipts/verify")
		require.Contains(t, rc.Body, "The chain verifies")
		require.Contains(t, admin.get("/console/receipts?kind=admin").Body, "key.create")
	})
}
