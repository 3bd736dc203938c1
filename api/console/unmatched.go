package console

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/api/httpfault"
)

// Prefix is the path under which the Console answers.
const Prefix = "/console"

// Owns reports whether path is the Console's: /console or anything below it.
func Owns(path string) bool {
	return path == Prefix || strings.HasPrefix(path, Prefix+"/")
}

// Unmatched returns the handler for a request that matches no route (status 404) or no
// method of a route (status 405). Under /console it answers the Console's own HTML page, with
// every security header of the Console's other answers (issue 27: CSP, X-Frame-Options,
// nosniff, no-referrer, no-store) and the navigation when a session is open, and stops the
// chain; any other path goes on to the next handler (the API's JSON error).
func (h *Console) Unmatched(status int) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !Owns(c.Request.URL.Path) {
			c.Next()
			return
		}
		setHeaders(c)
		h.openSession(c)
		msg := "There is no page at this address."
		if status == http.StatusMethodNotAllowed {
			c.Header("Allow", "GET, POST")
			msg = "This page does not take that method."
		}
		title := "Page not found"
		if status == http.StatusMethodNotAllowed {
			title = "Method not allowed"
		}
		h.renderView(c, status, "error", view{Title: title, Data: msg})
		c.Abort()
	}
}

// openSession sets the principal of a valid session cookie, if any, so that an error page
// shows the navigation; it never ends or redirects (Unmatched pages are shown either way).
func (h *Console) openSession(c *gin.Context) {
	tok, err := c.Cookie(SessionCookie)
	if err != nil || tok == "" {
		return // no session: the page is shown without navigation
	}
	if p, ok := h.load(c, tok); ok {
		c.Set(principalKey, p)
		c.Set(csrfKey, csrfFor(tok))
		c.Set(sessionKey, tok)
	}
}

// favicon serves the Console's icon (also at /favicon.ico, where browsers look first).
func (h *Console) favicon(c *gin.Context) {
	data, err := assets.ReadFile("static/favicon.ico")
	if err != nil { // embedded at build time: cannot fail short of a broken build
		h.Logger.ErrorContext(c.Request.Context(), "console: favicon", httpfault.Scrubbed(err)...)
		c.Status(http.StatusInternalServerError)
		return
	}
	c.Header("Cache-Control", "public, max-age=86400")
	c.Data(http.StatusOK, "image/x-icon", data)
}
