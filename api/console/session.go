package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/api/httpfault"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/consolesessions"
	"github.com/agentmemory/agentmemory/models"
)

// Cookie names: the session, and the sign-in form's CSRF token (before there is a session).
const (
	SessionCookie = "am_console"
	LoginCookie   = "am_console_login"
	// CSRFField is the hidden form field every state-changing form carries.
	CSRFField = "csrf"
)

const (
	principalKey = "console_principal"
	csrfKey      = "console_csrf"
	sessionKey   = "console_session"
)

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func tokenHash(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

// csrfFor is the CSRF token of a session: an HMAC of a fixed label under the session token,
// so it is bound to the session and never stored.
func csrfFor(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("console csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func sameToken(a, b string) bool {
	return a != "" && len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// secure reports whether the request came over TLS (directly or through a proxy saying so):
// the cookies are then Secure.
func secure(c *gin.Context) bool {
	return c.Request.TLS != nil || strings.EqualFold(c.GetHeader("X-Forwarded-Proto"), "https")
}

func setCookie(c *gin.Context, name, value string, maxAge int) {
	http.SetCookie(c.Writer, &http.Cookie{
		Name: name, Value: value, Path: "/console", MaxAge: maxAge,
		HttpOnly: true, Secure: secure(c), SameSite: http.SameSiteStrictMode,
	})
}

// sessions is the store of the Console's sessions (internal/consolesessions).
func (h *Console) sessions() consolesessions.Store { return consolesessions.Store{DB: h.DB} }

func principalOf(c *gin.Context) auth.Principal { return c.MustGet(principalKey).(auth.Principal) }

// loginPage shows the sign-in form, with a fresh CSRF token in a cookie and the form.
func (h *Console) loginPage(c *gin.Context) {
	h.showLogin(c, http.StatusOK, "")
}

func (h *Console) showLogin(c *gin.Context, status int, msg string) {
	tok := randomToken()
	setCookie(c, LoginCookie, tok, 600)
	c.Set(csrfKey, tok)
	h.render(c, status, "login", "Sign in", msg, nil)
}

// login checks the form's CSRF token against its cookie, then the key: a person key starts a
// session (console.sign_in receipt); an agent key, or an unknown or revoked one, is refused.
func (h *Console) login(c *gin.Context) {
	ck, _ := c.Cookie(LoginCookie)
	if !sameToken(ck, c.PostForm(CSRFField)) {
		h.forbidCSRF(c)
		return
	}
	p, err := auth.Authenticate(c.Request.Context(), h.DB, strings.TrimSpace(c.PostForm("key")))
	if err != nil {
		h.showLogin(c, http.StatusUnauthorized, "That key is unknown or revoked.")
		return
	}
	if p.IsAgent() {
		h.showLogin(c, http.StatusForbidden, "Agent keys cannot sign in to the Console: use a person key.")
		return
	}
	tok := randomToken()
	now := h.Now().UTC()
	row := models.ConsoleSession{ID: tokenHash(tok), SpaceID: p.SpaceID, PersonKey: p.KeyID,
		CreatedAt: now, SeenAt: now, ExpiresAt: now.Add(h.MaxAge)}
	// Sessions past their expiry that nobody came back to, and spent form tokens of sessions
	// that cannot be alive any more, are swept here (Store.Start).
	if err := h.sessions().Start(c.Request.Context(), row, now, h.IdleTimeout, h.MaxAge); err != nil {
		h.fail(c, err)
		return
	}
	setCookie(c, LoginCookie, "", -1)
	setCookie(c, SessionCookie, tok, int(h.MaxAge/time.Second))
	c.Redirect(http.StatusSeeOther, "/console")
}

// session loads the session of the cookie and its person key (checked on every request:
// revoked, it ends the session), enforces the idle and absolute expiry, and on a POST the
// CSRF token (403 without it). No session: GET is sent to the sign-in page, anything else 401.
func (h *Console) session() gin.HandlerFunc {
	return func(c *gin.Context) {
		tok, _ := c.Cookie(SessionCookie)
		p, ok := h.load(c, tok)
		if !ok {
			setCookie(c, SessionCookie, "", -1)
			if c.Request.Method == http.MethodGet {
				c.Redirect(http.StatusSeeOther, "/console/login")
			} else {
				c.Status(http.StatusUnauthorized)
			}
			c.Abort()
			return
		}
		csrf := csrfFor(tok)
		if c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead && !sameToken(csrf, c.PostForm(CSRFField)) {
			h.forbidCSRF(c)
			return
		}
		c.Set(principalKey, p)
		c.Set(csrfKey, csrf)
		c.Set(sessionKey, tok)
		c.Next()
	}
}

// load resolves a session token to its person's Principal, ending (deleting) a session past
// its expiry or whose key is revoked.
func (h *Console) load(c *gin.Context, tok string) (auth.Principal, bool) {
	if tok == "" {
		return auth.Principal{}, false
	}
	ctx := c.Request.Context()
	id := tokenHash(tok)
	row, found, err := h.sessions().Get(ctx, id)
	if err != nil {
		h.Logger.ErrorContext(ctx, "console: load session", httpfault.Scrubbed(err)...)
		return auth.Principal{}, false
	}
	if !found {
		return auth.Principal{}, false
	}
	now := h.Now().UTC()
	end := func() (auth.Principal, bool) {
		_ = h.sessions().End(ctx, id) // best effort: an undeleted session row fails this check again and ends at its expiry
		return auth.Principal{}, false
	}
	if !now.Before(row.ExpiresAt.UTC()) || now.Sub(row.SeenAt.UTC()) >= h.IdleTimeout {
		return end()
	}
	p, err := auth.ByID(ctx, h.DB, row.SpaceID, row.PersonKey)
	if err != nil || p.IsAgent() {
		return end()
	}
	if now.Sub(row.SeenAt.UTC()) > 10*time.Second {
		_ = h.sessions().Touch(ctx, id, now) // best effort: a missed seen_at update only shortens the idle window by one interval
	}
	return p, true
}

// logout ends the session.
func (h *Console) logout(c *gin.Context) {
	tok, _ := c.Cookie(SessionCookie)
	// Best effort: an undeleted row is ended by its expiry all the same, and form uses of an
	// ended session match no session.
	_ = h.sessions().SignOut(c.Request.Context(), tokenHash(tok))
	setCookie(c, SessionCookie, "", -1)
	c.Redirect(http.StatusSeeOther, "/console/login?m=signed_out")
}

func (h *Console) forbidCSRF(c *gin.Context) {
	c.Header("Content-Type", "text/plain; charset=utf-8")
	c.String(http.StatusForbidden, "403 Forbidden: the form's CSRF token is missing or wrong. Reload the page and try again.")
	c.Abort()
}
