package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/signing"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/models"
)

// newTestSigner returns a Signer with a fresh key and, when previous is set, one rotated key.
func newTestSigner(t testing.TB, previous ...signing.PublicKey) *signing.Signer {
	t.Helper()
	seed, _, err := signing.GenerateKey()
	require.NoError(t, err)
	priv, err := signing.ParsePrivateKey(seed)
	require.NoError(t, err)
	s, err := signing.NewSigner(priv, time.Time{}, previous...)
	require.NoError(t, err)
	return s
}

// testCertificate is a certificate as the erasure workflow issues it (its exact shape belongs
// to internal/compliance; the route serves whatever was stored and signed then).
const testCertificate = `{"type":"erasure_certificate","erasure_id":"%s","space_id":"x","target_kind":"subject","requested_by":"key_1",` +
	`"started_at":"2026-12-01T12:00:00Z","ended_at":"2026-12-01T12:00:03.25Z","items":[{"kind":"state","count":3,"ids":["h1","h2"]}],` +
	`"total":3,"nothing_found":false,"not_covered":[],"note":"<&> é"}`

// insertErasure stores an erasure row of space with status and, when completed, a certificate
// stored as Certify issues it: canonical, and signed by signer when there is one.
func insertErasure(t testing.TB, e *apptest.Env, space, id, status string, signer *signing.Signer) string {
	t.Helper()
	cert, sigJSON := "", ""
	if status == "completed" {
		canon, err := signing.Canonical([]byte(fmtCert(id)))
		require.NoError(t, err)
		cert = string(canon)
		if signer != nil {
			sig, err := signer.Sign(canon)
			require.NoError(t, err)
			b, err := json.Marshal(sig)
			require.NoError(t, err)
			sigJSON = string(b)
		}
	}
	now := time.Now().UTC()
	row := &models.Erasure{ID: id, SpaceID: space, TargetKind: "subject", TargetHash: "th", ScopeHashes: "[]", ProfileIDs: "[]",
		Items: "[]", Status: status, RequestedBy: "key_1", Certificate: cert, CertificateSignature: sigJSON, CreatedAt: now}
	_, err := e.DB.NewInsert().Model(row).Exec(context.Background())
	require.NoError(t, err)
	return cert
}

func fmtCert(id string) string {
	return strings.Replace(testCertificate, "%s", id, 1)
}

// createSpace creates another space in e's database and returns its id.
func createSpace(t testing.TB, e *apptest.Env) string {
	t.Helper()
	id, _, err := spaces.Create(context.Background(), e.DB, "other", time.Now())
	require.NoError(t, err)
	return id
}

func TestSigningKeysRoute(t *testing.T) {
	old := newTestSigner(t)
	prev := old.Keys()[0]
	until := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	prev.ValidUntil = &until
	signer := newTestSigner(t, prev)
	e := apptest.New(t, "sqlite", func(d *api.Deps) { d.Signer = signer })
	// Public: no key needed.
	r := e.MustDo(http.StatusOK, "GET", "/v1/signing-keys", "", nil)
	var got struct {
		Algorithm string              `json:"algorithm"`
		Keys      []signing.PublicKey `json:"keys"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &got))
	require.Equal(t, "Ed25519", got.Algorithm)
	require.Equal(t, signer.Keys(), got.Keys)
	require.True(t, got.Keys[0].Current)
	require.Equal(t, old.KeyID(), got.Keys[1].KeyID)
	require.Equal(t, until, *got.Keys[1].ValidUntil)

	// Without a signing key every signed route answers 503 signing_unavailable.
	bare := apptest.New(t, "sqlite")
	r = bare.MustDo(http.StatusServiceUnavailable, "GET", "/v1/signing-keys", "", nil)
	require.Equal(t, "signing_unavailable", r.ErrorCode(t))
	r = bare.MustDo(http.StatusServiceUnavailable, "GET", "/v1/receipts/head", bare.AdminKey, nil)
	require.Equal(t, "signing_unavailable", r.ErrorCode(t))
	// A certificate issued without a signing key stays unsigned: never signed later.
	insertErasure(t, bare, bare.SpaceID, "er_done", "completed", nil)
	r = bare.MustDo(http.StatusConflict, "GET", "/v1/erasures/er_done/certificate", bare.AdminKey, nil)
	require.Equal(t, "certificate_unsigned", r.ErrorCode(t))
}

// GET /v1/erasures/{id}/certificate serves the certificate with the signature made when it was
// issued; a changed byte fails, and so does a certificate edited in the database afterwards;
// other spaces' and unfinished erasures get 404 and 409 (both DBs).
func TestErasureCertificateSigned(t *testing.T) {
	signer := newTestSigner(t)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.Server = api.NewServer(withSigner(e.Deps, signer))
		stored := insertErasure(t, e, e.SpaceID, "er_done", "completed", signer)
		insertErasure(t, e, e.SpaceID, "er_running", "running", signer)
		insertErasure(t, e, e.SpaceID, "er_failed", "failed", signer)

		officer := e.PersonKey("officer", "compliance")
		r := e.MustDo(http.StatusOK, "GET", "/v1/erasures/er_done/certificate", officer, nil)
		name, doc, sig, err := signing.Envelope(r.Body)
		require.NoError(t, err)
		require.Equal(t, "certificate", name)
		require.Equal(t, signer.KeyID(), sig.KeyID)
		require.Equal(t, "Ed25519", sig.Algorithm)
		canon, err := signing.Canonical([]byte(stored))
		require.NoError(t, err)
		require.Equal(t, string(canon), string(doc), "the certificate goes out in canonical form")
		require.NoError(t, signing.Verify(doc, sig, signer.Keys()))
		// The stored certificate itself (other byte layout) verifies too.
		require.NoError(t, signing.Verify([]byte(stored), sig, signer.Keys()))
		changed := []byte(strings.Replace(stored, `"count":3`, `"count":4`, 1))
		require.NotEqual(t, stored, string(changed))
		require.ErrorIs(t, signing.Verify(changed, sig, signer.Keys()), signing.ErrBadSignature)

		// Whoever edits the stored certificate cannot have it signed: the route signs nothing.
		_, err = e.DB.NewUpdate().Model((*models.Erasure)(nil)).Set("certificate = ?", strings.Replace(stored, `"total":3`, `"total":300`, 1)).
			Where("id = ?", "er_done").Exec(context.Background())
		require.NoError(t, err)
		r = e.MustDo(http.StatusOK, "GET", "/v1/erasures/er_done/certificate", officer, nil)
		_, forged, forgedSig, err := signing.Envelope(r.Body)
		require.NoError(t, err)
		require.Contains(t, string(forged), `"total":300`)
		require.ErrorIs(t, signing.Verify(forged, forgedSig, signer.Keys()), signing.ErrBadSignature)

		// GET /v1/erasures/{id} and the signed certificate state the same content.
		plain := e.MustDo(http.StatusOK, "GET", "/v1/erasures/er_done", officer, nil).JSON(t)
		require.Equal(t, "er_done", plain["certificate"].(map[string]any)["erasure_id"])

		for _, id := range []string{"er_running", "er_failed"} {
			r = e.MustDo(http.StatusConflict, "GET", "/v1/erasures/"+id+"/certificate", officer, nil)
			require.Equal(t, "erasure_not_completed", r.ErrorCode(t))
		}
		r = e.MustDo(http.StatusNotFound, "GET", "/v1/erasures/er_nope/certificate", officer, nil)
		require.Equal(t, "erasure_not_found", r.ErrorCode(t))

		// Same roles as GET /v1/erasures/{id}: a reviewer or an agent key is refused.
		e.MustDo(http.StatusForbidden, "GET", "/v1/erasures/er_done/certificate", e.PersonKey("rev", "reviewer"), nil)
		e.MustDo(http.StatusForbidden, "GET", "/v1/erasures/er_done/certificate", e.AgentKey("bot", "v", "agent_state"), nil)
	})
}

// Another space's erasure id answers 404, exactly as GET /v1/erasures/{id} does.
func TestErasureCertificateOtherSpace(t *testing.T) {
	signer := newTestSigner(t)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.Server = api.NewServer(withSigner(e.Deps, signer))
		otherSpace := createSpace(t, e)
		insertErasure(t, e, otherSpace, "er_theirs", "completed", signer)
		r := e.MustDo(http.StatusNotFound, "GET", "/v1/erasures/er_theirs/certificate", e.AdminKey, nil)
		require.Equal(t, "erasure_not_found", r.ErrorCode(t))
		e.MustDo(http.StatusNotFound, "GET", "/v1/erasures/er_theirs", e.AdminKey, nil)
	})
}

// GET /v1/receipts/head signs the chain head; the head moves with the chain (both DBs).
func TestReceiptsHeadSigned(t *testing.T) {
	signer := newTestSigner(t)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		deps := withSigner(e.Deps, signer)
		deps.Now = func() time.Time { return now }
		e.Server = api.NewServer(deps)

		readHead := func() receipts.Head {
			r := e.MustDo(http.StatusOK, "GET", "/v1/receipts/head", e.AdminKey, nil)
			name, doc, sig, err := signing.Envelope(r.Body)
			require.NoError(t, err)
			require.Equal(t, "head", name)
			require.NoError(t, signing.Verify(doc, sig, signer.Keys()))
			var h struct {
				receipts.Head
				SignedAt time.Time `json:"signed_at"`
			}
			require.NoError(t, json.Unmarshal(doc, &h))
			require.Equal(t, now, h.SignedAt)
			return h.Head
		}
		before := readHead()
		require.Equal(t, e.SpaceID, before.SpaceID)
		want, err := receipts.CurrentHead(context.Background(), e.DB, e.SpaceID)
		require.NoError(t, err)
		require.Equal(t, want.Seq, before.Seq)
		require.Equal(t, want.Hash, before.Hash)

		e.MustDo(http.StatusCreated, "POST", "/v1/keys", e.AdminKey, map[string]any{"kind": "agent", "agent": "a", "vendor": "v", "scopes": []string{"context"}})
		after := readHead()
		require.Greater(t, after.Seq, before.Seq, "a write that leaves a receipt moves the head")
		require.NotEqual(t, before.Hash, after.Hash)
		require.NotNil(t, after.At)

		e.MustDo(http.StatusForbidden, "GET", "/v1/receipts/head", e.AgentKey("bot", "v", "agent_state"), nil)
		e.MustDo(http.StatusUnauthorized, "GET", "/v1/receipts/head", "", nil)
	})
}

func withSigner(d api.Deps, s *signing.Signer) api.Deps {
	d.Signer = s
	return d
}
