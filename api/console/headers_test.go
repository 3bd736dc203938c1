package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
)

// wantHeaders are the security headers every Console answer carries (CON-1, issue 27).
var wantHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
	"X-Frame-Options":         "DENY",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "no-referrer",
}

// Issue 27: every Console answer, its 404 and 405 pages and not-found ids included, carries
// the security headers; unknown Console paths answer an HTML page, not the API's JSON.
func TestConsoleSecurityHeadersOnEveryAnswer(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		enableNotes(e, nil)
		in := signIn(t, e, e.AdminKey)
		out := newBrowser(t, e)
		cases := []struct {
			name   string
			b      *browser
			method string
			path   string
			status int
			html   bool
		}{
			{"login", out, http.MethodGet, "/console/login", http.StatusOK, true},
			{"screen", in, http.MethodGet, "/console/notes", http.StatusOK, true},
			{"unknown note id", in, http.MethodGet, "/console/notes/anything", http.StatusNotFound, true},
			{"unknown note id, signed out", out, http.MethodGet, "/console/notes/anything", http.StatusSeeOther, false},
			{"unknown proposal id", in, http.MethodGet, "/console/proposals/prop_nope", http.StatusNotFound, true},
			{"unknown erasure id", in, http.MethodGet, "/console/compliance/erasures/er_nope", http.StatusNotFound, true},
			{"unknown receipt id", in, http.MethodGet, "/console/receipts/rcpt_nope", http.StatusNotFound, true},
			{"unknown path", in, http.MethodGet, "/console/nope", http.StatusNotFound, true},
			{"unknown path, signed out", out, http.MethodGet, "/console/nope/deeper", http.StatusNotFound, true},
			{"unknown path below an id", in, http.MethodGet, "/console/notes/x/y/z", http.StatusNotFound, true},
			{"wrong method", in, http.MethodPost, "/console/receipts", http.StatusMethodNotAllowed, true},
			{"wrong method, signed out", out, http.MethodDelete, "/console/login", http.StatusMethodNotAllowed, true},
			{"static file", out, http.MethodGet, "/console/static/console.css", http.StatusOK, false},
			{"missing static file", out, http.MethodGet, "/console/static/nope.css", http.StatusNotFound, false},
			{"favicon", out, http.MethodGet, "/console/favicon.ico", http.StatusOK, false},
			{"root favicon", out, http.MethodGet, "/favicon.ico", http.StatusOK, false},
			{"forbidden screen", signIn(t, e, e.PersonKey("Rui", "reviewer")), http.MethodGet, "/console/keys", http.StatusForbidden, true},
			{"CSRF refusal", in, http.MethodPost, "/console/keys", http.StatusForbidden, false},
		}
		for _, tc := range cases {
			req, err := http.NewRequest(tc.method, tc.b.base+tc.path, strings.NewReader(url.Values{"csrf": {"forged"}}.Encode()))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			p := tc.b.do(req)
			require.Equal(t, tc.status, p.Status, "%s: %s %s", tc.name, tc.method, tc.path)
			for h, v := range wantHeaders {
				require.Equal(t, v, p.Header.Get(h), "%s: header %s of %s %s", tc.name, h, tc.method, tc.path)
			}
			if tc.html {
				require.Equal(t, "text/html; charset=utf-8", p.Header.Get("Content-Type"), tc.name)
				require.Contains(t, p.Body, "agentmemory Console", tc.name)
			}
		}
		// The 404 page of a signed-in person keeps the navigation; the API keeps its JSON.
		require.Contains(t, in.get("/console/nope").Body, ">Receipts<")
		r := e.Do(http.MethodGet, "/v1/nope", e.AdminKey, nil)
		require.Equal(t, http.StatusNotFound, r.Status)
		require.Equal(t, "not_found", r.ErrorCode(t))
		require.Empty(t, r.Header.Get("X-Frame-Options"))
	})
}

// Issue 27: /favicon.ico was 404 on every page. The icon is served, and every page links it.
func TestConsoleFavicon(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		b := newBrowser(t, e)
		for _, path := range []string{"/favicon.ico", "/console/favicon.ico", "/console/static/favicon.ico"} {
			p := b.get(path)
			require.Equal(t, http.StatusOK, p.Status, path)
			require.True(t, strings.HasPrefix(p.Body, "\x00\x00\x01\x00"), "%s is an ICO file", path)
		}
		require.Contains(t, b.get("/console/login").Body, `<link rel="icon" href="/console/static/favicon.ico"`)
	})
}
