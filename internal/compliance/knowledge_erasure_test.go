package compliance_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/erasure"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
)

// knowledgeLeft counts what the database holds of documents docIDs: chunk rows, stored
// vectors, and full-text entries matching word.
func knowledgeLeft(t *testing.T, e *apptest.Env, docIDs []string, word string) (rows, vectors, fulltext int) {
	t.Helper()
	ctx := context.Background()
	for _, id := range docIDs {
		var n, v int
		require.NoError(t, e.DB.NewRaw("SELECT count(*) FROM knowledge_chunks WHERE document_id = ?", id).Scan(ctx, &n))
		require.NoError(t, e.DB.NewRaw("SELECT count(*) FROM knowledge_chunks WHERE document_id = ? AND embedding IS NOT NULL", id).Scan(ctx, &v))
		rows, vectors = rows+n, vectors+v
	}
	if db.IsSQLite(e.DB) {
		require.NoError(t, e.DB.NewRaw("SELECT count(*) FROM knowledge_chunks_fts WHERE knowledge_chunks_fts MATCH ?", `"`+word+`"`).Scan(ctx, &fulltext))
	} else {
		require.NoError(t, e.DB.NewRaw("SELECT count(*) FROM knowledge_chunks WHERE search @@ to_tsquery('simple', ?)", word).Scan(ctx, &fulltext))
	}
	return
}

// TestSubjectErasureReachesKnowledge (KN-3, GOV-2): documents ingested under
// allow_with_subject name their subject (any of the profile's handles, kept as a keyed hash).
// The subject's erasure, on the real workflow, deletes every version of them (rows, chunks,
// vectors, full-text entries) and nothing of anyone else; afterwards retrieval, full text and
// vectors hold nothing of them, the certificate counts the documents and chunks under the
// store "knowledge" with probe 0, and the probe itself sees a vector or full-text entry left
// behind.
func TestSubjectErasureReachesKnowledge(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, engine)
			emb, err := llm.New(llm.Config{Host: llmtest.NewEmbed(t).URL, Model: "unused"})
			require.NoError(t, err)
			ks := e.App.Knowledge
			ks.Embedder = emb
			e.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
			admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
			require.NoError(t, err)
			integ := e.PersonKey("integrator", auth.RoleIntegration)
			comp := e.PersonKey("dpo", auth.RoleCompliance)
			e.MustDo(http.StatusCreated, "POST", "/v1/profiles", integ, map[string]any{"name": "Ana Souza", "handles": []string{"email:ana.souza@example.com", "phone:+55 11 91234-5678"}})

			cases, err := ks.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: "cases", Settings: knowledge.Settings{PersonalData: knowledge.PersonalDataWithSubject, Readers: &knowledge.Readers{Space: true}}})
			require.NoError(t, err)
			strict, err := ks.CreateBase(ctx, admin, knowledge.CreateBaseRequest{Name: "strict", Settings: knowledge.Settings{Readers: &knowledge.Readers{Space: true}}})
			require.NoError(t, err)
			ingest := func(kb string, req knowledge.SubmitRequest) knowledge.Document {
				t.Helper()
				d, _, err := ks.Submit(ctx, admin, kb, req)
				require.NoError(t, err)
				_, err = ks.Ingest(ctx, d.ID)
				require.NoError(t, err)
				d, err = ks.GetDocument(ctx, admin, kb, d.ID)
				require.NoError(t, err)
				return d
			}
			// The subject is required under allow_with_subject and refused elsewhere.
			_, _, err = ks.Submit(ctx, admin, cases.ID, knowledge.SubmitRequest{Text: "x", SourceURI: "kb://x"})
			require.Equal(t, "subject", memberOf(err))
			_, _, err = ks.Submit(ctx, admin, strict.ID, knowledge.SubmitRequest{Text: "x", SourceURI: "kb://x", Subject: "email:ana.souza@example.com"})
			require.Equal(t, "subject", memberOf(err))
			_, _, err = ks.Submit(ctx, admin, cases.ID, knowledge.SubmitRequest{Text: "x", SourceURI: "kb://x", Subject: "not a handle"})
			require.Equal(t, "subject", memberOf(err))

			// Ana's case file in two versions (named by her phone), Bruno's, and a plain policy.
			v1 := ingest(cases.ID, knowledge.SubmitRequest{Text: "Ana Souza (ana.souza@example.com) asked about the zanzibar refund.", SourceURI: "crm://case/1", Title: "Case of Ana Souza", Version: "v1", Subject: "phone:+55 11 91234-5678"})
			v2 := ingest(cases.ID, knowledge.SubmitRequest{Text: "Ana Souza (ana.souza@example.com) got the zanzibar refund on 3 May.", SourceURI: "crm://case/1", Title: "Case of Ana Souza", Version: "v2", Subject: "phone:+55 11 91234-5678"})
			bruno := ingest(cases.ID, knowledge.SubmitRequest{Text: "Bruno Lima (bruno@example.com) asked about the quokka exchange.", SourceURI: "crm://case/2", Subject: "email:bruno@example.com"})
			policy := ingest(strict.ID, knowledge.SubmitRequest{Text: "A zanzibar refund takes five days.", SourceURI: "kb://refunds"})
			require.True(t, v2.NamesSubject)
			require.False(t, policy.NamesSubject)
			require.Equal(t, knowledge.StatusSuperseded, mustDoc(t, ks, admin, cases.ID, v1.ID).Status)
			n, vec, ft := knowledgeLeft(t, e, []string{v2.ID}, "zanzibar")
			require.Equal(t, [3]int{1, 1, 2}, [3]int{n, vec, ft}, "ana's chunk and the policy's full-text entry")
			var anaChunks []string
			require.NoError(t, e.DB.NewRaw("SELECT id FROM knowledge_chunks WHERE document_id = ?", v2.ID).Scan(ctx, &anaChunks))
			indexed, err := ks.VectorsIndexed(ctx, anaChunks)
			require.NoError(t, err)
			require.NotZero(t, indexed, "her chunk's vector is stored (on SQLite in sqlite-vec too)")
			var stored string
			require.NoError(t, e.DB.NewRaw("SELECT subject_hash FROM knowledge_documents WHERE id = ?", v2.ID).Scan(ctx, &stored))
			require.NotContains(t, stored, "91234", "only a keyed hash")
			require.NotEmpty(t, stored)

			view, _ := erase(t, e, comp, "email:ana.souza@example.com")
			require.Equal(t, compliance.StatusCompleted, view.Status, "reason: %s", view.Reason)
			cert := view.Certificate
			counts := map[string]int{}
			for _, it := range cert.Items {
				counts[it.Kind] = it.Count
				if strings.HasPrefix(it.Kind, "knowledge_") {
					require.Equal(t, compliance.StoreKnowledge, it.Store)
				}
			}
			require.Equal(t, 2, counts[knowledge.KindDocument], "both versions")
			require.Equal(t, 1, counts[knowledge.KindChunk], "v2's chunk (v1's left with its supersession)")
			var report *compliance.StoreReport
			for i := range cert.Stores {
				if cert.Stores[i].Store == compliance.StoreKnowledge {
					report = &cert.Stores[i]
				}
			}
			require.NotNil(t, report, "the certificate lists the knowledge store")
			require.Equal(t, 2, counts[knowledge.KindKey], "both versions' document keys")
			require.Equal(t, 5, report.Removed, "2 documents, 1 chunk, 2 document keys")
			require.Zero(t, report.Probe)
			require.Contains(t, report.Covers, "knowledge_chunks.subject_hash")

			// Nothing of Ana in rows, vectors, full text or retrieval; Bruno and the policy stay.
			n, vec, ft = knowledgeLeft(t, e, []string{v1.ID, v2.ID}, "zanzibar")
			require.Equal(t, [3]int{0, 0, 1}, [3]int{n, vec, ft}, "only the policy's full-text entry is left")
			indexed, err = ks.VectorsIndexed(ctx, anaChunks)
			require.NoError(t, err)
			require.Zero(t, indexed, "no vector of hers is left in any index (MS-4, KN-3)")
			var docs int
			require.NoError(t, e.DB.NewRaw("SELECT count(*) FROM knowledge_documents WHERE id IN (?, ?)", v1.ID, v2.ID).Scan(ctx, &docs))
			require.Zero(t, docs)
			reader := e.AgentKey("support-bot", "acme", "knowledge:read")
			got := e.MustDo(http.StatusOK, "POST", "/v1/knowledge/retrieve", reader, map[string]any{"query": "Ana Souza zanzibar refund", "kbs": []string{cases.ID, strict.ID}, "top_k": 10}).JSON(t)
			var seen []string
			for _, c := range got["chunks"].([]any) {
				seen = append(seen, c.(map[string]any)["document_id"].(string))
			}
			require.ElementsMatch(t, []string{bruno.ID, policy.ID}, seen)
			require.NotContains(t, got["context"], "ana.souza")
			require.Equal(t, knowledge.StatusReady, mustDoc(t, ks, admin, cases.ID, bruno.ID).Status)

			// The probe sees vectors and full-text entries, not only rows: a chunk planted with
			// her hash is found as row, vector and full text; on SQLite an orphaned full-text
			// entry (no row) is found too.
			target := erasure.Target{SpaceID: e.SpaceID, Kind: erasure.Subject, HandleHashes: []string{stored}}
			left, err := knowledge.Eraser{}.Residue(ctx, e.DB, target)
			require.NoError(t, err)
			require.Zero(t, left.Count())
			_, err = e.DB.ExecContext(ctx, "INSERT INTO knowledge_chunks (id, space_id, kb_id, document_id, ord, heading, start_byte, end_byte, tokens, text, embedding, subject_hash, created_at) VALUES ('kc_planted', ?, ?, 'kd_gone', 0, '', 0, 4, 1, 'zanzibar', ?, ?, ?)",
				e.SpaceID, cases.ID, []byte{0, 0, 128, 63}, stored, e.Deps.Now())
			require.NoError(t, err)
			if db.IsSQLite(e.DB) {
				_, err = e.DB.ExecContext(ctx, "INSERT INTO knowledge_chunks_fts (chunk_id, heading, text) VALUES ('kc_planted', '', 'zanzibar'), ('kc_orphan', '', 'zanzibar')")
				require.NoError(t, err)
			} else {
				// PostgreSQL's full-text entry is the row's search column, written with the row.
				_, err = e.DB.ExecContext(ctx, "UPDATE knowledge_chunks SET search = to_tsvector('simple', 'zanzibar') WHERE id = 'kc_planted'")
				require.NoError(t, err)
			}
			left, err = knowledge.Eraser{}.Residue(ctx, e.DB, target)
			require.NoError(t, err)
			require.Equal(t, []string{"kc_planted"}, left[knowledge.KindChunk])
			require.Equal(t, []string{"kc_planted"}, left[knowledge.KindVector])
			if db.IsSQLite(e.DB) {
				require.Equal(t, []string{"kc_orphan", "kc_planted"}, left[knowledge.KindFullText])
			} else {
				require.Equal(t, []string{"kc_planted"}, left[knowledge.KindFullText])
			}
		})
	}
}

// memberOf is the member a fault names ("" for none).
func memberOf(err error) string {
	fe := fault.As(err)
	if fe == nil {
		return ""
	}
	m, _ := fe.Details["member"].(string)
	return m
}

func mustDoc(t *testing.T, ks *knowledge.Service, p auth.Principal, kb, id string) knowledge.Document {
	t.Helper()
	d, err := ks.GetDocument(context.Background(), p, kb, id)
	require.NoError(t, err)
	return d
}
