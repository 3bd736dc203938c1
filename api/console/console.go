// Package console is the Console (issue 15, CON-1, CON-2): server-rendered pages at /console
// for the people of a space, signed in with a person key. Every action goes through the same
// domain services as the REST API (the same gate, limits, receipts and events); key minting
// and revocation, erasures and exports go through the API server's own methods (Ops), so
// there is no second write path. Pages use html/template and one embedded style sheet: no
// script, plain forms, labelled controls.
//
// Security: a server-side session (console_sessions, only the token's SHA-256 stored) in an
// HttpOnly, SameSite=Strict cookie (Secure behind TLS) with idle and absolute expiry, the
// person key checked on every request (a revoked key ends the session); a CSRF token on every
// state-changing form (a POST without it is 403); a Content-Security-Policy without script,
// X-Frame-Options DENY; no personal data or scope ids in URLs. Each handler authorises by
// role whatever the page shows, and the services check again.
package console

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/boards"
	"github.com/agentmemory/agentmemory/internal/changes"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/promptctx"
	"github.com/agentmemory/agentmemory/internal/proposals"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/internal/subjects"
	"github.com/agentmemory/agentmemory/internal/turns"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Ops are the write paths the Console shares with the REST API's handlers (*api.Server
// implements them): each checks the role and records its receipt exactly as REST does.
type Ops interface {
	MintKey(ctx context.Context, p auth.Principal, spec auth.KeySpec) (keyID, key string, err error)
	RevokeKey(ctx context.Context, p auth.Principal, keyID string) error
	StartErasure(ctx context.Context, p auth.Principal, req compliance.ErasureRequest) (string, error)
	StartExport(ctx context.Context, p auth.Principal, req compliance.ExportRequest) (string, error)
}

// Defaults of the session lifetimes.
const (
	DefaultIdleTimeout = 30 * time.Minute
	DefaultMaxAge      = 12 * time.Hour
)

// Deps are the services the Console calls; the API server passes its own.
type Deps struct {
	DB        *bun.DB
	Logger    *slog.Logger
	Notes     *notes.Service
	Proposals *proposals.Service
	// Context is the context call's service (POST /v1/context): the block preview runs it.
	Context *promptctx.Service
	// Knowledge lists the bases the block preview may retrieve from (nil: no knowledge part).
	Knowledge *knowledge.Service
	Docs      spaces.Documents
	// Changes are the documents' change requests (the Settings screen's approved diff).
	Changes *changes.Service
	// Boards are the boards, their grants and the bridges (issue 31; nil: the Boards and
	// Bridges screens answer 503).
	Boards     *boards.Service
	Compliance *compliance.Service
	Subjects   *subjects.Service
	State      *state.Service
	Turns      *turns.Service
	// Signer's public keys check certificates' signatures (nil: shown as not checked).
	Signer *signing.Signer
	Ops    Ops
	Now    func() time.Time
	// IdleTimeout ends a session unused this long (DefaultIdleTimeout when zero); MaxAge
	// ends any session this long after sign-in (DefaultMaxAge when zero).
	IdleTimeout time.Duration
	MaxAge      time.Duration
}

// Console serves the pages.
type Console struct {
	Deps
	pages map[string]*template.Template
}

// New parses the embedded templates and returns the Console.
func New(d Deps) *Console {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.IdleTimeout == 0 {
		d.IdleTimeout = DefaultIdleTimeout
	}
	if d.MaxAge == 0 {
		d.MaxAge = DefaultMaxAge
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &Console{Deps: d, pages: parsePages()}
}

// Mount adds the Console's routes under /console to r: the public ones (assets, sign-in),
// then, behind a session, the memory screens and the governance screens.
func (h *Console) Mount(r gin.IRouter) {
	g := r.Group("/console", h.headers())
	static, _ := fs.Sub(assets, "static") // cannot fail: "static" is a valid path of the embedded tree
	g.GET("/static/*file", func(c *gin.Context) {
		c.Header("Cache-Control", "public, max-age=3600")
		c.FileFromFS(c.Param("file"), http.FS(static))
	})
	g.GET("/favicon.ico", h.favicon)
	r.GET("/favicon.ico", h.headers(), h.favicon)
	g.GET("/login", h.loginPage)
	g.POST("/login", h.login)

	a := g.Group("", h.session())
	// Every state-changing form is post/redirect/get and spends a one-time token (issue 27);
	// the sign-out, the erasure preview, the profile lookup and the block preview change nothing.
	once := h.once()
	a.GET("", h.home)
	a.POST("/logout", h.logout)
	h.mountMemory(a, once)
	h.mountGovernance(a, once)
}

// mountMemory adds the signed-in screens of the space's memory and its configuration to a:
// notes, proposals, settings, boards and bridges; once guards every state-changing form.
func (h *Console) mountMemory(a *gin.RouterGroup, once gin.HandlerFunc) {
	a.GET("/notes", h.notesPage)
	a.GET("/notes/new", h.newNotePage)
	a.POST("/notes", once, h.createNote)
	a.GET("/notes/block", h.blockPage)
	a.POST("/notes/block", h.previewContext) // a preview: CSRF, no one-time token (it changes nothing)
	a.GET("/notes/:id", h.notePage)
	a.POST("/notes/:id/versions", once, h.editNote)
	a.POST("/notes/:id/retire", once, h.retireNote)

	a.GET("/proposals", h.proposalsPage)
	a.GET("/proposals/:id", h.proposalPage)
	a.POST("/proposals/:id/approve", once, h.approve)
	a.POST("/proposals/:id/reject", once, h.reject)

	a.GET("/settings", h.settingsPage)
	a.POST("/settings/:name", once, h.saveDocument)
	a.POST("/settings/:name/changes", once, h.proposeChange)
	a.POST("/settings/:name/changes/:id/approve", once, h.approveChange)
	a.POST("/settings/:name/changes/:id/reject", once, h.rejectChange)

	a.GET("/boards", h.boardsPage)
	a.POST("/boards/:type/grants", once, h.grantBoard)
	a.POST("/boards/:type/grants/:id/revoke", once, h.revokeBoardGrant)

	a.GET("/bridges", h.bridgesPage)
	a.POST("/bridges", once, h.proposeBridge)
	a.POST("/bridges/changes/:id/approve", once, h.approveBridge)
	a.POST("/bridges/changes/:id/reject", once, h.rejectBridge)
	a.POST("/bridges/:id/revoke", once, h.revokeBridge)
}

// mountGovernance adds the signed-in governance screens to a: compliance, profiles,
// receipts, keys and usage; once guards every state-changing form.
func (h *Console) mountGovernance(a *gin.RouterGroup, once gin.HandlerFunc) {
	a.GET("/compliance", h.compliancePage)
	a.POST("/compliance/erasures/preview", h.previewErasure)
	a.POST("/compliance/erasures", once, h.startErasure)
	a.GET("/compliance/erasures/:id", h.erasurePage)
	a.GET("/compliance/erasures/:id/certificate", h.certificateDownload)
	a.POST("/compliance/erasures/:id/residue/:finding", once, h.decideResidue)
	a.POST("/compliance/exports", once, h.startExport)
	a.GET("/compliance/exports/:id/package", h.exportPackage)

	a.GET("/profiles", h.profilesPage)
	a.POST("/profiles", h.profileLookup)

	a.GET("/receipts", h.receiptsPage)
	a.GET("/receipts/verify", h.verifyReceipts)
	a.GET("/receipts/:id", h.receiptDetail)

	a.GET("/keys", h.keysPage)
	a.POST("/keys", once, h.mintKey)
	a.POST("/keys/:id/revoke", once, h.revokeKey)
	a.GET("/usage", h.usagePage)
}

// csp allows the Console's own style sheet and forms, and nothing else: no script at all.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// headers sets the security headers of every Console answer.
func (h *Console) headers() gin.HandlerFunc {
	return func(c *gin.Context) {
		setHeaders(c)
		c.Next()
	}
}

// setHeaders sets the security headers every Console answer carries (CON-1; issue 27: its
// 404 and 405 pages too, see Unmatched): the CSP, X-Frame-Options DENY, nosniff,
// no-referrer, and no-store on everything but the static files.
func setHeaders(c *gin.Context) {
	c.Header("Content-Security-Policy", csp)
	c.Header("X-Frame-Options", "DENY")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "no-referrer")
	if c.Request.Method != http.MethodGet || c.Param("file") == "" {
		c.Header("Cache-Control", "no-store")
	}
}

// screen is one navigation entry: its link text, path and the roles that may use it.
type screen struct {
	Name  string
	Path  string
	Roles []string
}

// screens are the navigation, in order; the link texts are the screens' names.
var screens = []screen{
	{"Notes", "/console/notes", []string{auth.RoleIntegration, auth.RoleAdmin}},
	{"Proposals", "/console/proposals", []string{auth.RoleReviewer, auth.RoleAdmin}},
	{"Settings", "/console/settings", []string{auth.RoleSecurity, auth.RoleAdmin, auth.RoleIntegration}},
	{"Boards", "/console/boards", []string{auth.RoleAdmin, auth.RoleSecurity, auth.RoleIntegration, auth.RoleCompliance}},
	{"Bridges", "/console/bridges", []string{auth.RoleSecurity, auth.RoleAdmin}},
	{"Compliance", "/console/compliance", []string{auth.RoleCompliance}},
	{"Profiles", "/console/profiles", []string{auth.RoleIntegration, auth.RoleAdmin, auth.RoleCompliance, auth.RoleSecurity}},
	{"Receipts", "/console/receipts", []string{auth.RoleAdmin, auth.RoleCompliance}},
	{"Keys", "/console/keys", []string{auth.RoleAdmin}},
	{"Usage", "/console/usage", []string{auth.RoleAdmin, auth.RoleSecurity}},
}

// roleOf returns the roles of screen name.
func roleOf(name string) []string {
	for _, s := range screens {
		if s.Name == name {
			return s.Roles
		}
	}
	return nil
}

// home sends a person to the first screen their roles allow.
func (h *Console) home(c *gin.Context) {
	p := principalOf(c)
	for _, s := range screens {
		if p.HasAnyRole(s.Roles...) {
			c.Redirect(http.StatusSeeOther, s.Path)
			return
		}
	}
	h.render(c, http.StatusOK, "empty", "Console", "", nil)
}
