package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

var keyPattern = regexp.MustCompile(`am_[A-Za-z0-9_-]{43}`)

// count counts the rows of table matching where (with args).
func count(t *testing.T, e *apptest.Env, table, where string, args ...any) int {
	t.Helper()
	n, err := e.DB.NewSelect().Table(table).Where(where, args...).Count(t.Context())
	require.NoError(t, err)
	return int(n)
}

// Issue 27: reloading the page after minting a key minted a second key. The mint answers a
// redirect (post/redirect/get); the key is shown once on the GET after it; the same form sent
// again (a reload of the POST, back and resubmit, a double click) mints nothing more.
func TestConsoleMintKeyPostRedirectGetOnce(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		admin := signIn(t, e, e.AdminKey)
		admin.get("/console/keys")
		form := url.Values{"kind": {"person"}, "name": {"Nia"}, "roles": {"reviewer"}, "csrf": {admin.csrf}, "form": {admin.forms[1]}}
		r := admin.post("/console/keys", form)
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		require.Equal(t, "/console/keys?m=key_minted", r.Location)
		require.NotContains(t, r.Location, "am_", "the key never travels in a URL")
		require.Equal(t, 1, count(t, e, "api_keys", "name = ?", "Nia"))

		var sealed string
		require.NoError(t, e.DB.NewSelect().Table("console_sessions").Column("flash").Where("flash <> ''").Scan(t.Context(), &sealed))
		shown := admin.get(r.Location)
		require.Equal(t, http.StatusOK, shown.Status)
		key := keyPattern.FindString(shown.Body)
		require.NotEmpty(t, key, "the GET after the redirect shows the key")
		require.Contains(t, shown.Body, "shown this once")
		require.NotContains(t, sealed, key, "the pending flash is sealed, not the key")
		require.NotContains(t, sealed, strings.TrimPrefix(key, "am_"))
		require.Equal(t, http.StatusOK, e.Do(http.MethodGet, "/v1/agent-memory/proposals", key, nil).Status)
		require.Zero(t, count(t, e, "console_sessions", "flash <> ''"), "a shown flash is emptied")

		// A reload of the GET shows the key no more.
		again := admin.get(r.Location)
		require.NotContains(t, again.Body, key)
		require.Contains(t, again.Body, "shown once, on the first page after minting")

		// The same form sent again (the browser's resubmit): nothing more is minted.
		r = admin.post("/console/keys", form)
		require.Equal(t, http.StatusSeeOther, r.Status)
		require.Equal(t, "/console/keys?m=resubmitted", r.Location)
		require.Contains(t, admin.get(r.Location).Body, "This form was already sent: nothing was done again.")
		require.Equal(t, 1, count(t, e, "api_keys", "name = ?", "Nia"))

		// A double click: the same form twice at once mints one key.
		form.Set("name", "Ola")
		form.Set("form", admin.forms[0])
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, admin.base+"/console/keys", strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				res, err := admin.c.Do(req)
				if err == nil {
					statuses[i] = res.StatusCode
					res.Body.Close()
				}
			}()
		}
		wg.Wait()
		require.Equal(t, []int{http.StatusSeeOther, http.StatusSeeOther}, statuses)
		require.Equal(t, 1, count(t, e, "api_keys", "name = ?", "Ola"))

		// Without a one-time token, or with another session's: 403, nothing minted.
		admin.get("/console/keys")
		other := signIn(t, e, e.AdminKey)
		other.get("/console/keys")
		for _, tok := range []string{"", "forged.token", other.forms[0]} {
			r = admin.post("/console/keys", url.Values{"kind": {"person"}, "name": {"Pia"}, "roles": {"reviewer"}, "form": {tok}})
			require.Equal(t, http.StatusForbidden, r.Status, tok)
		}
		require.Zero(t, count(t, e, "api_keys", "name = ?", "Pia"))

		// A refused form gives its token back: corrected, the same token works once.
		admin.get("/console/keys")
		tok := admin.forms[0]
		r = admin.post("/console/keys", url.Values{"kind": {"person"}, "name": {"Pia"}, "roles": {"no-such-role"}, "form": {tok}})
		require.Equal(t, http.StatusBadRequest, r.Status, r.Body)
		r = admin.post("/console/keys", url.Values{"kind": {"person"}, "name": {"Pia"}, "roles": {"reviewer"}, "form": {tok}})
		require.Equal(t, http.StatusSeeOther, r.Status)
		require.Equal(t, "/console/keys?m=key_minted", r.Location)
		r = admin.post("/console/keys", url.Values{"kind": {"person"}, "name": {"Pia"}, "roles": {"reviewer"}, "form": {tok}})
		require.Equal(t, "/console/keys?m=resubmitted", r.Location)
		require.Equal(t, 1, count(t, e, "api_keys", "name = ?", "Pia"))
	})
}

// Issue 27: every state-changing form answers a redirect and does nothing twice when sent
// again; the resubmission returns to the screen it came from.
func TestConsoleFormsDoNothingTwice(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		e.AgentKey("shop-bot", "acme", "agent_memory")
		b := signIn(t, e, e.PersonKey("Ivo", "integration", "admin", "compliance"))
		resend := func(path string, form url.Values) (first, second page) {
			t.Helper()
			b.get("/console/keys")
			form.Set("form", b.forms[0])
			first = b.post(path, form)
			require.Equal(t, http.StatusSeeOther, first.Status, "%s: %s", path, first.Body)
			second = b.post(path, form)
			require.Equal(t, http.StatusSeeOther, second.Status, path)
			require.True(t, strings.HasSuffix(second.Location, "m=resubmitted"), second.Location)
			return first, second
		}
		note := url.Values{"agent": {"shop-bot"}, "kind": {"procedure"}, "title": {"Returns"}, "body": {"Offer an exchange."}, "visibility": {"source"}}
		first, second := resend("/console/notes", note)
		require.Equal(t, 1, count(t, e, "notes", "source_id = ?", "shop-bot")) // titles are sealed (issue 29 §1)
		require.Equal(t, "/console/notes?m=resubmitted", second.Location)
		id := strings.TrimPrefix(strings.Split(first.Location, "?")[0], "/console/notes/")

		edit := url.Values{"kind": {"procedure"}, "title": {"Returns"}, "body": {"Offer an exchange within 30 days."}, "visibility": {"source"}}
		_, second = resend("/console/notes/"+id+"/versions", edit)
		require.Equal(t, 2, count(t, e, "notes", "source_id = ?", "shop-bot"), "one new version, not two")
		require.Equal(t, "/console/notes/"+id+"?m=resubmitted", second.Location)

		e.PersonKey("Mallory", "reviewer")
		var keyID string
		require.NoError(t, e.DB.NewSelect().Table("api_keys").Column("id").Where("name = ?", "Mallory").Scan(t.Context(), &keyID))
		_, second = resend("/console/keys/"+keyID+"/revoke", url.Values{})
		require.Equal(t, "/console/keys?m=resubmitted", second.Location)
		require.Equal(t, 1, count(t, e, "receipts", "action = ?", "key.revoke"))

		resend("/console/settings/object-types", url.Values{"document": {`{"types":[]}`}})
		require.Equal(t, 1, count(t, e, "receipts", "action = ? AND object_ids LIKE ?", "document.put", `%object-types%`))
	})
}

// An agent key minted in the Console carries the purposes typed in (comma-separated), and the
// Keys screen shows them (QT-2).
func TestConsoleMintAgentKeyWithPurposes(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		admin := signIn(t, e, e.AdminKey)
		admin.get("/console/keys")
		form := url.Values{"kind": {"agent"}, "agent": {"shop-bot"}, "vendor": {"acme-ai"}, "scopes": {"agent_memory"},
			"purposes": {" customer-support, refunds ,"}, "form": {admin.forms[len(admin.forms)-1]}}
		r := admin.post("/console/keys", form)
		require.Equal(t, http.StatusSeeOther, r.Status, r.Body)
		var purposes string
		require.NoError(t, e.DB.NewSelect().Table("api_keys").Column("purposes").Where("agent = ?", "shop-bot").Scan(t.Context(), &purposes))
		require.JSONEq(t, `["customer-support","refunds"]`, purposes)
		shown := admin.get(r.Location)
		require.Contains(t, shown.Body, "for customer-support, refunds")

		admin.get("/console/keys")
		form = url.Values{"kind": {"agent"}, "agent": {"bad-bot"}, "vendor": {"acme-ai"}, "purposes": {"Refunds!"}, "form": {admin.forms[len(admin.forms)-1]}}
		r = admin.post("/console/keys", form)
		require.Equal(t, http.StatusBadRequest, r.Status)
		require.Contains(t, r.Body, "purpose")
		require.Zero(t, count(t, e, "api_keys", "agent = ?", "bad-bot"))
	})
}
