package console

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/signing"
)

// erasureData is the Erasure page: the erasure, and once completed its certificate read for
// a person (issue 27): what was erased per kind and per store, each store's reach (what it
// covers) and the probe's result, the signature check, and the raw signed JSON.
type erasureData struct {
	Erasure   compliance.ErasureView
	Cert      *compliance.Certificate
	CertJSON  string
	Signature *signing.Signature
	Signed    bool
	Check     string
	CheckOK   bool
	Requester string
	Clean     bool // every store's probe found nothing
}

// erasureOf checks that the person may see compliance and loads the erasure the path's id
// names; when either fails the page has been answered and ok is false.
func (h *Console) erasureOf(c *gin.Context) (p auth.Principal, v compliance.ErasureView, ok bool) {
	p, ok = h.allow(c, "Compliance")
	if !ok {
		return p, v, false
	}
	v, err := h.Compliance.GetErasure(c.Request.Context(), p, c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return p, v, false
	}
	return p, v, true
}

// erasurePage: an erasure's status and, once completed, its certificate with the result of
// checking its signature against the server's published keys.
func (h *Console) erasurePage(c *gin.Context) {
	p, v, ok := h.erasureOf(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	d := erasureData{Erasure: v}
	if compliance.Completed(v.Status) {
		cert, sigJSON, err := h.Compliance.SignedCertificate(ctx, p, v.ErasureID)
		if err != nil {
			h.fail(c, err)
			return
		}
		if err := h.readCertificate(c, p, &d, cert, sigJSON); err != nil {
			h.fail(c, err)
			return
		}
	}
	h.renderView(c, http.StatusOK, "erasure", view{Title: "Erasure", Active: "Compliance", Data: d})
}

// readCertificate fills d from the stored certificate and its signature.
func (h *Console) readCertificate(c *gin.Context, p auth.Principal, d *erasureData, cert []byte, sigJSON string) error {
	var parsed compliance.Certificate
	if err := json.Unmarshal(cert, &parsed); err != nil {
		return fmt.Errorf("console: decode certificate %s: %w", d.Erasure.ErasureID, err)
	}
	d.Cert, d.CertJSON, d.Signed = &parsed, pretty(string(cert)), sigJSON != ""
	d.Clean = true
	for _, st := range parsed.Stores {
		if st.Probe != 0 {
			d.Clean = false
		}
	}
	d.Requester = parsed.RequestedBy
	if keys, err := auth.List(c.Request.Context(), h.DB, p.SpaceID); err == nil {
		if a, ok := actorsOf(keys)[parsed.RequestedBy]; ok {
			d.Requester = a.Label()
		}
	}
	d.Signature, d.Check, d.CheckOK = h.checkSignature(cert, sigJSON)
	return nil
}

// checkSignature checks sigJSON over cert against this server's published keys.
func (h *Console) checkSignature(cert []byte, sigJSON string) (*signing.Signature, string, bool) {
	switch {
	case sigJSON == "":
		return nil, "unsigned: issued without a signing key", false
	case h.Signer == nil:
		return nil, "not checked: this server has no signing key", false
	}
	var sig signing.Signature
	if err := json.Unmarshal([]byte(sigJSON), &sig); err != nil {
		return nil, "invalid: the stored signature does not decode", false
	}
	if err := signing.Verify(cert, sig, h.Signer.Keys()); err != nil {
		return &sig, "invalid: " + err.Error(), false
	}
	return &sig, "valid", true
}

// certificateDownload: the signed certificate as a file (Content-Disposition attachment),
// exactly the document GET /v1/erasures/{id}/certificate answers, {"certificate",
// "signature"}, which `agentmemory verify-certificate` checks offline (PR-3). An erasure not
// completed, or a certificate issued without a signing key, is refused (409) with the page.
func (h *Console) certificateDownload(c *gin.Context) {
	p, v, ok := h.erasureOf(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	if !compliance.Completed(v.Status) {
		h.renderView(c, http.StatusConflict, "error", view{Title: "Certificate", Active: "Compliance", Error: "The erasure is " + v.Status + ": it has no certificate yet."})
		return
	}
	cert, sigJSON, err := h.Compliance.SignedCertificate(ctx, p, v.ErasureID)
	if err != nil {
		h.fail(c, err)
		return
	}
	if sigJSON == "" {
		h.renderView(c, http.StatusConflict, "error", view{Title: "Certificate", Active: "Compliance", Error: "The certificate was issued without a signing key: there is no signed certificate to download."})
		return
	}
	c.Header("Content-Disposition", `attachment; filename="certificate-`+v.ErasureID+`.json"`)
	c.Data(http.StatusOK, "application/json; charset=utf-8", fmt.Appendf(nil, `{"certificate":%s,"signature":%s}`, cert, sigJSON))
}
