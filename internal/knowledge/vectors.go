package knowledge

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/migrations"
	"github.com/agentmemory/agentmemory/models"
)

// The vector half of retrieval (KN-4) and the maintenance of the vector index (KN-2, KN-3,
// MS-4). Every chunk keeps its embedding in knowledge_chunks.embedding (little-endian
// float32). On SQLite each embedding is also a row of the sqlite-vec table of its length
// (migrations.KnowledgeVectorDDL), partitioned by space and base; on PostgreSQL with pgvector
// a row of the pgvector table of its length (pgvectorDDL, HNSW). indexVectors adds a
// document's rows in the transaction that inserts its chunks, and unindexVectors (called by
// deleteChunks, hence by supersede, DELETE and any erasure that deletes chunks) removes them
// in the transaction that deletes the chunks. PostgreSQL without pgvector has no vector
// index: nearestChunks scans the bases' rows exactly.

// vectorBase is one base's share of a vector search: its id, the query's vector under the
// base's embedding model, and Since, the oldest indexing time it accepts (max_age; zero:
// any).
type vectorBase struct {
	ID    string
	Query []float32
	Since time.Time
}

// vectorHit is one chunk of a vector search with its cosine similarity to the query.
type vectorHit struct {
	ID     string
	Cosine float64
}

// nearestChunks returns the chunks of space spaceID's bases nearest to each base's query by
// cosine similarity: only chunks of ready documents indexed at or after the base's Since,
// with a vector of the query's length, none below minScore; best first, ties by chunk id, at
// most depth. A query or chunk vector whose components are all zero has no direction: it
// is never ranked.
// vp picks the path: SQLite searches its sqlite-vec index (vecNearest), PostgreSQL with
// pgvector its HNSW index (pgvecNearest), PostgreSQL without it scans the rows
// (exactNearest); exact forces the scan. Every path scores with the same exact cosine
// (computed in Go from the stored float32s), which the conformance test checks: sqlite-vec
// answers exactly the scan's chunks, pgvector (approximate) the same or a near miss.
func nearestChunks(ctx context.Context, idb bun.IDB, vp VectorPath, spaceID string, scope chunkFilter, bases []vectorBase, depth int, minScore float64, exact bool) ([]vectorHit, error) {
	switch {
	case exact:
	case vp.Name == PathSQLiteVec && db.IsSQLite(idb):
		return vecNearest(ctx, idb, spaceID, scope, bases, depth, minScore)
	case vp.Name == PathPgvector && !db.IsSQLite(idb):
		return pgvecNearest(ctx, idb, vp, spaceID, scope, bases, depth, minScore)
	}
	return exactNearest(ctx, idb, spaceID, scope, bases, depth, minScore)
}

// chunkFilter restricts a query over knowledge_chunks AS c joined with knowledge_documents AS d
// to the ready chunks of bases kbs that the caller may read (Service.chunkScope: space, grants
// and filters). nil means the space's ready chunks of kbs.
type chunkFilter func(q *bun.SelectQuery, kbs []string) *bun.SelectQuery

// restrict applies scope to q, or the space-and-bases default when scope is nil.
func restrict(q *bun.SelectQuery, scope chunkFilter, spaceID string, kbs []string) *bun.SelectQuery {
	if scope != nil {
		return scope(q, kbs)
	}
	return q.Where("c.space_id = ? AND d.space_id = ? AND c.kb_id IN (?) AND d.status = ?", spaceID, spaceID, bun.In(kbs), StatusReady)
}

// exactNearest is nearestChunks by an exact scan: every candidate row of the bases (tenant
// and base filter in the query) is read and compared in Go. It costs dims × 4 bytes read
// and dims multiply-adds per candidate (docs/scaling.md has the measured limit).
func exactNearest(ctx context.Context, idb bun.IDB, spaceID string, scope chunkFilter, bases []vectorBase, depth int, minScore float64) ([]vectorHit, error) {
	byID := map[string]vectorBase{}
	ids := make([]string, 0, len(bases))
	for _, b := range bases {
		if indexable(b.Query) {
			byID[b.ID] = b
			ids = append(ids, b.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []struct {
		ID        string     `bun:"id"`
		KBID      string     `bun:"kb_id"`
		Embedding []byte     `bun:"embedding"`
		IndexedAt *time.Time `bun:"indexed_at"`
	}
	q := idb.NewSelect().TableExpr("knowledge_chunks AS c").Join("JOIN knowledge_documents AS d ON d.id = c.document_id").
		ColumnExpr("c.id AS id, c.kb_id AS kb_id, c.embedding AS embedding, d.indexed_at AS indexed_at")
	err := restrict(q, scope, spaceID, ids).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("knowledge: vector candidates: %w", err)
	}
	var hits []vectorHit
	for _, r := range rows {
		b := byID[r.KBID]
		if !b.Since.IsZero() && (r.IndexedAt == nil || r.IndexedAt.Before(b.Since)) {
			continue
		}
		if h, ok := score(r.ID, b.Query, decodeVector(r.Embedding), minScore); ok {
			hits = append(hits, h)
		}
	}
	return best(hits, depth), nil
}

// Limits of a sqlite-vec search.
const (
	// vecMaxK is sqlite-vec's largest k (SQLITE_VEC_VEC0_K_MAX).
	vecMaxK = 4096
	// vecTieMargin is how far (in cosine distance) past the depth-th candidate a search
	// must see before its candidates are complete: sqlite-vec computes in float32, the
	// exact score in float64 from the same float32s, and the two differ by far less.
	vecTieMargin = 1e-5
)

// vecNearest is nearestChunks on SQLite's sqlite-vec index: for each base a k-nearest search
// over the partition of that space and base only (both in the query), filtered by indexing
// time inside the search, so another space's or base's vectors can neither appear nor crowd
// the caller's out (indexedNearest does the rest).
func vecNearest(ctx context.Context, idb bun.IDB, spaceID string, scope chunkFilter, bases []vectorBase, depth int, minScore float64) ([]vectorHit, error) {
	search := func(ctx context.Context, table string, b vectorBase, k int) ([]string, []float64, error) {
		return vecSearchK(ctx, idb, table, spaceID, b, k)
	}
	return indexedNearest(ctx, idb, spaceID, scope, bases, depth, minScore, search, true)
}

// knnSearch is one k-nearest search of base b in the vector table of b's query length: chunk
// ids and cosine distances, nearest first, at most k.
type knnSearch func(ctx context.Context, table string, b vectorBase, k int) ([]string, []float64, error)

// indexedNearest is nearestChunks over a vector index (sqlite-vec or pgvector): search finds
// each base's candidates (widen: k = depth + 8, doubled while boundary ties remain); the
// candidates' stored vectors are then read from knowledge_chunks (joined with their ready
// documents, under scope) and scored by exact cosine, so scores and order are exactNearest's.
// A base whose search is incomplete (boundary ties beyond vecMaxK, or, when shortComplete is
// false, fewer than k answered) is scanned exactly instead (the fallback). The union of each
// base's candidates holds the overall depth nearest. A base whose vector length was never
// indexed has no candidates.
func indexedNearest(ctx context.Context, idb bun.IDB, spaceID string, scope chunkFilter, bases []vectorBase, depth int, minScore float64, search knnSearch, shortComplete bool) ([]vectorHit, error) {
	tables, err := vectorTables(ctx, idb)
	if err != nil {
		return nil, err
	}
	query := map[string][]float32{}
	var cands, searched []string
	var hits []vectorHit
	for _, b := range bases {
		table := migrations.KnowledgeVectorTable(len(b.Query))
		if !indexable(b.Query) || !slices.Contains(tables, table) {
			continue
		}
		ids, complete, err := widen(ctx, table, b, depth, search, shortComplete)
		if err != nil {
			return nil, err
		}
		if !complete {
			exact, err := exactNearest(ctx, idb, spaceID, scope, []vectorBase{b}, depth, minScore)
			if err != nil {
				return nil, err
			}
			hits = append(hits, exact...)
			continue
		}
		for _, id := range ids {
			query[id] = b.Query
		}
		cands = append(cands, ids...)
		searched = append(searched, b.ID)
	}
	if len(cands) > 0 {
		var rows []struct {
			ID        string `bun:"id"`
			Embedding []byte `bun:"embedding"`
		}
		q := idb.NewSelect().TableExpr("knowledge_chunks AS c").Join("JOIN knowledge_documents AS d ON d.id = c.document_id").
			ColumnExpr("c.id AS id, c.embedding AS embedding").Where("c.id IN (?)", bun.In(cands))
		err = restrict(q, scope, spaceID, searched).Scan(ctx, &rows)
		if err != nil {
			return nil, fmt.Errorf("knowledge: vector candidates: %w", err)
		}
		for _, r := range rows {
			if h, ok := score(r.ID, query[r.ID], decodeVector(r.Embedding), minScore); ok {
				hits = append(hits, h)
			}
		}
	}
	return best(hits, depth), nil
}

// vecSearch is one base's k-nearest search in SQLite's table: the chunk ids found, nearest
// first, and whether they surely hold the base's depth nearest (false: boundary ties beyond
// vecMaxK).
func vecSearch(ctx context.Context, idb bun.IDB, table, spaceID string, b vectorBase, depth int) ([]string, bool, error) {
	search := func(ctx context.Context, table string, b vectorBase, k int) ([]string, []float64, error) {
		return vecSearchK(ctx, idb, table, spaceID, b, k)
	}
	return widen(ctx, table, b, depth, search, true)
}

// widen runs search with k = depth + 8, doubling k (up to vecMaxK) while the candidates
// still reach within vecTieMargin of the depth-th one (ties or near-ties at the boundary,
// e.g. identical chunks). It returns the ids and whether they surely hold the base's depth
// nearest: false when the ties go past vecMaxK, or when fewer than k came back and
// shortComplete is false (an index that may give up early, as pgvector's filtered scan).
func widen(ctx context.Context, table string, b vectorBase, depth int, search knnSearch, shortComplete bool) ([]string, bool, error) {
	for k := min(depth+8, vecMaxK); ; k = min(2*k, vecMaxK) {
		ids, dists, err := search(ctx, table, b, k)
		if err != nil {
			return nil, false, err
		}
		if len(ids) < k {
			return ids, shortComplete, nil
		}
		if len(ids) <= depth || dists[len(dists)-1] > dists[depth-1]+vecTieMargin {
			return ids, true, nil
		}
		if k == vecMaxK {
			return nil, false, nil
		}
	}
}

// vecSearchK is one sqlite-vec k-nearest statement over the partition of space spaceID and
// base b, filtered by indexing time: chunk ids and distances, nearest first.
func vecSearchK(ctx context.Context, idb bun.IDB, table, spaceID string, b vectorBase, k int) ([]string, []float64, error) {
	q := idb.NewSelect().TableExpr(table).Column("chunk_id", "distance").
		Where("embedding MATCH ? AND k = ? AND space_id = ? AND kb_id = ?", encodeVector(b.Query), k, spaceID, b.ID)
	if !b.Since.IsZero() {
		q = q.Where("indexed_at >= ?", b.Since.UnixMilli())
	}
	var rows []struct {
		ID       string  `bun:"chunk_id"`
		Distance float64 `bun:"distance"`
	}
	if err := q.OrderExpr("distance").Scan(ctx, &rows); err != nil {
		return nil, nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	ids, dists := make([]string, len(rows)), make([]float64, len(rows))
	for i, r := range rows {
		ids[i], dists[i] = r.ID, r.Distance
	}
	return ids, dists, nil
}

// score is chunk id's hit for query q and vector v: false when v has another length or no
// direction, or its cosine is below minScore.
func score(id string, q, v []float32, minScore float64) (vectorHit, bool) {
	if len(v) != len(q) || !indexable(v) {
		return vectorHit{}, false
	}
	c := cos(q, v)
	if c < minScore {
		return vectorHit{}, false
	}
	return vectorHit{ID: id, Cosine: c}, true
}

// best sorts hits by cosine, best first (ties by chunk id), and keeps the first depth.
func best(hits []vectorHit, depth int) []vectorHit {
	slices.SortFunc(hits, func(a, b vectorHit) int {
		if a.Cosine != b.Cosine {
			if a.Cosine > b.Cosine {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(hits) > depth {
		hits = hits[:depth]
	}
	return hits
}

// indexVectors adds chunk rows' embeddings, of documents indexed at indexedAt, to the vector
// index of path vp, in tx: the transaction that inserts the rows. SQLite: the sqlite-vec
// table of their length (created when it is the first); pgvector: its table of their length
// (insertPgvector); the exact path has no index (the rows are scanned). Embeddings whose
// components are all zero are left out (no direction).
func indexVectors(ctx context.Context, tx bun.IDB, vp VectorPath, rows []models.KnowledgeChunk, indexedAt time.Time) error {
	if vp.Name == PathPgvector && !db.IsSQLite(tx) {
		in := make([]pgvectorRow, len(rows))
		for i, r := range rows {
			in[i] = pgvectorRow{ChunkID: r.ID, SpaceID: r.SpaceID, KBID: r.KBID, IndexedAt: indexedAt, Vector: decodeVector(r.Embedding)}
		}
		return insertPgvector(ctx, tx, vp, in)
	}
	if !db.IsSQLite(tx) {
		return nil
	}
	created := map[int]bool{}
	for _, r := range rows {
		v := decodeVector(r.Embedding)
		if !indexable(v) {
			continue
		}
		if !created[len(v)] {
			if _, err := tx.ExecContext(ctx, migrations.KnowledgeVectorDDL(len(v))); err != nil {
				return fmt.Errorf("knowledge: vector index: %w", err)
			}
			created[len(v)] = true
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+migrations.KnowledgeVectorTable(len(v))+" (chunk_id, space_id, kb_id, indexed_at, embedding) VALUES (?, ?, ?, ?, ?)",
			r.ID, r.SpaceID, r.KBID, indexedAt.UnixMilli(), r.Embedding); err != nil {
			return fmt.Errorf("knowledge: vector index: %w", err)
		}
	}
	return nil
}

// unindexVectors removes the vectors of document docID's chunks from every vector table
// (sqlite-vec's, or pgvector's whatever the process's path: a table that exists is kept
// clean), in tx, before the chunk rows are deleted (MS-4: sqlite-vec zeroes a deleted
// vector's bytes and drops a block left empty; secure_delete clears freed pages; pgvector's
// rows are also deleted by their foreign key's cascade, and VACUUM removes them from the
// HNSW graph and the heap).
func unindexVectors(ctx context.Context, tx bun.IDB, docID string) error {
	tables, err := vectorTables(ctx, tx)
	if err != nil || len(tables) == 0 {
		return err
	}
	var ids []string
	if err := tx.NewSelect().Model((*models.KnowledgeChunk)(nil)).Column("id").Where("document_id = ?", docID).Scan(ctx, &ids); err != nil {
		return fmt.Errorf("knowledge: vector index: %w", err)
	}
	return unindexChunkVectors(ctx, tx, tables, ids)
}

// unindexChunkVectors removes the rows of chunks ids from the vector tables (vectorTables),
// in tx, before the chunk rows are deleted: one statement per chunk and table on SQLite
// (vec0 deletes by key), one per table on PostgreSQL.
func unindexChunkVectors(ctx context.Context, tx bun.IDB, tables, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	for _, t := range tables {
		if !db.IsSQLite(tx) {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE chunk_id IN (?)", bun.In(ids)); err != nil {
				return fmt.Errorf("knowledge: vector index: %w", err)
			}
			continue
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE chunk_id = ?", id); err != nil {
				return fmt.Errorf("knowledge: vector index: %w", err)
			}
		}
	}
	return nil
}

// vectorTables lists the knowledge vector tables (one per vector length indexed): SQLite's
// sqlite-vec tables, or the pgvector tables of the current schema.
func vectorTables(ctx context.Context, idb bun.IDB) ([]string, error) {
	var tables []string
	q := "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'knowledge_vec_%' AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"
	if !db.IsSQLite(idb) {
		q = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename ~ '^knowledge_vec_[0-9]+$' ORDER BY tablename"
	}
	if err := idb.NewRaw(q).Scan(ctx, &tables); err != nil {
		return nil, fmt.Errorf("knowledge: vector tables: %w", err)
	}
	return tables, nil
}

// indexable reports whether v has a direction (a component other than zero): only such
// vectors have a cosine and enter the vector ranking.
func indexable(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return true
		}
	}
	return false
}

func cos(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

// VectorsIndexed counts the vectors still stored for chunk ids: chunk rows with an embedding,
// plus rows of the vector tables (sqlite-vec's on SQLite, pgvector's on PostgreSQL). After a
// delete, supersede or erasure it must be 0 (MS-4): a probe checks the vector index as well
// as the rows with it. Errors are the database's.
func (s *Service) VectorsIndexed(ctx context.Context, chunkIDs []string) (int, error) {
	ids, err := storedVectors(ctx, s.DB, "", chunkIDs)
	return len(ids), err
}

// VectorPath is the path the Service's vector ranking takes (PrepareVectors, or detected on
// first use). Errors are the database's.
func (s *Service) VectorPath(ctx context.Context) (VectorPath, error) {
	return s.vectorPath(ctx)
}

// storedVectors returns, for each vector still stored of chunks chunkIDs (of space spaceID;
// any space when empty), its chunk's id: chunk rows with an embedding, then the rows of every
// vector table (sqlite-vec's or pgvector's: an index kept apart from the rows). A chunk
// whose vector is in both is listed twice.
func storedVectors(ctx context.Context, idb bun.IDB, spaceID string, chunkIDs []string) ([]string, error) {
	if len(chunkIDs) == 0 {
		return nil, nil
	}
	var ids []string
	q := idb.NewSelect().Model((*models.KnowledgeChunk)(nil)).Column("id").
		Where("id IN (?) AND embedding IS NOT NULL", bun.In(chunkIDs)).OrderExpr("id ASC")
	if spaceID != "" {
		q = q.Where("space_id = ?", spaceID)
	}
	if err := q.Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("knowledge: stored vectors: %w", err)
	}
	tables, err := vectorTables(ctx, idb)
	if err != nil {
		return nil, err
	}
	for _, table := range tables {
		var indexed []string
		if err := idb.NewSelect().TableExpr(table).Column("chunk_id").
			Where("chunk_id IN (?)", bun.In(chunkIDs)).Scan(ctx, &indexed); err != nil {
			return nil, fmt.Errorf("knowledge: stored vectors: %w", err)
		}
		ids = append(ids, indexed...)
	}
	return ids, nil
}
