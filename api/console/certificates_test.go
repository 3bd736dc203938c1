package console_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/signing"
)

func testSigner(t *testing.T) *signing.Signer {
	t.Helper()
	seed, _, err := signing.GenerateKey()
	require.NoError(t, err)
	priv, err := signing.ParsePrivateKey(seed)
	require.NoError(t, err)
	s, err := signing.NewSigner(priv, time.Time{})
	require.NoError(t, err)
	return s
}

// completedErasure stores a subject's state, then requests and runs its erasure as the
// workflow does, step by step, to its certificate; it returns the erasure's id.
func completedErasure(t *testing.T, e *apptest.Env, officerKey string) string {
	t.Helper()
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
	e.PutDocument("object-types", apptest.ShopBotTypes())
	shop := e.AgentKey("shop-bot", "acme", "agent_state")
	e.MustDo(http.StatusOK, http.MethodPut, "/v1/agent-state", shop, map[string]any{
		"scope": map[string]any{"kind": "conversation", "id": "c-1"}, "subject": "email:ana@example.com",
		"body": map[string]any{"step": "cart"}})
	ctx := context.Background()
	officer, err := auth.Authenticate(ctx, e.DB, officerKey)
	require.NoError(t, err)
	c := e.Deps.Compliance
	id, err := c.RequestErasure(ctx, officer, compliance.ErasureRequest{Subject: "email:ana@example.com"})
	require.NoError(t, err)
	_, err = c.ResolveErasure(ctx, e.SpaceID, id)
	require.NoError(t, err)
	for _, step := range []func(context.Context, string, string) (int, error){c.EraseStates, c.EraseTurns, c.EraseExports, c.EraseKnowledge, c.EraseProfiles, c.DestroyKeys} {
		_, err := step(ctx, e.SpaceID, id)
		require.NoError(t, err)
	}
	_, err = c.Certify(ctx, e.SpaceID, id)
	require.NoError(t, err)
	return id
}

// Issue 27: the certificate reads as a page (what was erased, per store with its reach and
// the probe's result, the signature check) and downloads as the signed JSON, which verifies
// offline against the published keys.
func TestConsoleCertificatePageAndDownload(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			signer := testSigner(t)
			e := apptest.New(t, engine, func(d *api.Deps) { d.Signer = signer })
			key := e.PersonKey("Cora", "compliance")
			id := completedErasure(t, e, key)
			b := signIn(t, e, key)
			pg := b.get("/console/compliance/erasures/" + id)
			require.Equal(t, http.StatusOK, pg.Status, pg.Body)
			require.Contains(t, pg.Body, `<h2 id="cert-h">Certificate</h2>`)
			require.Regexp(t, `<strong>[1-9][0-9]*</strong> items? of this subject (was|were) erased\.`, pg.Body)
			require.Contains(t, pg.Body, "The probe found nothing left in any store.")
			require.Contains(t, pg.Body, `<dd class="sig"><span class="badge ok">valid</span> <span class="muted">Ed25519 · key <code>`+signer.KeyID()+`</code>`)
			require.Contains(t, pg.Body, "Requested by</dt><dd>person Cora</dd>")
			require.Regexp(t, `<tr><td><strong>state</strong></td><td class="num">1</td><td class="tags">(<span class="tag">[a-z_.]+</span>)+</td><td><span class="badge ok">nothing left</span></td><td>(\d+ by handle \(erased\) · \d+ by name \(residue\)<br><span class="muted">[^<]+</span>|<span class="muted">—</span>)</td></tr>`, pg.Body)
			require.Contains(t, pg.Body, "<tr><td>agent_state</td>")
			require.NotContains(t, pg.Body, "ana@example.com")
			require.Contains(t, pg.Body, `href="/console/compliance/erasures/`+id+`/certificate" download>Download signed certificate</a>`)

			dl := b.get("/console/compliance/erasures/" + id + "/certificate")
			require.Equal(t, http.StatusOK, dl.Status)
			require.Equal(t, `attachment; filename="certificate-`+id+`.json"`, dl.Header.Get("Content-Disposition"))
			require.Equal(t, "DENY", dl.Header.Get("X-Frame-Options"))
			name, doc, sig, err := signing.Envelope([]byte(dl.Body))
			require.NoError(t, err)
			require.Equal(t, "certificate", name)
			require.NoError(t, signing.Verify(doc, sig, signer.Keys()), "the download verifies offline")
			api := e.MustDo(http.StatusOK, http.MethodGet, "/v1/erasures/"+id+"/certificate", key, nil)
			require.Equal(t, string(api.Body), dl.Body, "the same document as the API's")

			// A certificate changed in the database: the page says the signature is invalid.
			_, err = e.DB.NewUpdate().Table("erasures").Set("certificate = replace(certificate, '\"target_kind\":\"subject\"', '\"target_kind\":\"conversation\"')").Where("id = ?", id).Exec(t.Context())
			require.NoError(t, err)
			pg = b.get("/console/compliance/erasures/" + id)
			require.Contains(t, pg.Body, `<span class="badge bad">invalid: `)
		})
	}
}

// An unsigned certificate (a server without a signing key) reads the same, says it is
// unsigned, and has no download: the route refuses with 409.
func TestConsoleCertificateUnsigned(t *testing.T) {
	each(t, func(t *testing.T, e *apptest.Env, _ *clock) {
		key := e.PersonKey("Cora", "compliance")
		id := completedErasure(t, e, key)
		b := signIn(t, e, key)
		pg := b.get("/console/compliance/erasures/" + id)
		require.Equal(t, http.StatusOK, pg.Status)
		require.Contains(t, pg.Body, "unsigned: issued without a signing key")
		require.NotContains(t, pg.Body, "Download signed certificate")
		dl := b.get("/console/compliance/erasures/" + id + "/certificate")
		require.Equal(t, http.StatusConflict, dl.Status)
		require.Empty(t, dl.Header.Get("Content-Disposition"))
		require.Equal(t, http.StatusNotFound, b.get("/console/compliance/erasures/er_nope/certificate").Status)
	})
}
