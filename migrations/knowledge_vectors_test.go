package migrations_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/migrate"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/migrations"
	"github.com/agentmemory/agentmemory/models"
)

func float32s(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// The backfill puts the vectors of chunks stored before sqlite-vec into the vector table of
// their length, searchable within their space and base; a zero vector is left out.
// PostgreSQL has no vector table: the backfill does nothing there.
func TestBackfillKnowledgeVectors(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, migrations.BackfillKnowledgeVectors(ctx, dbtest.Open(t, "postgres")))

	d := dbtest.Open(t, "sqlite")
	now := time.Now().UTC()
	doc := models.KnowledgeDocument{ID: "kd_1", SpaceID: "sp_1", KBID: "kb_1", SourceURI: "kb://x", Title: "x", VersionLabel: "1", Format: "text",
		ContentHash: "h", Status: "ready", Kinds: "[]", Chunks: 3, EmbedModel: "m", Dims: 3, CreatedBy: "k", CreatedAt: now, UpdatedAt: now, IndexedAt: &now}
	_, err := d.NewInsert().Model(&doc).Exec(ctx)
	require.NoError(t, err)
	chunks := []models.KnowledgeChunk{
		{ID: "kc_a", SpaceID: "sp_1", KBID: "kb_1", DocumentID: "kd_1", Embedding: float32s(1, 0, 0), CreatedAt: now},
		{ID: "kc_b", SpaceID: "sp_1", KBID: "kb_1", DocumentID: "kd_1", Embedding: float32s(0, 1, 0), CreatedAt: now},
		{ID: "kc_z", SpaceID: "sp_1", KBID: "kb_1", DocumentID: "kd_1", Embedding: float32s(0, 0, 0), CreatedAt: now},
	}
	_, err = d.NewInsert().Model(&chunks).Exec(ctx)
	require.NoError(t, err)

	require.NoError(t, migrations.BackfillKnowledgeVectors(ctx, d))
	var rows []struct {
		ID        string `bun:"chunk_id"`
		IndexedAt int64  `bun:"indexed_at"`
	}
	require.NoError(t, d.NewRaw("SELECT chunk_id, indexed_at FROM "+migrations.KnowledgeVectorTable(3)+
		" WHERE embedding MATCH ? AND k = 10 AND space_id = 'sp_1' AND kb_id = 'kb_1' ORDER BY distance", float32s(0.1, 1, 0)).Scan(ctx, &rows))
	require.Len(t, rows, 2)
	require.Equal(t, "kc_b", rows[0].ID)
	require.Equal(t, "kc_a", rows[1].ID)
	require.Equal(t, now.UnixMilli(), rows[0].IndexedAt)
	var other int
	require.NoError(t, d.NewRaw("SELECT count(*) FROM "+migrations.KnowledgeVectorTable(3)+
		" WHERE embedding MATCH ? AND k = 10 AND space_id = 'sp_2' AND kb_id = 'kb_1'", float32s(0.1, 1, 0)).Scan(ctx, &other))
	require.Zero(t, other, "another space's search finds nothing")
}

// Rolling back the knowledge vectors migration on PostgreSQL drops the pgvector tables
// internal/knowledge creates (any knowledge_vec_<dims> table: they reference knowledge_chunks,
// whose own rollback could not drop it otherwise).
func TestKnowledgeVectorsDownDropsVectorTables(t *testing.T) {
	ctx := context.Background()
	d := dbtest.Open(t, "postgres")
	_, err := d.ExecContext(ctx, "CREATE TABLE knowledge_vec_3 (chunk_id TEXT PRIMARY KEY REFERENCES knowledge_chunks (id) ON DELETE CASCADE)")
	require.NoError(t, err)
	m := migrate.NewMigrator(d, migrations.Migrations)
	var mig *migrate.Migration
	for _, x := range migrations.Migrations.Sorted() {
		if x.Name == "20261202110000" {
			mig = &x
		}
	}
	require.NotNil(t, mig)
	require.NoError(t, mig.Down(ctx, m, mig))
	var n int
	require.NoError(t, d.NewRaw("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'knowledge_vec_3'").Scan(ctx, &n))
	require.Zero(t, n)
	_, err = d.ExecContext(ctx, "DROP TABLE knowledge_chunks")
	require.NoError(t, err, "nothing references the chunks any more")
}
