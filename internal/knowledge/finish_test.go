package knowledge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/receipts"
)

// TestLateEndingWritesNothing (issue 34 §1): an ingest that ends a document its twin (the same
// activity on another replica) already ended writes nothing: no second document.failed
// receipt, the first ending's status and reason kept, and it answers the document's current
// status. Before the fix the second ending appended its receipt and updated no row.
func TestLateEndingWritesNothing(t *testing.T) {
	each(t, func(t *testing.T, r *rig) {
		ctx := context.Background()
		kb := r.base(t, "handbook", nil)
		ready := r.ingest(t, kb, knowledge.SubmitRequest{Text: "Gift cards never expire.", SourceURI: "kb://gift"})
		failed, _, err := r.ks.Submit(ctx, r.admin, kb, knowledge.SubmitRequest{Text: "Returns take thirty days.", SourceURI: "kb://returns"})
		require.NoError(t, err)
		require.NoError(t, r.ks.Fail(ctx, failed.ID, "first_reason"))
		before := endings(t, r)

		res, err := r.ks.FinishStale(ctx, failed.ID, knowledge.StatusFailed, "second_reason")
		require.NoError(t, err)
		require.Equal(t, knowledge.StatusFailed, res.Status)
		res, err = r.ks.FinishStale(ctx, ready.ID, knowledge.StatusFailed, "second_reason")
		require.NoError(t, err)
		require.Equal(t, knowledge.StatusReady, res.Status, "got %+v, want the indexed document's status", res)
		require.Equal(t, ready.Chunks, res.Chunks)

		require.Equal(t, before, endings(t, r), "a late ending leaves no receipt")
		doc, err := r.ks.GetDocument(ctx, r.admin, kb, failed.ID)
		require.NoError(t, err)
		require.Equal(t, "first_reason", *doc.Reason)
		doc, err = r.ks.GetDocument(ctx, r.admin, kb, ready.ID)
		require.NoError(t, err)
		require.Equal(t, knowledge.StatusReady, doc.Status)
	})
}

// endings counts the space's document.failed and document.refused receipts.
func endings(t *testing.T, r *rig) int {
	t.Helper()
	rs, err := receipts.List(context.Background(), r.DB, r.SpaceID, 0, 10000)
	require.NoError(t, err)
	n := 0
	for _, rc := range rs {
		if rc.Action == "document.failed" || rc.Action == "document.refused" {
			n++
		}
	}
	return n
}
