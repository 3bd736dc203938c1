package knowledge_test

import (
	"context"
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
