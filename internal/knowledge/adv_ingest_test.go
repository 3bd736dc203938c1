package knowledge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/knowledge"
)

// TestAdvIngestOfADocumentDeletedMeanwhile (adversarial): a document removed while its
// ingest runs (a subject's erasure deletes the row without the chain head's lock; simulated
// here by a trigger on the ingest's first chunk insert) leaves no chunk behind: the chunks of
// a document that no longer exists would keep the subject's text in the store.
func TestAdvIngestOfADocumentDeletedMeanwhile(t *testing.T) {
	each(t, func(t *testing.T, r *rig) {
		ctx := context.Background()
		kb := r.base(t, "handbook", nil)
		d, _, err := r.ks.Submit(ctx, r.admin, kb, knowledge.SubmitRequest{Text: "Gift cards never expire.", SourceURI: "kb://gift"})
		require.NoError(t, err)
		stmts := []string{`CREATE TRIGGER adv_erase AFTER INSERT ON knowledge_chunks BEGIN DELETE FROM knowledge_documents WHERE id = NEW.document_id; END`}
		if !db.IsSQLite(r.DB) {
			stmts = []string{
				`CREATE FUNCTION adv_erase() RETURNS trigger AS $$ BEGIN DELETE FROM knowledge_documents WHERE id = NEW.document_id; RETURN NULL; END $$ LANGUAGE plpgsql`,
				`CREATE TRIGGER adv_erase AFTER INSERT ON knowledge_chunks FOR EACH ROW EXECUTE FUNCTION adv_erase()`,
			}
		}
		for _, s := range stmts {
			_, err := r.DB.ExecContext(ctx, s)
			require.NoError(t, err, s)
		}
		_, _ = r.ks.Ingest(ctx, d.ID)
		var n int
		require.NoError(t, r.DB.NewRaw("SELECT COUNT(*) FROM knowledge_chunks WHERE document_id = ?", d.ID).Scan(ctx, &n))
		require.Zero(t, n, "chunks of a document that no longer exists")
	})
}
