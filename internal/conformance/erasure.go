package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/signing"
)

// erasureAgent is the agent (and its object type) that writes the subject's working state.
const erasureAgent = "conformance-erasure"

// subjectName is the made-up subject's name: no other text the run writes contains it, so
// the content probe (issue 29 §1b) has nothing to find by name.
const subjectName = "Quintessa Vandermolen"

// pollEvery is how often the run reads an erasure's status while it is pending or running.
const pollEvery = 500 * time.Millisecond

// subjectRun is what the erasure check made in space A: the keys, the made-up subject's
// handle (unique to the run) and profile, and the scope of the state that names the subject.
type subjectRun struct {
	dpo, integ, agent client
	handle, profileID string
	scope             map[string]any
	gone              bool // the state read back as erased
}

// erasure checks GOV-2 and PR-3 end to end (issue 34 §3: "an erasure's certificate verifies
// offline and its probe finds nothing"): a made-up subject gets a profile and a working state
// naming it, a compliance key erases the subject, the signed certificate verifies offline with
// the deployment's public keys (internal/signing, as `agentmemory verify-certificate` does),
// every store's probe is 0, the status is completed and the state reads back as gone. A
// deployment with no worker (the erasure never ends within wait) or no signing key fails
// with a detail saying so. Every key it mints is revoked by cleanup.
func (w *world) erasure(ctx context.Context, rep *Report, wait time.Duration) {
	s, err := w.subjectSetup(ctx)
	rep.add("erasure", "subject with a profile and a state naming it", err == nil, errOrNil(err))
	if err != nil {
		return
	}
	id, view, err := s.erase(ctx, wait)
	rep.add("erasure", "POST /v1/erasures ends completed", err == nil && view.Status == compliance.StatusCompleted,
		fmt.Sprintf("status %q reason %q %s", view.Status, view.Reason, errOrNil(err)))
	if err != nil {
		return
	}
	cert, err := s.verifiedCertificate(ctx, id)
	rep.add("erasure", "certificate verifies offline", err == nil, errOrNil(err))
	if err == nil {
		probes(rep, cert)
	}
	err = s.stateGone(ctx)
	rep.add("erasure", "the subject's state reads back as gone", err == nil, errOrNil(err))
}

// subjectSetup turns working memory on in space A, declares the erasure agent's type, mints
// the compliance, integration and agent keys, and creates the subject's profile and a state
// tied to it by `subject`; the state must read back before the erasure.
func (w *world) subjectSetup(ctx context.Context) (*subjectRun, error) {
	if _, err := w.a.must(ctx, http.StatusOK, "PUT", "/v1/documents/object-types", map[string]any{"types": []any{map[string]any{
		"type": erasureAgent, "ownership": "agent", "fields": map[string]any{"note": map[string]any{"type": "text", "pii": true}},
		"agent_state": map[string]any{"scope": "conversation"}}}}); err != nil {
		return nil, fmt.Errorf("declare the state's type: %w", err)
	}
	s := &subjectRun{handle: "email:" + w.marker + "@conformance.example",
		scope: map[string]any{"kind": "conversation", "id": "conversation-" + w.marker}}
	var err error
	if s.dpo, err = w.personKey(ctx, "conformance-dpo", "compliance"); err != nil {
		return nil, err
	}
	if s.integ, err = w.personKey(ctx, "conformance-integrator", "integration"); err != nil {
		return nil, err
	}
	if s.agent, err = w.mint(ctx, w.a, map[string]any{"kind": "agent", "agent": erasureAgent, "vendor": "conformance-vendor-a",
		"scopes": []string{"agent_state"}}); err != nil {
		return nil, err
	}
	w.subject = s
	return s, s.write(ctx)
}

// write creates the subject's profile and the state naming it, and reads the state back.
func (s *subjectRun) write(ctx context.Context) error {
	p, err := s.integ.must(ctx, http.StatusCreated, "POST", "/v1/profiles", map[string]any{"name": subjectName, "handles": []string{s.handle}})
	if err != nil {
		return err
	}
	s.profileID, _ = p["profile_id"].(string)
	st, err := s.agent.must(ctx, http.StatusOK, "PUT", "/v1/agent-state", map[string]any{"scope": s.scope, "subject": s.handle,
		"body": map[string]any{"note": "conformance subject " + s.handle}})
	if err != nil {
		return err
	}
	if st["stored"] != true {
		return fmt.Errorf("PUT /v1/agent-state was not stored: %v", st)
	}
	got, err := s.agent.must(ctx, http.StatusOK, "POST", "/v1/agent-state/read", map[string]any{"scope": s.scope})
	if err != nil {
		return err
	}
	if fmt.Sprint(got["version"]) != "1" {
		return fmt.Errorf("the state reads back at version %v, want 1", got["version"])
	}
	return nil
}

// erase requests the subject's erasure and polls it until it is neither pending nor running,
// or wait passes (then the detail names the missing worker).
func (s *subjectRun) erase(ctx context.Context, wait time.Duration) (string, compliance.ErasureView, error) {
	var view compliance.ErasureView
	m, err := s.dpo.must(ctx, http.StatusAccepted, "POST", "/v1/erasures", map[string]any{"subject": s.handle})
	if err != nil {
		return "", view, err
	}
	id, _ := m["erasure_id"].(string)
	deadline := time.Now().Add(wait)
	for {
		code, data, _, err := s.dpo.do(ctx, "GET", "/v1/erasures/"+id, nil)
		if err != nil {
			return id, view, err
		}
		if code != http.StatusOK {
			return id, view, fmt.Errorf("GET /v1/erasures/{id}: %d: %.300s", code, data)
		}
		if err := json.Unmarshal(data, &view); err != nil {
			return id, view, fmt.Errorf("GET /v1/erasures/{id}: %w", err)
		}
		if view.Status != compliance.StatusPending && view.Status != compliance.StatusRunning {
			return id, view, nil
		}
		if time.Now().After(deadline) {
			return id, view, fmt.Errorf("still %s after %s: does the deployment run a Temporal worker?", view.Status, wait)
		}
		select {
		case <-ctx.Done():
			return id, view, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// verifiedCertificate fetches the signed certificate and the public keys and verifies it
// offline: the envelope, the Ed25519 signature over its canonical JSON (signing.Verify, the
// code of `agentmemory verify-certificate`) and the signed type.
func (s *subjectRun) verifiedCertificate(ctx context.Context, id string) (compliance.Certificate, error) {
	var cert compliance.Certificate
	code, data, _, err := s.dpo.do(ctx, "GET", "/v1/erasures/"+id+"/certificate", nil)
	if err != nil {
		return cert, err
	}
	if code == http.StatusConflict && errorCode(data) == "certificate_unsigned" {
		return cert, errors.New("the certificate is unsigned: the deployment has no signing key (AGENTMEMORY_SIGNING_KEY)")
	}
	if code != http.StatusOK {
		return cert, fmt.Errorf("GET /v1/erasures/{id}/certificate: %d: %.300s", code, data)
	}
	keys, err := s.publicKeys(ctx)
	if err != nil {
		return cert, err
	}
	name, doc, sig, err := signing.Envelope(data)
	if err != nil {
		return cert, err
	}
	if name != "certificate" {
		return cert, fmt.Errorf("the envelope holds a signed %q, not a certificate", name)
	}
	if err := signing.Verify(doc, sig, keys); err != nil {
		return cert, fmt.Errorf("certificate does NOT verify: %w", err)
	}
	if err := json.Unmarshal(doc, &cert); err != nil {
		return cert, fmt.Errorf("certificate: %w", err)
	}
	if cert.Type != compliance.CertificateType || cert.ErasureID != id {
		return cert, fmt.Errorf("the signed document is not this erasure's certificate (type %q, erasure %q)", cert.Type, cert.ErasureID)
	}
	return cert, nil
}

// publicKeys reads the deployment's public signing keys (GET /v1/signing-keys, no key).
func (s *subjectRun) publicKeys(ctx context.Context) ([]signing.PublicKey, error) {
	m := client{base: s.dpo.base, http: s.dpo.http}
	code, data, _, err := m.do(ctx, "GET", "/v1/signing-keys", nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/signing-keys: %d: %.300s", code, data)
	}
	var list struct {
		Keys []signing.PublicKey `json:"keys"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("GET /v1/signing-keys: %w", err)
	}
	if len(list.Keys) == 0 {
		return nil, errors.New("GET /v1/signing-keys lists no key: the deployment has no signing key")
	}
	return list.Keys, nil
}

// probes adds a row per store of the signed certificate (its probe found 0 items) and one for
// its status (completed); a certificate listing no store fails.
func probes(rep *Report, cert compliance.Certificate) {
	rep.add("erasure", "the certificate lists the stores", len(cert.Stores) > 0, "no store in the certificate")
	for _, st := range cert.Stores {
		rep.add("erasure", "probe of store "+st.Store+" finds nothing", st.Probe == 0, fmt.Sprintf("probe %d", st.Probe))
	}
	rep.add("erasure", "the certificate's status is completed", cert.Status == compliance.StatusCompleted,
		fmt.Sprintf("status %q, residue %d", cert.Status, cert.Residue))
}

// stateGone: the erased state reads back empty at version 0, and the profile is gone (404).
func (s *subjectRun) stateGone(ctx context.Context) error {
	got, err := s.agent.must(ctx, http.StatusOK, "POST", "/v1/agent-state/read", map[string]any{"scope": s.scope})
	if err != nil {
		return err
	}
	if body, _ := got["body"].(map[string]any); len(body) != 0 || fmt.Sprint(got["version"]) != "0" {
		return fmt.Errorf("the state still reads version %v with %d fields", got["version"], len(body))
	}
	s.gone = true
	code, _, _, err := s.integ.do(ctx, "GET", "/v1/profiles/"+s.profileID, nil)
	if err != nil {
		return err
	}
	if code != http.StatusNotFound {
		return fmt.Errorf("GET /v1/profiles/{id} answered %d after the erasure, want 404", code)
	}
	return nil
}

// errorCode is the code of a JSON error answer ({"error": {"code"}}), or "".
func errorCode(data []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil {
		return ""
	}
	return e.Error.Code
}
