package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/api/httpfault"
	"github.com/agentmemory/agentmemory/models"
)

// FormField is the hidden field of a state-changing form holding its one-time token.
const FormField = "form"

// flashTTL is how long a pending flash (a minted key) waits for its screen.
const flashTTL = 10 * time.Minute

// newFormToken is a fresh one-time form token of the session whose token is sess: a random
// nonce and its HMAC under the session token ("nonce.mac", base64url), so that it is bound to
// the session and needs no storage until it is spent.
func newFormToken(sess string) string {
	var b [18]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+: it panics instead)
	nonce := base64.RawURLEncoding.EncodeToString(b[:])
	return nonce + "." + formMAC(sess, nonce)
}

func formMAC(sess, nonce string) string {
	m := hmac.New(sha256.New, []byte(sess))
	m.Write([]byte("console form\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validFormToken reports whether tok was issued to the session sess by newFormToken.
func validFormToken(sess, tok string) bool {
	nonce, mac, ok := strings.Cut(tok, ".")
	return ok && len(nonce) == 24 && sameToken(formMAC(sess, nonce), mac)
}

// once guards a state-changing form (issue 27): the form's one-time token must be one this
// session was given (else 403, nothing done), and is spent here, atomically, before the
// action runs. A token already spent (a reload after POST, a double click, back and
// resubmit) does nothing again: 303 to the form's screen with "resubmitted". When the action
// is refused or fails (status 400 or more: nothing changed), the token is given back, so the
// same form may be sent again once corrected.
func (h *Console) once() gin.HandlerFunc {
	return func(c *gin.Context) {
		sess := c.GetString(sessionKey)
		tok := c.PostForm(FormField)
		if !validFormToken(sess, tok) {
			c.Header("Content-Type", "text/plain; charset=utf-8")
			c.String(http.StatusForbidden, "403 Forbidden: the form's one-time token is missing or wrong. Reload the page and try again.")
			c.Abort()
			return
		}
		ctx := c.Request.Context()
		use := models.ConsoleFormUse{ID: tokenHash(tok), SessionID: tokenHash(sess), UsedAt: h.Now().UTC()}
		spent, err := h.sessions().SpendForm(ctx, use)
		if err != nil {
			h.fail(c, err)
			c.Abort()
			return
		}
		if !spent {
			redirect(c, backOf(c), "resubmitted")
			c.Abort()
			return
		}
		c.Next()
		if c.Writer.Status() >= http.StatusBadRequest {
			if err := h.sessions().GiveBackForm(ctx, use.ID); err != nil {
				// The token stays spent: the person reloads the page for a fresh one.
				h.Logger.WarnContext(ctx, "console: give back a form token", httpfault.Scrubbed(err)...)
			}
		}
	}
}

// backOf is the screen a resubmitted form returns to: the note or proposal it acted on, else
// the screen of its path (/console/keys for /console/keys/{id}/revoke).
func backOf(c *gin.Context) string {
	parts := strings.Split(strings.TrimPrefix(c.FullPath(), Prefix+"/"), "/")
	screen := Prefix + "/" + parts[0]
	if id := c.Param("id"); id != "" && (parts[0] == "notes" || parts[0] == "proposals") {
		return screen + "/" + id
	}
	return screen
}

// flash is a message that must not travel in a URL (a freshly minted key): kept sealed in the
// session row until the next GET of its screen shows it, once.
type flash struct {
	Screen string    `json:"screen"`
	KeyID  string    `json:"key_id,omitempty"`
	Key    string    `json:"key,omitempty"`
	At     time.Time `json:"at"`
}

// flashAEAD is the AES-256-GCM of the session's flashes, keyed by an HMAC of the session
// token: the database, which holds only the token's hash, cannot open them.
func flashAEAD(sess string) cipher.AEAD {
	m := hmac.New(sha256.New, []byte(sess))
	m.Write([]byte("console flash"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // AES always has a GCM mode
	}
	return aead
}

// sealFlash stores f as the session's pending flash (replacing any).
func (h *Console) sealFlash(c *gin.Context, f flash) error {
	sess := c.GetString(sessionKey)
	plain, err := json.Marshal(f)
	if err != nil {
		return err
	}
	aead := flashAEAD(sess)
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce) // never fails, see newFormToken
	sealed := base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(tokenHash(sess))))
	return h.sessions().SetFlash(c.Request.Context(), tokenHash(sess), sealed)
}

// takeFlash returns the session's pending flash for screen and empties it, or false when
// there is none (or it is older than flashTTL). The emptying is a compare-and-swap on the
// sealed value, so of two GETs at once only one shows it.
func (h *Console) takeFlash(c *gin.Context, screen string) (flash, bool) {
	sess := c.GetString(sessionKey)
	ctx := c.Request.Context()
	sealed, err := h.sessions().Flash(ctx, tokenHash(sess))
	if err != nil || sealed == "" {
		return flash{}, false
	}
	f, err := openFlash(sess, sealed)
	stale := err != nil || h.Now().Sub(f.At) >= flashTTL // emptied, never shown
	if !stale && f.Screen != screen {
		return flash{}, false // another screen's: left for it
	}
	if took, err := h.sessions().TakeFlash(ctx, tokenHash(sess), sealed); err != nil || !took || stale {
		return flash{}, false
	}
	return f, true
}

func openFlash(sess, sealed string) (flash, error) {
	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	aead := flashAEAD(sess)
	if err != nil || len(raw) < aead.NonceSize() {
		return flash{}, errors.New("console: flash does not decode")
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(tokenHash(sess)))
	if err != nil {
		return flash{}, err
	}
	var f flash
	return f, json.Unmarshal(plain, &f)
}
