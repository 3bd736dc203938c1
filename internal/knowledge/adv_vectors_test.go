package knowledge_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
)

// Adversarial (issue 18, on every vector path): the vector index is shared by every space,
// and another space holds many chunks nearer to the query (the same text) than anything of
// the caller's: a retrieval answers only the caller's chunks, and still finds them (the
// filter inside the search neither widens nor starves it). A document deleted, or superseded
// by a new version of its source, is never answered again.
func TestVectorRetrievalAcrossSpacesDeleteSupersede(t *testing.T) {
	each(t, func(t *testing.T, r *rig) {
		ctx := context.Background()
		const text = "Gift cards are mailed within seven days of the order."
		t.Logf("vector path %s", r.path)
		mine := r.base(t, "mine", nil)
		own := r.ingest(t, mine, knowledge.SubmitRequest{Text: text, SourceURI: "kb://gift"})

		otherSpace, otherAdmin := r.NewSpace("other", true)
		r.MustDo(http.StatusOK, "PUT", "/v1/documents/features", otherAdmin, map[string]any{"knowledge": map[string]any{"enabled": true}})
		theirs := r.MustDo(http.StatusCreated, "POST", "/v1/knowledge", otherAdmin,
			map[string]any{"name": "theirs", "settings": map[string]any{"readers": map[string]any{"space": true}}}).JSON(t)["id"].(string)
		them, err := auth.Authenticate(ctx, r.DB, otherAdmin)
		require.NoError(t, err)
		require.Equal(t, otherSpace, them.SpaceID)
		for i := 0; i < 260; i++ { // more than hnsw.ef_search (200) nearer than anything of the caller
			d, _, err := r.ks.Submit(ctx, them, theirs, knowledge.SubmitRequest{Text: text, SourceURI: fmt.Sprintf("kb://gift/%d", i)})
			require.NoError(t, err)
			_, err = r.ks.Ingest(ctx, d.ID)
			require.NoError(t, err)
		}

		agent := r.AgentKey("support-bot", "acme", "knowledge:read")
		ask := func(q string, topK int) []string {
			t.Helper()
			return docIDsOf(r.retrieve(t, agent, map[string]any{"query": q, "kbs": []string{mine}, "top_k": topK}))
		}
		for _, k := range []int{1, 5, 50} {
			require.Equal(t, []string{own.ID}, ask(text, k), "path %s, top_k %d", r.path, k)
		}
		// The other space's base is not the caller's: missing, whatever it is asked with.
		for _, kbs := range [][]string{{theirs}, {mine, theirs}} {
			resp := r.MustDo(http.StatusNotFound, "POST", "/v1/knowledge/retrieve", agent, map[string]any{"query": text, "kbs": kbs})
			require.Equal(t, knowledge.CodeBaseNotFound, resp.ErrorCode(t))
		}
		for _, bad := range []map[string]any{
			{"query": text, "kbs": []string{}}, {"query": text, "kbs": []string{mine}, "top_k": -1},
			{"query": text, "kbs": []string{mine}, "top_k": 51}, {"query": text, "kbs": []string{mine}, "top_k": 1e9},
		} {
			r.MustDo(http.StatusBadRequest, "POST", "/v1/knowledge/retrieve", agent, bad)
		}
		r.MustDo(http.StatusBadRequest, "POST", "/v1/knowledge/retrieve", agent, `{"query":"gift","kbs":["`+mine+`"],"min_score":1e400}`)
		// min_score 1: only an exact match in direction passes (the same text here), never
		// a chunk of another space.
		got := r.retrieve(t, agent, map[string]any{"query": text, "kbs": []string{mine}, "min_score": 1})
		for _, id := range docIDsOf(got) {
			require.Equal(t, own.ID, id)
		}

		// Superseded by a new version of its source: only the new version is answered.
		newer := r.ingest(t, mine, knowledge.SubmitRequest{Text: "Gift cards are mailed within three days of the order.", SourceURI: "kb://gift"})
		old, err := r.ks.GetDocument(ctx, r.admin, mine, own.ID)
		require.NoError(t, err)
		require.Equal(t, knowledge.StatusSuperseded, old.Status)
		for _, k := range []int{1, 50} {
			require.Equal(t, []string{newer.ID}, ask(text, k), "path %s, top_k %d", r.path, k)
		}
		// Deleted: nothing of the caller's is left, and nothing of the other space comes in.
		r.MustDo(http.StatusOK, "DELETE", "/v1/knowledge/"+mine+"/documents/"+newer.ID, r.AdminKey, nil)
		for _, k := range []int{1, 50} {
			require.Empty(t, ask(text, k), "path %s, top_k %d", r.path, k)
		}
	})
}
