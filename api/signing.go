package api

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/models"
)

// errSigningUnavailable answers the signed routes when the server holds no signing key
// (AGENTMEMORY_SIGNING_KEY unset in serve).
func errSigningUnavailable() error {
	return fault.New(fault.Unavailable, "signing_unavailable", "this server has no signing key (AGENTMEMORY_SIGNING_KEY)")
}

// signingKeys: GET /v1/signing-keys (no key needed: public keys are published) -> 200
// {"algorithm": "Ed25519", "keys": [{key_id, algorithm, public_key, current, valid_from?,
// valid_until?}]}, the current key first, then the rotated ones still published (PR-3);
// 503 signing_unavailable without a signing key.
func (s *Server) signingKeys(c *gin.Context) {
	if s.Signer == nil {
		s.writeError(c, errSigningUnavailable())
		return
	}
	c.Header("Cache-Control", "public, max-age=300")
	c.PureJSON(http.StatusOK, gin.H{"algorithm": signing.Algorithm, "keys": s.Signer.Keys()})
}

// erasureCertificate: GET /v1/erasures/{id}/certificate (compliance or admin) -> 200
// {"certificate": CERTIFICATE, "signature": {"key_id", "algorithm": "Ed25519", "value"}}: the
// certificate as stored when the erasure completed, in its RFC 8785 canonical form, and the
// detached Ed25519 signature made then, over those bytes (PR-3). Nothing is signed here, so a
// certificate edited in the database afterwards does not verify. 404 erasure_not_found for an
// id not in the caller's space; 409 erasure_not_completed (with "status") before completion or
// after a failure; 409 certificate_unsigned for a certificate issued without a signing key.
func (s *Server) erasureCertificate(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleCompliance, auth.RoleAdmin); err != nil {
		s.writeError(c, err)
		return
	}
	var row models.Erasure
	err := s.DB.NewSelect().Model(&row).Column("status", "certificate", "certificate_signature").
		Where("id = ? AND space_id = ?", c.Param("erasure_id"), p.SpaceID).Scan(s.ctx(c))
	if errors.Is(err, sql.ErrNoRows) {
		s.writeError(c, fault.New(fault.NotFound, "erasure_not_found", "no erasure with that id in this space"))
		return
	}
	if err != nil {
		s.writeError(c, fmt.Errorf("api: load erasure: %w", err))
		return
	}
	if !compliance.Completed(row.Status) || row.Certificate == "" {
		s.writeError(c, fault.New(fault.Conflict, "erasure_not_completed", "the erasure has no certificate: it is not completed").With("status", row.Status))
		return
	}
	if row.CertificateSignature == "" {
		s.writeError(c, fault.New(fault.Conflict, "certificate_unsigned",
			"the certificate was issued without a signing key (AGENTMEMORY_SIGNING_KEY); GET /v1/erasures/{id} shows it unsigned"))
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "application/json; charset=utf-8",
		fmt.Appendf(nil, `{"certificate":%s,"signature":%s}`, row.Certificate, row.CertificateSignature))
}

// HeadType is the "type" member of every signed receipt head.
const HeadType = "receipt_head"

// signedHead is the document GET /v1/receipts/head signs: the chain head and when it was
// signed.
type signedHead struct {
	// Type is HeadType, inside what is signed, so a head never passes for a certificate.
	Type string `json:"type"`
	receipts.Head
	SignedAt time.Time `json:"signed_at"`
}

// receiptsHead: GET /v1/receipts/head (admin or compliance) -> 200 {"head": {space_id, seq,
// hash, at, signed_at}, "signature": {...}}: the space's receipt-chain head after sealing its
// unsealed receipts (seq: its last receipt's, hash: its last entry's, at: the time of its
// last receipt, null while empty) signed like a certificate (PR-3). Keep it outside the
// database; `agentmemory receipts verify --since-head FILE` later proves the chain still
// extends it. 503 signing_unavailable without a signing key.
func (s *Server) receiptsHead(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin, auth.RoleCompliance); err != nil {
		s.writeError(c, err)
		return
	}
	if s.Signer == nil {
		s.writeError(c, errSigningUnavailable())
		return
	}
	h, err := receipts.Seal(s.ctx(c), s.DB, p.SpaceID) // the head covers every committed receipt
	if err != nil {
		s.writeError(c, err)
		return
	}
	doc, err := json.Marshal(signedHead{Type: HeadType, Head: h, SignedAt: s.Now().UTC().Truncate(time.Microsecond)})
	if err != nil {
		s.writeError(c, fmt.Errorf("api: encode head: %w", err))
		return
	}
	s.writeSigned(c, "head", doc)
}

// writeSigned answers {name: canonical(doc), "signature": signature} with 200.
func (s *Server) writeSigned(c *gin.Context, name string, doc []byte) {
	canon, err := signing.Canonical(doc)
	if err != nil {
		s.writeError(c, err)
		return
	}
	sig, err := s.Signer.Sign(canon)
	if err != nil {
		s.writeError(c, err)
		return
	}
	sigJSON, err := json.Marshal(sig)
	if err != nil {
		s.writeError(c, fmt.Errorf("api: encode signature: %w", err))
		return
	}
	// The document goes out byte for byte as signed (its canonical form).
	body := fmt.Appendf(nil, `{%q:%s,"signature":%s}`, name, canon, sigJSON)
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
}
