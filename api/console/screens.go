package console

import (
	"net/http"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/api/httpfault"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/state"
)

type complianceData struct {
	Erasures []compliance.ErasureView
	Exports  []compliance.ExportView
	Subject  string
	Conv     string
	Preview  *compliance.Preview
}

// compliancePage: erasure and export forms, and their lists with status.
func (h *Console) compliancePage(c *gin.Context) {
	p, ok := h.allow(c, "Compliance")
	if !ok {
		return
	}
	h.renderCompliance(c, p, http.StatusOK, "", complianceData{})
}

func (h *Console) renderCompliance(c *gin.Context, p auth.Principal, status int, errMsg string, d complianceData) {
	ctx := c.Request.Context()
	var err error
	if d.Erasures, err = h.Compliance.ListErasures(ctx, p, 50); err != nil {
		h.fail(c, err)
		return
	}
	if d.Exports, err = h.Compliance.ListExports(ctx, p, 50); err != nil {
		h.fail(c, err)
		return
	}
	h.renderView(c, status, "compliance", view{Title: "Compliance", Error: errMsg, Data: d})
}

func erasureRequest(c *gin.Context) compliance.ErasureRequest {
	return compliance.ErasureRequest{Subject: strings.TrimSpace(c.PostForm("subject")), ConversationID: strings.TrimSpace(c.PostForm("conversation_id"))}
}

// previewErasure: what an erasure of the target would remove, per store (counts only), and a
// confirm form carrying the target in the POST body.
func (h *Console) previewErasure(c *gin.Context) {
	p, ok := h.allow(c, "Compliance")
	if !ok {
		return
	}
	req := erasureRequest(c)
	d := complianceData{Subject: req.Subject, Conv: req.ConversationID}
	pv, err := h.Compliance.PreviewErasure(c.Request.Context(), p, req)
	if err != nil {
		h.renderCompliance(c, p, statusOf(err), h.message(c, err), d)
		return
	}
	d.Preview = &pv
	h.renderCompliance(c, p, http.StatusOK, "", d)
}

// startErasure: the confirm step; Ops.StartErasure as POST /v1/erasures.
func (h *Console) startErasure(c *gin.Context) {
	p, ok := h.allow(c, "Compliance")
	if !ok {
		return
	}
	req := erasureRequest(c)
	if c.PostForm("confirm") != "yes" {
		h.renderCompliance(c, p, http.StatusBadRequest, "Preview the erasure, then confirm it.", complianceData{Subject: req.Subject, Conv: req.ConversationID})
		return
	}
	id, err := h.Ops.StartErasure(c.Request.Context(), p, req)
	if err != nil {
		h.renderCompliance(c, p, statusOf(err), h.message(c, err), complianceData{Subject: req.Subject, Conv: req.ConversationID})
		return
	}
	redirect(c, "/console/compliance/erasures/"+id, "erasure_start")
}

// decideResidue: compliance.Service.DecideResidue as POST /v1/erasures/{id}/residue/{finding}
// (issue 29 §1b), then back to the erasure's page.
func (h *Console) decideResidue(c *gin.Context) {
	p, ok := h.allow(c, "Compliance")
	if !ok {
		return
	}
	id := c.Param("id")
	if _, err := h.Compliance.DecideResidue(c.Request.Context(), p, id, c.Param("finding"), compliance.ResidueDecision{Decision: c.PostForm("decision")}); err != nil {
		h.fail(c, err)
		return
	}
	redirect(c, "/console/compliance/erasures/"+id, "residue_decided")
}

// startExport: Ops.StartExport as POST /v1/exports (the handle in the POST body).
func (h *Console) startExport(c *gin.Context) {
	p, ok := h.allow(c, "Compliance")
	if !ok {
		return
	}
	if _, err := h.Ops.StartExport(c.Request.Context(), p, compliance.ExportRequest{Subject: strings.TrimSpace(c.PostForm("subject"))}); err != nil {
		h.renderCompliance(c, p, statusOf(err), h.message(c, err), complianceData{})
		return
	}
	redirect(c, "/console/compliance", "export_start")
}

// exportPackage: the package as a JSON download (compliance.Service.PackageJSON, with its
// receipt).
func (h *Console) exportPackage(c *gin.Context) {
	p, ok := h.allow(c, "Compliance")
	if !ok {
		return
	}
	id := c.Param("id")
	data, err := h.Compliance.PackageJSON(c.Request.Context(), p, id)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="`+id+`.json"`)
	c.Data(http.StatusOK, "application/json", data)
}

type profileData struct {
	Looked bool
	States []state.Meta
}

// profilesPage: the lookup form of a profile's working-memory tab.
func (h *Console) profilesPage(c *gin.Context) {
	if _, ok := h.allow(c, "Profiles"); !ok {
		return
	}
	h.renderView(c, http.StatusOK, "profiles", view{Title: "Profiles", Data: profileData{}})
}

// profileLookup: the working-memory tab of the profile named in the POST body (its id, or a
// customer handle of it): agent, scope kind, size, version and dates of each state, never
// content (WM-11). The id or handle is never echoed.
func (h *Console) profileLookup(c *gin.Context) {
	p, ok := h.allow(c, "Profiles")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	ref := strings.TrimSpace(c.PostForm("profile"))
	hashes, err := h.Subjects.HandleHashes(ctx, p.SpaceID, ref)
	if err != nil {
		if hashes, err = h.Subjects.SubjectHashes(ctx, p.SpaceID, ref); err != nil {
			h.renderView(c, http.StatusNotFound, "profiles", view{Title: "Profiles", Error: "No profile with that id, and it is not a customer handle (email:..., phone:...).", Data: profileData{}})
			return
		}
	}
	list, err := h.State.ListBySubject(ctx, p.SpaceID, hashes)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.renderView(c, http.StatusOK, "profiles", view{Title: "Profiles", Data: profileData{Looked: true, States: list}})
}

type keysData struct {
	Keys    []auth.KeyInfo
	Roles   []string
	Scopes  []string
	Minted  string
	MintedI string
}

// keysPage: the space's keys (never a secret), the mint form and revoke buttons.
func (h *Console) keysPage(c *gin.Context) {
	p, ok := h.allow(c, "Keys")
	if !ok {
		return
	}
	var keyID, key string
	if f, ok := h.takeFlash(c, "keys"); ok {
		keyID, key = f.KeyID, f.Key
	}
	h.showKeys(c, p, http.StatusOK, "", keyID, key)
}

func (h *Console) showKeys(c *gin.Context, p auth.Principal, status int, errMsg, keyID, key string) {
	keys, err := auth.List(c.Request.Context(), h.DB, p.SpaceID)
	if err != nil {
		h.fail(c, err)
		return
	}
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].RevokedAt == nil && keys[j].RevokedAt != nil })
	h.renderView(c, status, "keys", view{Title: "Keys", Error: errMsg, Quiet: key != "", Data: keysData{Keys: keys, Roles: auth.AllRoles, Scopes: auth.AllScopes, Minted: key, MintedI: keyID}})
}

// mintKey: Ops.MintKey as POST /v1/keys, then 303 to the Keys screen, whose next GET shows
// the key once (a flash sealed in the session, never in a URL; issue 27: a reload mints
// nothing more).
func (h *Console) mintKey(c *gin.Context) {
	p, ok := h.allow(c, "Keys")
	if !ok {
		return
	}
	spec := auth.KeySpec{Kind: c.PostForm("kind")}
	if spec.Kind == auth.KindAgent {
		spec.Agent, spec.Vendor, spec.Scopes = strings.TrimSpace(c.PostForm("agent")), strings.TrimSpace(c.PostForm("vendor")), c.PostFormArray("scopes")
		spec.Purposes = purposesOf(c.PostForm("purposes"))
	} else {
		spec.Name, spec.Roles = strings.TrimSpace(c.PostForm("name")), c.PostFormArray("roles")
	}
	id, key, err := h.Ops.MintKey(c.Request.Context(), p, spec)
	if err != nil {
		h.showKeys(c, p, statusOf(err), h.message(c, err), "", "")
		return
	}
	if err := h.sealFlash(c, flash{Screen: "keys", KeyID: id, Key: key, At: h.Now()}); err != nil {
		// The key exists but cannot be shown: say so rather than lose it silently.
		h.Logger.ErrorContext(c.Request.Context(), "console: keep the minted key's flash", httpfault.Scrubbed(err)...)
		h.showKeys(c, p, http.StatusInternalServerError, "Key "+id+" was minted but cannot be shown: revoke it and mint another.", "", "")
		return
	}
	redirect(c, "/console/keys", "key_minted")
}

// revokeKey: Ops.RevokeKey as DELETE /v1/keys/{key_id}.
func (h *Console) revokeKey(c *gin.Context) {
	p, ok := h.allow(c, "Keys")
	if !ok {
		return
	}
	if err := h.Ops.RevokeKey(c.Request.Context(), p, c.Param("id")); err != nil {
		h.showKeys(c, p, statusOf(err), h.message(c, err), "", "")
		return
	}
	redirect(c, "/console/keys", "key_revoked")
}

// purposesOf splits the mint form's comma-separated purposes, trimmed, empty ones dropped
// (auth.KeySpec.Validate judges the rest).
func purposesOf(field string) []string {
	var out []string
	for _, p := range strings.Split(field, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
