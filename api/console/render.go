package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/api/httpfault"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
)

// view is what every page template gets.
type view struct {
	Title  string
	Active string
	Nav    []screen
	P      *auth.Principal
	CSRF   string
	Flash  string
	Error  string
	// Quiet leaves out the flash named by ?m= (the page says it itself).
	Quiet   bool
	Kinds   []string
	Data    any
	Now     time.Time
	Version string
	// sess is the session token: Once derives the forms' one-time tokens from it.
	sess string
}

// Once is a fresh one-time token for one state-changing form of the page (FormField; each
// call a new one, so that each form of a page is spent on its own).
func (v view) Once() string {
	if v.sess == "" {
		return ""
	}
	return newFormToken(v.sess)
}

// flashes are the messages a redirect may name with ?m= (a fixed code, never data).
var flashes = map[string]string{
	"signed_out":      "You are signed out.",
	"note_created":    "Note created.",
	"note_proposed":   "The note was stored as a proposal waiting for review.",
	"note_versioned":  "Saved as a new version.",
	"note_retired":    "Note retired.",
	"approved":        "Proposal approved: the note is live.",
	"rejected":        "Proposal rejected.",
	"decision_sent":   "Decision sent: the distillation workflow is applying it.",
	"saved":           "Document saved.",
	"change_proposed": "Change proposed: it is applied when a second person holding security approves it.",
	"change_applied":  "Change approved: the document is updated.",
	"change_rejected": "Change rejected.",
	"key_revoked":     "Key revoked: it stops working on its next request.",
	"key_minted":      "Key minted. Its secret was shown once, on the first page after minting.",
	"resubmitted":     "This form was already sent: nothing was done again.",
	"erasure_start":   "Erasure started.",
	"residue_decided": "Residue decided (receipted).",
	"export_start":    "Export started.",
	"duplicate":       "An identical note already exists: nothing was stored.",
	"grant_added":     "Grant added: in force on the next request.",
	"grant_revoked":   "Grant revoked: refused from the next request on.",
	"grant_proposed":  "Proposed as a change request of board-grants: it applies when a second person holding security approves it (Settings).",
	"bridge_proposed": "Bridge proposed: it needs a second person holding security here, and the same bridge approved by the other space.",
	"bridge_approved": "Bridge approved on this side: it opens once the other space approves the same bridge.",
	"bridge_removed":  "Bridge removed: no read crosses it from the next request on.",
}

var funcs = template.FuncMap{
	"date": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04 UTC")
		case *time.Time:
			if v == nil {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04 UTC")
		}
		return ""
	},
	"age": ageOf,
	"ago": func(now, t time.Time) string {
		if a := ageOf(now, t); a != "just now" {
			return a + " ago"
		}
		return "just now"
	},
	"join": strings.Join,
	"short": func(id string) string {
		if len(id) <= 18 {
			return id
		}
		return id[:18] + "…"
	},
	"list": func(xs ...string) []string { return xs },
	"sub":  func(a, b int) int { return a - b },
	"str": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"badge": func(status string) string {
		switch status {
		case "active", "approved", "applied", "completed", "ok", "valid":
			return "badge ok"
		case "pending", "drafting", "running":
			return "badge wait"
		case "rejected", "failed", "expired", "revoked", "invalid", "broken":
			return "badge bad"
		}
		return "badge"
	},
	"deref": func(n *int64) int64 {
		if n == nil {
			return 0
		}
		return *n
	},
	"has": func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	},
}

// parsePages parses each page template with the layout: one template set per page.
func parsePages() map[string]*template.Template {
	out := map[string]*template.Template{}
	files, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" || name == "noteform" {
			continue
		}
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/noteform.html", f))
	}
	return out
}

// render writes page name with data inside the layout.
func (h *Console) render(c *gin.Context, status int, name, title, errMsg string, data any) {
	h.renderView(c, status, name, view{Title: title, Error: errMsg, Data: data})
}

func (h *Console) renderView(c *gin.Context, status int, name string, v view) {
	if x, ok := c.Get(principalKey); ok {
		p := x.(auth.Principal)
		v.P = &p
		for _, s := range screens {
			if p.HasAnyRole(s.Roles...) {
				v.Nav = append(v.Nav, s)
			}
		}
	}
	v.CSRF = c.GetString(csrfKey)
	v.sess = c.GetString(sessionKey)
	if v.Flash == "" && !v.Quiet {
		v.Flash = flashes[c.Query("m")]
	}
	if v.Active == "" {
		v.Active = v.Title
	}
	v.Now = h.Now().UTC()
	t := h.pages[name]
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		httpfault.LogInternal(c.Request.Context(), h.Logger, "console: render", err, "page", name)
		c.String(http.StatusInternalServerError, "internal error")
		return
	}
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// statusOf maps a domain error to the page's HTTP status: the API's table (httpfault).
func statusOf(err error) int { return httpfault.StatusOf(err) }

// message is what a page says of err: a domain error's message (which never carries
// personal data or secrets), else a generic line (the cause is logged).
func (h *Console) message(c *gin.Context, err error) string {
	if fe := fault.As(err); fe != nil {
		return fe.Message
	}
	httpfault.LogInternal(c.Request.Context(), h.Logger, "console: internal error", err, "route", c.FullPath())
	return "Something went wrong on the server; try again."
}

// kindsOf returns the personal-data kinds of a gate refusal (never values), or nil.
func kindsOf(err error) []string {
	fe := fault.As(err)
	if fe == nil {
		return nil
	}
	ks, _ := fe.Details["kinds"].([]string)
	return ks
}

// fail renders the error page for err with its status.
func (h *Console) fail(c *gin.Context, err error) {
	h.renderView(c, statusOf(err), "error", view{Title: "Error", Error: h.message(c, err)})
}

// allow checks p holds one of the roles of screen name; else renders 403 and returns false.
func (h *Console) allow(c *gin.Context, name string) (auth.Principal, bool) {
	p := principalOf(c)
	if err := p.RequireRole(roleOf(name)...); err != nil {
		h.renderView(c, http.StatusForbidden, "error", view{Title: name, Error: "Your key's roles do not include this screen (" + strings.Join(roleOf(name), " or ") + ")."})
		return p, false
	}
	return p, true
}

// redirect answers 303 to path with flash code m.
func redirect(c *gin.Context, path, m string) {
	if m != "" {
		if strings.Contains(path, "?") {
			path += "&m=" + m
		} else {
			path += "?m=" + m
		}
	}
	c.Redirect(http.StatusSeeOther, path)
}

// ageOf is how long ago t was at now, coarsely ("just now", "5 min", "3 h", "4 days").
func ageOf(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}
