package knowledge

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/internal/llm/hashembed"
	"github.com/agentmemory/agentmemory/internal/skips"
	"github.com/agentmemory/agentmemory/migrations"
	"github.com/agentmemory/agentmemory/models"
)

// abcdActions is every action text of testdata/abcd/guidelines.json (255), sorted: a small
// real corpus of one-sentence procedure steps.
func abcdActions(t testing.TB) []string {
	raw, err := os.ReadFile("../../testdata/abcd/guidelines.json")
	require.NoError(t, err)
	var flows map[string]struct {
		Subflows map[string]struct {
			Actions []struct {
				Text string `json:"text"`
			} `json:"actions"`
		} `json:"subflows"`
	}
	require.NoError(t, json.Unmarshal(raw, &flows))
	var out []string
	for _, f := range flows {
		for _, s := range f.Subflows {
			for _, a := range s.Actions {
				out = append(out, a.Text)
			}
		}
	}
	sort.Strings(out)
	return out
}

// seedChunks stores one ready document per text in base kbID of space spaceID, indexed at
// indexedAt, each with one chunk embedded by vector, through indexVectors on path vp as
// Ingest does. It returns the chunk ids in the order of texts.
func seedChunks(t testing.TB, d *bun.DB, vp VectorPath, spaceID, kbID string, indexedAt time.Time, texts []string, vector func(string) []float32) []string {
	t.Helper()
	ctx := context.Background()
	ids := make([]string, len(texts))
	err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		docs := make([]models.KnowledgeDocument, len(texts))
		rows := make([]models.KnowledgeChunk, len(texts))
		for i, text := range texts {
			at := indexedAt
			docs[i] = models.KnowledgeDocument{ID: auth.NewID("kd"), SpaceID: spaceID, KBID: kbID, SourceURI: fmt.Sprintf("kb://%s/%d", kbID, i),
				Title: "t", VersionLabel: "1", Format: "text", ContentHash: "h", Status: StatusReady, Kinds: "[]", Chunks: 1,
				EmbedModel: "m", Dims: hashembed.Dims, CreatedBy: "k", CreatedAt: at, UpdatedAt: at, IndexedAt: &at}
			rows[i] = models.KnowledgeChunk{ID: ChunkID(docs[i].ID, "1", 0, len(text)), SpaceID: spaceID, KBID: kbID, DocumentID: docs[i].ID,
				EndByte: len(text), Text: text, Embedding: encodeVector(vector(text)), CreatedAt: at}
			ids[i] = rows[i].ID
		}
		for lo := 0; lo < len(texts); lo += 500 {
			hi := min(lo+500, len(texts))
			ds, rs := docs[lo:hi], rows[lo:hi]
			if _, err := tx.NewInsert().Model(&ds).Exec(ctx); err != nil {
				return err
			}
			if _, err := tx.NewInsert().Model(&rs).Exec(ctx); err != nil {
				return err
			}
		}
		return indexVectors(ctx, tx, vp, rows, indexedAt)
	})
	require.NoError(t, err)
	if !db.IsSQLite(d) {
		// Statistics as autovacuum keeps them in service: a fresh table's planner estimates
		// (one row) made PostgreSQL join thousands of chunks in a nested loop.
		tables, err := vectorTables(ctx, d)
		require.NoError(t, err)
		_, err = d.ExecContext(ctx, "ANALYZE "+strings.Join(append([]string{"knowledge_chunks", "knowledge_documents"}, tables...), ", "))
		require.NoError(t, err)
	}
	return ids
}

// minPgvectorRecall is the share of the exact scan's chunks pgvector's HNSW search must find
// over a test's searches (measured on these corpora: 1.0 on the conformance corpus, about
// 0.97 on 3,000 steps of one base beside another space's 3,000; docs/scaling.md).
const minPgvectorRecall = 0.9

// recall counts, over a test's searches, the exact scan's chunks an index search found.
type recall struct{ found, total int }

func (r recall) rate() float64 {
	if r.total == 0 {
		return 1
	}
	return float64(r.found) / float64(r.total)
}

// conforms requires got (a search on path vp) to answer as exact (exactNearest) does:
// the same hits on the exact paths (sqlite-vec, the scan); on pgvector, whose HNSW index is
// approximate, as many hits, best first, each with its exact cosine (one the scan also
// found has the scan's score; one it did not scores at most the scan's last), and the
// chunks found counted in rc.
func conforms(t *testing.T, vp VectorPath, exact, got []vectorHit, rc *recall, msgAndArgs ...any) {
	t.Helper()
	if vp.Name != PathPgvector {
		require.Equal(t, exact, got, msgAndArgs...)
		return
	}
	require.Len(t, got, len(exact), msgAndArgs...)
	require.Equal(t, best(slices.Clone(got), len(got)), got, msgAndArgs...)
	want := map[string]float64{}
	for _, h := range exact {
		want[h.ID] = h.Cosine
	}
	for _, h := range got {
		if c, ok := want[h.ID]; ok {
			require.Equal(t, c, h.Cosine, msgAndArgs...)
			rc.found++
		} else {
			require.LessOrEqual(t, h.Cosine, exact[len(exact)-1].Cosine, msgAndArgs...)
		}
	}
	rc.total += len(exact)
}

// vectorPaths are the vector paths a test runs on, each with a fresh database: SQLite's
// sqlite-vec, PostgreSQL's pgvector (skipped, saying why, when the server lacks the
// extension) and PostgreSQL's exact-scan fallback (forced, so it runs here whether or not
// pgvector is installed).
func vectorPaths(t *testing.T, fn func(t *testing.T, d *bun.DB, vp VectorPath)) {
	for _, name := range []string{"sqlite/" + PathSQLiteVec, "postgres/" + PathPgvector, "postgres/" + PathExact} {
		t.Run(name, func(t *testing.T) {
			engine, path, _ := strings.Cut(name, "/")
			d := dbtest.Open(t, engine)
			vp, err := detectVectors(context.Background(), d, true)
			require.NoError(t, err)
			switch {
			case path == PathExact:
				vp = VectorPath{Name: PathExact, Reason: "forced by the test"}
			case vp.Name != path:
				skips.Capability(t, "the %s path is not available on this server: %s", path, vp.Reason)
			}
			fn(t, d, vp)
		})
	}
}

// TestVectorSearchConformance runs the same vector searches through each path's
// nearestChunks (SQLite's sqlite-vec index, PostgreSQL's pgvector HNSW index, PostgreSQL's
// exact-scan fallback) and through the exact scan (exactNearest) over the ABCD procedure
// steps and requires the same chunks, order and cosine: one base and two, with max_age,
// with min_score, at depth 5 and 50. Another space holds a copy of every step and of every
// query (nearer to it than anything of the caller's space): none of it comes back, and the
// caller's results are not starved by it (the tenant filter is inside the search, not
// applied after a global top k). pgvector's HNSW index is approximate in general; on this
// corpus (a few hundred vectors, ef_search 200) it finds exactly the scan's chunks, and the
// test requires it.
func TestVectorSearchConformance(t *testing.T) {
	vectorPaths(t, testVectorSearchConformance)
}

func testVectorSearchConformance(t *testing.T, d *bun.DB, vp VectorPath) {
	ctx := context.Background()
	now := time.Now().UTC()
	actions := abcdActions(t)
	half := len(actions) / 2
	mine := map[string]bool{}
	for _, id := range seedChunks(t, d, vp, "sp_a", "kb_a1", now, actions[:half], hashembed.Vector) {
		mine[id] = true
	}
	for _, id := range seedChunks(t, d, vp, "sp_a", "kb_a2", now.Add(-72*time.Hour), actions[half:half+40], hashembed.Vector) {
		mine[id] = true
	}
	for _, id := range seedChunks(t, d, vp, "sp_a", "kb_a2", now, actions[half+40:], hashembed.Vector) {
		mine[id] = true
	}
	queries := []string{
		"I want a refund for my order",
		"my promo code is not working",
		"how do I change my shipping address",
		"the item I received is the wrong size",
		"cancel my subscription and close the account",
		"why was I charged twice on my credit card",
	}
	// Space B: a base with the same id as one of A's, every step and every query.
	seedChunks(t, d, vp, "sp_b", "kb_a1", now, append(append([]string{}, actions...), queries...), hashembed.Vector)

	type search struct {
		name     string
		bases    func(q []float32) []vectorBase
		depth    int
		minScore float64
	}
	searches := []search{
		{"one base", func(q []float32) []vectorBase { return []vectorBase{{ID: "kb_a1", Query: q}} }, 5, 0},
		{"two bases", func(q []float32) []vectorBase { return []vectorBase{{ID: "kb_a1", Query: q}, {ID: "kb_a2", Query: q}} }, ListDepth, 0},
		{"max_age", func(q []float32) []vectorBase {
			return []vectorBase{{ID: "kb_a1", Query: q}, {ID: "kb_a2", Query: q, Since: now.Add(-48 * time.Hour)}}
		}, ListDepth, 0},
		{"min_score", func(q []float32) []vectorBase { return []vectorBase{{ID: "kb_a1", Query: q}, {ID: "kb_a2", Query: q}} }, ListDepth, 0.3},
	}
	var rc recall
	for _, s := range searches {
		for _, text := range queries {
			bases := s.bases(hashembed.Vector(text))
			exact, err := exactNearest(ctx, d, "sp_a", nil, bases, s.depth, s.minScore)
			require.NoError(t, err)
			vec, err := nearestChunks(ctx, d, vp, "sp_a", nil, bases, s.depth, s.minScore, false)
			require.NoError(t, err)
			require.NotEmpty(t, exact, "%s: %q", s.name, text)
			conforms(t, vp, exact, vec, &rc, "%s: %q", s.name, text)
			if s.minScore == 0 {
				require.Len(t, vec, s.depth, "%s: %q: space B's nearer copies do not starve space A", s.name, text)
			}
			for _, h := range vec {
				require.True(t, mine[h.ID], "%s: %q: chunk %s is not space A's", s.name, text, h.ID)
				require.GreaterOrEqual(t, h.Cosine, s.minScore)
				require.Less(t, h.Cosine, 0.999, "a query's own copy lives in space B")
			}
		}
	}

	// Ties at the boundary: a base of identical steps. Up to vecMaxK of them the search
	// widens k until it sees past the tie; beyond, the base is scanned exactly (the
	// fallback). Either way the chunks are exactNearest's: the lowest ids of the tie.
	same := make([]string, 600)
	for i := range same {
		same[i] = actions[0]
	}
	seedChunks(t, d, vp, "sp_a", "kb_ties", now, same, hashembed.Vector)
	many := make([]string, vecMaxK+10)
	for i := range many {
		many[i] = actions[1]
	}
	seedChunks(t, d, vp, "sp_a", "kb_many", now, many, hashembed.Vector)
	table := migrations.KnowledgeVectorTable(hashembed.Dims)
	for kb, complete := range map[string]bool{"kb_ties": true, "kb_many": false} {
		b := vectorBase{ID: kb, Query: hashembed.Vector(actions[0] + " " + actions[1])}
		if vp.Name == PathSQLiteVec {
			_, ok, err := vecSearch(ctx, d, table, "sp_a", b, 5)
			require.NoError(t, err)
			require.Equal(t, complete, ok, kb)
		}
		exact, err := exactNearest(ctx, d, "sp_a", nil, []vectorBase{b}, 5, 0)
		require.NoError(t, err)
		vec, err := nearestChunks(ctx, d, vp, "sp_a", nil, []vectorBase{b}, 5, 0, false)
		require.NoError(t, err)
		require.Len(t, vec, 5)
		conforms(t, vp, exact, vec, &rc, kb)
	}

	// Freshness is applied inside the search: none of kb_a2's 40 old steps comes back.
	old := map[string]bool{}
	var oldIDs []string
	require.NoError(t, d.NewSelect().TableExpr("knowledge_chunks AS c").Join("JOIN knowledge_documents AS dd ON dd.id = c.document_id").
		Column("c.id").Where("c.kb_id = 'kb_a2' AND dd.indexed_at < ?", now.Add(-time.Hour)).Scan(ctx, &oldIDs))
	require.Len(t, oldIDs, 40)
	for _, id := range oldIDs {
		old[id] = true
	}
	q := hashembed.Vector(actions[half+3]) // one of the old steps itself
	hits, err := nearestChunks(ctx, d, vp, "sp_a", nil, []vectorBase{{ID: "kb_a2", Query: q, Since: now.Add(-48 * time.Hour)}}, ListDepth, 0, false)
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	for _, h := range hits {
		require.False(t, old[h.ID], "chunk %s is older than max_age", h.ID)
	}

	// A query without direction ranks nothing, on both paths.
	zero := []vectorBase{{ID: "kb_a1", Query: make([]float32, hashembed.Dims)}}
	exact, err := exactNearest(ctx, d, "sp_a", nil, zero, ListDepth, 0)
	require.NoError(t, err)
	vec, err := nearestChunks(ctx, d, vp, "sp_a", nil, zero, ListDepth, 0, false)
	require.NoError(t, err)
	require.Empty(t, exact)
	require.Empty(t, vec)

	// A base with vectors of another length than the query's has no vector candidates.
	short := []vectorBase{{ID: "kb_a1", Query: []float32{1, 0, 0}}}
	vec, err = nearestChunks(ctx, d, vp, "sp_a", nil, short, ListDepth, 0, false)
	require.NoError(t, err)
	require.Empty(t, vec)
	if vp.Name == PathPgvector {
		t.Logf("pgvector recall of the exact scan's chunks: %.3f (%d of %d)", rc.rate(), rc.found, rc.total)
		require.GreaterOrEqual(t, rc.rate(), minPgvectorRecall)
	}
	if vp.Name == PathExact {
		tables, err := vectorTables(ctx, d)
		require.NoError(t, err)
		require.Empty(t, tables, "the fallback keeps no vector index")
		return
	}
	require.True(t, strings.HasPrefix(vectorTableFor(t, d), "knowledge_vec_"))
}

// vectorTableFor is the only vector table of d (the seeded length's).
func vectorTableFor(t *testing.T, d *bun.DB) string {
	tables, err := vectorTables(context.Background(), d)
	require.NoError(t, err)
	require.Len(t, tables, 1)
	return tables[0]
}

// TestPgvectorIndex covers what only the pgvector path has (skipped, saying why, when the
// server lacks the extension): chunks stored while the store ran without pgvector are
// indexed by PrepareVectors (backfill); the k-nearest statement is served by the HNSW index
// with the tenant filter inside it; the erasure probe (storedVectors) reads the pgvector
// table apart from the rows; a chunk row's deletion takes its pgvector row with it, in the
// same statement (foreign key), and deleteChunks removes it explicitly.
func TestPgvectorIndex(t *testing.T) {
	d := dbtest.Open(t, "postgres")
	ctx := context.Background()
	vp, err := detectVectors(ctx, d, true)
	require.NoError(t, err)
	if vp.Name != PathPgvector {
		skips.Capability(t, "pgvector is not available on this server: %s", vp.Reason)
	}
	now := time.Now().UTC()
	actions := abcdActions(t)
	big := make([]string, 3000)
	for i := range big {
		big[i] = fmt.Sprintf("%s (step %d)", actions[i%len(actions)], i)
	}
	// Stored by a process on the exact-scan path: rows only, no pgvector table.
	fallback := VectorPath{Name: PathExact}
	mine := seedChunks(t, d, fallback, "sp_a", "kb_big", now, big, hashembed.Vector)
	theirs := seedChunks(t, d, fallback, "sp_b", "kb_big", now, big, hashembed.Vector)
	tables, err := vectorTables(ctx, d)
	require.NoError(t, err)
	require.Empty(t, tables)

	s := &Service{DB: d}
	got, err := s.PrepareVectors(ctx)
	require.NoError(t, err)
	require.Equal(t, PathPgvector, got.Name)
	stored, err := storedVectors(ctx, d, "", mine[:10])
	require.NoError(t, err)
	require.Len(t, stored, 20, "each chunk's row and its pgvector row")
	again, err := s.PrepareVectors(ctx) // idempotent: nothing indexed twice
	require.NoError(t, err)
	require.Equal(t, got, again)
	// A process that started before the extension existed searches exactly but indexes into
	// pgvector now that it exists; one forced to the fallback does neither.
	early := &Service{DB: d, vec: &VectorPath{Name: PathExact, Reason: "the vector extension is not created in this database"}}
	ip, err := early.indexPath(ctx)
	require.NoError(t, err)
	require.Equal(t, PathPgvector, ip.Name)
	sp, err := early.vectorPath(ctx)
	require.NoError(t, err)
	require.Equal(t, PathExact, sp.Name)
	forced := &Service{DB: d}
	forced.ForceExactScan()
	ip, err = forced.indexPath(ctx)
	require.NoError(t, err)
	require.Equal(t, PathExact, ip.Name)
	var n int
	require.NoError(t, d.NewRaw("SELECT count(*) FROM "+migrations.KnowledgeVectorTable(hashembed.Dims)).Scan(ctx, &n))
	require.Equal(t, 2*len(big), n)

	// The statement: HNSW in the plan, the tenant and base filter inside it.
	b := vectorBase{ID: "kb_big", Query: hashembed.Vector("I want a refund for my order")}
	var plan []string
	q := pgvecQuery(d, got, migrations.KnowledgeVectorTable(hashembed.Dims), "sp_a", nil, b, ListDepth+8)
	require.NoError(t, d.NewRaw("EXPLAIN "+q.String()).Scan(ctx, &plan))
	text := strings.Join(plan, "\n")
	require.Contains(t, text, migrations.KnowledgeVectorTable(hashembed.Dims)+"_hnsw", text)
	require.Contains(t, text, "space_id = 'sp_a'", text)
	other := map[string]bool{}
	for _, id := range theirs {
		other[id] = true
	}
	var rc recall
	for _, question := range []string{"I want a refund for my order", "my promo code is not working", "how do I change my shipping address",
		"the item I received is the wrong size", "cancel my subscription and close the account", "why was I charged twice on my credit card"} {
		b := vectorBase{ID: "kb_big", Query: hashembed.Vector(question)}
		exact, err := exactNearest(ctx, d, "sp_a", nil, []vectorBase{b}, ListDepth, 0)
		require.NoError(t, err)
		hnsw, err := nearestChunks(ctx, d, got, "sp_a", nil, []vectorBase{b}, ListDepth, 0, false)
		require.NoError(t, err)
		conforms(t, got, exact, hnsw, &rc, question)
		for _, h := range hnsw {
			require.False(t, other[h.ID], "space B's chunk %s", h.ID)
		}
	}
	t.Logf("pgvector recall of the exact scan's chunks at 3,000 per base: %.3f (%d of %d)", rc.rate(), rc.found, rc.total)
	require.GreaterOrEqual(t, rc.rate(), minPgvectorRecall)

	// The probe reads the pgvector table apart from the rows.
	_, err = d.ExecContext(ctx, "UPDATE knowledge_chunks SET embedding = NULL WHERE id = ?", mine[0])
	require.NoError(t, err)
	stored, err = storedVectors(ctx, d, "sp_a", mine[:1])
	require.NoError(t, err)
	require.Equal(t, mine[:1], stored, "the pgvector row is found without the row's vector")
	// A chunk row's deletion takes its pgvector row (foreign key, same statement).
	_, err = d.ExecContext(ctx, "DELETE FROM knowledge_chunks WHERE id = ?", mine[0])
	require.NoError(t, err)
	stored, err = storedVectors(ctx, d, "", mine[:1])
	require.NoError(t, err)
	require.Empty(t, stored)
	// deleteChunks removes the document's pgvector rows in its transaction.
	var doc string
	require.NoError(t, d.NewRaw("SELECT document_id FROM knowledge_chunks WHERE id = ?", mine[1]).Scan(ctx, &doc))
	require.NoError(t, d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := unindexVectors(ctx, tx, doc); err != nil {
			return err
		}
		left, err := storedVectors(ctx, tx, "", mine[1:2])
		require.NoError(t, err)
		require.Equal(t, mine[1:2], left, "only the row's own vector before the row goes")
		return deleteChunks(ctx, tx, doc)
	}))
	stored, err = storedVectors(ctx, d, "", mine[1:2])
	require.NoError(t, err)
	require.Empty(t, stored)
}

// refreshStats analyses a joined table that grew by more than half since its last analysis
// (the planner's one-row estimate of a fresh table made pgvector searches join chunks in a
// nested loop), and leaves one that did not.
func TestRefreshStats(t *testing.T) {
	d := dbtest.Open(t, "postgres")
	ctx := context.Background()
	analysed := func(table string) bool {
		var n int
		require.NoError(t, d.NewRaw("SELECT count(*) FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = ? AND last_analyze IS NOT NULL", table).Scan(ctx, &n))
		return n == 1
	}
	conn, err := d.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	now := time.Now().UTC()
	for i := range 300 {
		_, err := conn.ExecContext(ctx, "INSERT INTO knowledge_documents (id, space_id, kb_id, source_uri, title, version_label, format, content_hash, body, status, reason, kinds, masked, chunks, embed_model, dims, superseded_by, created_by, created_at, updated_at) VALUES (?, 'sp', 'kb', 'u', 't', '1', 'text', 'h', '', 'ready', '', '[]', false, 0, 'm', 3, '', 'k', ?, ?)",
			fmt.Sprintf("kd_%03d", i), now, now)
		require.NoError(t, err)
	}
	// The inserting session's counts reach the shared statistics when it next goes idle.
	_, err = conn.ExecContext(ctx, "SELECT pg_stat_force_next_flush()")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "SELECT 1")
	require.NoError(t, err)
	require.False(t, analysed("knowledge_documents"))
	refreshStats(ctx, d)
	require.True(t, analysed("knowledge_documents"), "300 rows inserted since no analysis")
	require.False(t, analysed("knowledge_chunks"), "nothing changed in the chunks")
}
