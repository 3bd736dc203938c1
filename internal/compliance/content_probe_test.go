package compliance_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
	"github.com/agentmemory/agentmemory/internal/signing"
)

// TestContentProbeFindsUnlinkedSubjectData (issue 29 §1b): written before her profile
// existed and linked to nobody, a working state holds her e-mail and phone in a field not
// declared pii (and her name in a pii field, which masking did not know), another state only
// her name in the pii field, a note names her (the gate did not know the name yet; once the
// profile exists the gate refuses it), and documents under the mask and refuse policies name
// her. (The gate's name layer reads capitalised names: a lower-case name it does not know
// gets in, as a profile's name the gate learns only when the profile exists.) Her erasure erases the handle match, lists the name-only matches as residue and ends
// completed_with_residue with a signed certificate that verifies offline and never says
// "nothing found"; a compliance person then decides each residue item, receipted.
func TestContentProbeFindsUnlinkedSubjectData(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, engine)
			_, priv, err := ed25519.GenerateKey(rand.Reader)
			require.NoError(t, err)
			signer, err := signing.NewSigner(priv, time.Time{})
			require.NoError(t, err)
			e.Deps.Compliance.Signer = signer
			seedSpace(e)
			e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true},
				"agent_memory": map[string]any{"enabled": true}, "knowledge": map[string]any{"enabled": true}})
			shop := e.AgentKey("shop-bot", "acme", auth.ScopeAgentState)
			bot := e.AgentKey("bot-a", "acme", "agent_memory", "agent_memory:write")
			integ := e.PersonKey("integrator", auth.RoleIntegration)
			comp := e.PersonKey("dpo", auth.RoleCompliance)
			const name, email, phone = "Quorra Zelinsky", "quorra.zelinsky@example.com", "+55 11 97777-1234"

			// Before her profile: a state with her handles in plain fields and her name in the pii field.
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{
				"scope": map[string]any{"kind": "conversation", "id": "c-handles"},
				"body":  map[string]any{"step": "call", "offer": "mail " + email + " or call (11) 97777-1234", "cart_note": name + " wants gift wrap"},
			})
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{
				"scope": map[string]any{"kind": "conversation", "id": "c-name"},
				"body":  map[string]any{"step": "cart", "cart_note": name + " asked for gift wrap"},
			})
			e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", shop, map[string]any{
				"scope": map[string]any{"kind": "conversation", "id": "c-other"}, "body": map[string]any{"step": "pay", "cart_note": "blue ribbon"},
			})
			// A turn of a conversation linked to nobody names her (sealed under the conversation's
			// key since issue 29 §1: the probe unseals it to read it).
			e.MustDo(http.StatusCreated, "POST", "/v1/turns", integ, map[string]any{"conversation_id": "c-turn", "speaker": "customer", "text": "this is quorra zelinsky, about my gift wrap"})
			noteID := e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", bot,
				map[string]any{"kind": "procedure", "title": "Weekend deliveries", "body": "quorra zelinsky prefers weekend deliveries.", "tags": []string{"delivery"}}).JSON(t)["id"].(string)
			emb, err := llm.New(llm.Config{Host: llmtest.NewEmbed(t).URL, Model: "unused"})
			require.NoError(t, err)
			ks := e.App.Knowledge
			ks.Embedder = emb
			admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
			require.NoError(t, err)
			for _, policy := range []string{knowledge.PersonalDataMask, knowledge.PersonalDataRefuse} {
				kb, err := ks.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: "kb-" + policy, Settings: knowledge.Settings{PersonalData: policy, Readers: &knowledge.Readers{Space: true}}})
				require.NoError(t, err)
				d, _, err := ks.Submit(ctx, admin, kb.ID, knowledge.SubmitRequest{Text: "Quorra Zelinsky asked about the zanzibar exchange.", SourceURI: "crm://" + policy})
				require.NoError(t, err)
				_, err = ks.Ingest(ctx, d.ID)
				require.NoError(t, err)
			}

			// Her profile now exists: the gate knows her name and refuses a new note naming her.
			e.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{"name": name, "handles": []string{"email:" + email, "phone:" + phone}})
			r := e.Do("POST", "/v1/agent-memory/notes", bot, map[string]any{"kind": "procedure", "title": "Again", "body": "quorra zelinsky called.", "tags": []string{"x"}})
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, "the gate refuses her name once her profile exists: %s", r.Body)

			view, row := erase(t, e, comp, "email:"+email)
			require.Equal(t, compliance.StatusCompletedWithResidue, view.Status, "reason: %s", view.Reason)
			cert := view.Certificate
			require.NotNil(t, cert)
			require.Equal(t, compliance.StatusCompletedWithResidue, cert.Status)
			require.False(t, cert.NothingFound)
			byStore := map[string]compliance.ContentReport{}
			for _, st := range cert.Stores {
				require.Zero(t, st.Probe, "store %s", st.Store)
				if st.Content != nil {
					byStore[st.Store] = *st.Content
				}
			}
			require.Equal(t, 1, byStore["state"].ByHandle, "the state holding her e-mail and phone")
			require.Equal(t, 1, byStore["state"].ByName, "the state holding her name only, in a pii field")
			require.Equal(t, 1, byStore["notes"].ByName)
			require.Equal(t, 2, byStore["knowledge"].ByName, "the mask and refuse documents")
			require.Equal(t, 1, byStore["turns"].ByName, "the unlinked conversation's turn naming her")
			require.Equal(t, 5, cert.Residue)

			// Offline: the stored certificate verifies under the server's public keys.
			var sig signing.Signature
			require.NoError(t, json.Unmarshal([]byte(row.CertificateSignature), &sig))
			require.NoError(t, signing.Verify([]byte(row.Certificate), sig, signer.Keys()))

			// The handle match is gone through the API; the name-only items are still there, listed.
			version := func(conv string) string {
				return fmt.Sprint(e.MustDo(http.StatusOK, "POST", "/v1/agent-state/read", shop, map[string]any{"scope": map[string]any{"kind": "conversation", "id": conv}}).JSON(t)["version"])
			}
			require.Equal(t, "0", version("c-handles"), "the state holding her handles is erased")
			require.NotEqual(t, "0", version("c-name"), "a name-only state waits for a person")
			require.NotEqual(t, "0", version("c-other"))
			e.MustDo(http.StatusOK, "GET", "/v1/agent-memory/notes/"+noteID, bot, nil)
			require.Len(t, view.Residue, 5)
			kinds := map[string]int{}
			for _, it := range view.Residue {
				require.Equal(t, compliance.FindingPending, it.Status)
				kinds[it.Kind]++
			}
			require.Equal(t, map[string]int{"agent_state": 1, "note": 1, knowledge.KindDocument: 2, erasure.KindTurn: 1}, kinds)
			var n int
			require.NoError(t, e.DB.NewRaw("SELECT count(*) FROM erasures WHERE id = ? AND sealed_needles IS NOT NULL", row.ID).Scan(ctx, &n))
			require.Zero(t, n, "the needles leave the row when the erasure ends")

			// A person decides: the note is erased (all versions), a document is not her.
			var noteFinding, docFinding string
			for _, it := range view.Residue {
				switch {
				case it.Kind == "note":
					noteFinding = it.ID
				case it.Kind == knowledge.KindDocument && docFinding == "":
					docFinding = it.ID
				}
			}
			p, err := auth.Authenticate(ctx, e.DB, comp)
			require.NoError(t, err)
			_, err = e.Deps.Compliance.DecideResidue(ctx, p, row.ID, noteFinding, compliance.ResidueDecision{Decision: "maybe"})
			require.Equal(t, "decision", memberOf(err))
			got, err := e.Deps.Compliance.DecideResidue(ctx, p, row.ID, noteFinding, compliance.ResidueDecision{Decision: compliance.DecideErase})
			require.NoError(t, err)
			require.Equal(t, compliance.FindingErased, got.Status)
			require.Equal(t, http.StatusNotFound, e.Do("GET", "/v1/agent-memory/notes/"+noteID, bot, nil).Status)
			_, err = e.Deps.Compliance.DecideResidue(ctx, p, row.ID, docFinding, compliance.ResidueDecision{Decision: compliance.DecideNotSubject})
			require.NoError(t, err)
			_, err = e.Deps.Compliance.DecideResidue(ctx, p, row.ID, docFinding, compliance.ResidueDecision{Decision: compliance.DecideErase})
			require.Error(t, err, "decided once")
			var receiptsN int
			require.NoError(t, e.DB.NewRaw("SELECT count(*) FROM receipts WHERE action = 'erasure.residue'").Scan(ctx, &receiptsN))
			require.Equal(t, 2, receiptsN)
			var after compliance.ErasureView
			require.NoError(t, json.Unmarshal(e.MustDo(http.StatusOK, "GET", "/v1/erasures/"+row.ID, comp, nil).Body, &after))
			require.Equal(t, compliance.StatusCompletedWithResidue, after.Status, "the signed certificate stays as issued")
		})
	}
}
