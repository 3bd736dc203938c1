package knowledge_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/knowledge"
)

// ER-1 (issue 29 §1): the restore procedure's rebuild drops every full-text and vector entry
// of a chunk whose row is gone (a restored copy's derived rows of a deleted document) and
// rebuilds the others from the rows, so neither a word search nor a nearest-neighbour probe
// finds the gone chunk, and the kept document retrieves as before. Every engine and path.
func TestRebuildIndexDropsOrphanedEntries(t *testing.T) {
	each(t, func(t *testing.T, r *rig) {
		ctx := context.Background()
		kb := r.base(t, "handbook", nil)
		gone := r.ingest(t, kb, knowledge.SubmitRequest{Text: "Refunds go to the original card within zanzibar five days.", SourceURI: "kb://refunds", Title: "Refunds", Version: "v1"})
		kept := r.ingest(t, kb, knowledge.SubmitRequest{Text: "Exchanges are free for members of the gold tier.", SourceURI: "kb://exchanges", Title: "Exchanges", Version: "v1"})
		var goneIDs, keptIDs []string
		require.NoError(t, r.DB.NewRaw("SELECT id FROM knowledge_chunks WHERE document_id = ?", gone.ID).Scan(ctx, &goneIDs))
		require.NoError(t, r.DB.NewRaw("SELECT id FROM knowledge_chunks WHERE document_id = ?", kept.ID).Scan(ctx, &keptIDs))
		keptVectors, err := r.ks.VectorsIndexed(ctx, keptIDs)
		require.NoError(t, err)
		_, _, ft := stored(t, r, gone.ID, "zanzibar")
		require.Equal(t, 1, ft)

		// The chunk rows go, their derived entries stay behind (what a restored copy holds of
		// rows its restore removed, or an index out of step with its rows).
		_, err = r.DB.ExecContext(ctx, "DELETE FROM knowledge_chunks WHERE document_id = ?", gone.ID)
		require.NoError(t, err)

		fullText, _, err := r.ks.RebuildIndex(ctx)
		require.NoError(t, err)
		_, _, ft = stored(t, r, gone.ID, "zanzibar")
		require.Zero(t, ft, "a full-text entry of a gone chunk")
		n, err := r.ks.VectorsIndexed(ctx, goneIDs)
		require.NoError(t, err)
		require.Zero(t, n, "a vector of a gone chunk")
		after, err := r.ks.VectorsIndexed(ctx, keptIDs)
		require.NoError(t, err)
		require.Equal(t, keptVectors, after, "the kept chunks' vectors are rebuilt")
		_, _, ft = stored(t, r, kept.ID, "gold")
		require.Equal(t, 1, ft)
		if r.path == knowledge.PathSQLiteVec {
			require.Equal(t, len(keptIDs), fullText)
		}
	})
}

// ER-1 (issue 29 §1): documents stored in clear before sealing existed (a legacy row: no key
// id, title, body and chunk text in clear) read as before, and the restore procedure seals
// them under a new document key: afterwards no clear column holds their text, retrieval and
// the title filter answer as before (the filter by the title's keyed hash), a legacy
// tombstone keeps no title, and a second run seals and removes nothing. Every engine and path.
func TestRestoreSealsLegacyClearDocuments(t *testing.T) {
	each(t, func(t *testing.T, r *rig) {
		ctx := context.Background()
		kb := r.base(t, "handbook", nil)
		d := r.ingest(t, kb, knowledge.SubmitRequest{Text: "Refunds go to the original card within zanzibar five days.", SourceURI: "kb://refunds", Title: "Refunds", Version: "v1"})
		old := r.ingest(t, kb, knowledge.SubmitRequest{Text: "Store credit expires after a year.", SourceURI: "kb://credit", Title: "Credit"})
		r.MustDo(http.StatusOK, "DELETE", "/v1/knowledge/"+kb+"/documents/"+old.ID, r.AdminKey, nil)
		texts, err := r.ks.ChunkTexts(ctx, d.ID)
		require.NoError(t, err)
		require.Len(t, texts, 1)
		// Back to the shape a row had before sealing: clear columns, no key id, no key.
		for _, q := range []string{
			"UPDATE knowledge_documents SET title = 'Refunds', body = ?, sealed_key = '', sealed_title = NULL, sealed_body = NULL, title_hash = '' WHERE id = ?",
			"UPDATE knowledge_chunks SET heading = 'Refunds', text = ?, sealed_key = '', sealed_text = NULL, sealed_embedding = NULL WHERE document_id = ?",
		} {
			_, err := r.DB.ExecContext(ctx, q, texts[0], d.ID)
			require.NoError(t, err)
		}
		_, err = r.DB.ExecContext(ctx, "UPDATE knowledge_documents SET title = 'Credit', sealed_key = '' WHERE id = ?", old.ID)
		require.NoError(t, err)
		require.NoError(t, r.Keys.Destroy(ctx, knowledge.DocumentKeyID(d.ID)))
		reader := r.AgentKey("support-bot", "acme", "knowledge:read")
		retrieveTitled := func() []map[string]any {
			res := r.retrieve(t, reader, map[string]any{"query": "zanzibar refunds", "kbs": []string{kb}, "filters": map[string]any{"title": "Refunds"}})
			return chunksOf(res)
		}
		got := retrieveTitled()
		require.Len(t, got, 1, "a legacy clear row reads as before")
		require.Equal(t, "Refunds", got[0]["title"])
		require.Contains(t, got[0]["text"], "zanzibar")

		counts, err := r.ks.Restore(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, counts.Sealed, "the document, its chunk and the tombstone")
		require.Zero(t, counts.Removed)
		var clear int
		require.NoError(t, r.DB.NewRaw("SELECT count(*) FROM knowledge_documents WHERE title <> '' OR body <> '' OR sealed_key = ''").Scan(ctx, &clear))
		require.Zero(t, clear, "no document left in clear")
		require.NoError(t, r.DB.NewRaw("SELECT count(*) FROM knowledge_chunks WHERE text <> '' OR heading <> '' OR sealed_key = '' OR sealed_text IS NULL OR sealed_embedding IS NULL").Scan(ctx, &clear))
		require.Zero(t, clear, "no chunk left in clear")
		ok, err := r.Keys.Exists(ctx, knowledge.DocumentKeyID(d.ID))
		require.NoError(t, err)
		require.True(t, ok, "sealed under a new document key")
		got = retrieveTitled()
		require.Len(t, got, 1, "the sealed document retrieves, filtered by its title")
		require.Equal(t, "Refunds", got[0]["title"])
		require.Contains(t, got[0]["text"], "zanzibar")
		tomb, err := r.ks.GetDocument(ctx, r.admin, kb, old.ID)
		require.NoError(t, err)
		require.Equal(t, knowledge.StatusDeleted, tomb.Status)
		require.Empty(t, tomb.Title, "a legacy tombstone keeps no title")

		again, err := r.ks.Restore(ctx)
		require.NoError(t, err)
		require.Zero(t, again.Sealed)
		require.Zero(t, again.Removed)
		require.Equal(t, 1, len(retrieveTitled()))
	})
}
