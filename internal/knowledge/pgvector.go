package knowledge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/migrations"
	"github.com/agentmemory/agentmemory/models"
)

// The vector paths of the store (issue 18, Storage). SQLite always has sqlite-vec (built into
// the binary). PostgreSQL has pgvector when the server has the `vector` extension and the
// database has it created (PrepareVectors creates it when the role may); otherwise the exact
// scan of the chunk rows, which needs nothing from the server.
const (
	PathSQLiteVec = "sqlite-vec" // SQLite: vec0 tables partitioned by space and base
	PathPgvector  = "pgvector"   // PostgreSQL with the vector extension: HNSW per vector length
	PathExact     = "exact"      // PostgreSQL without it: cosine in Go over the candidate rows
)

// pgvector's limits and the search settings of this store.
const (
	// pgvecMaxHNSWDims is the longest vector pgvector's HNSW index takes (2,000 for the
	// vector type); a longer length gets a table without it, searched by an exact scan of
	// that table in SQL.
	pgvecMaxHNSWDims = 2000
	// pgvecEfSearch is hnsw.ef_search for a retrieval: the candidate list of each graph
	// search, above the first k asked (ListDepth + 8) so that one pass usually suffices.
	pgvecEfSearch = 200
	// pgvecInsertBatch is how many vectors one INSERT statement carries.
	pgvecInsertBatch = 100
)

// VectorPath says how a Service ranks by vectors (Name: PathSQLiteVec, PathPgvector or
// PathExact), with pgvector's version and, for PathExact, why (Reason: no personal data,
// no connection details). It is what the service logs at startup.
type VectorPath struct {
	Name    string
	Version string
	Reason  string
	// schema is the schema of pgvector's types and operators (quoted into every statement,
	// so a connection's search_path need not name it).
	schema string
	// iterative is whether pgvector has hnsw.iterative_scan (0.8.0 and later).
	iterative bool
	// forced is ForceExactScan's exact path.
	forced bool
}

// PrepareVectors decides the Service's vector path at startup and returns it. SQLite:
// PathSQLiteVec. PostgreSQL: when pg_available_extensions lists `vector` and the database
// does not have it yet, it runs CREATE EXTENSION (refused for a role that may not: no error,
// the exact scan is used and Reason says so); with the extension created, the path is
// PathPgvector and every stored chunk vector missing from the pgvector tables is indexed
// (backfill: chunks stored before the extension came, or by a process that had not seen it).
// Errors are the database's, never the extension's absence. Later calls of the Service use
// the path decided here.
func (s *Service) PrepareVectors(ctx context.Context) (VectorPath, error) {
	vp, err := detectVectors(ctx, s.DB, true)
	if err != nil {
		return VectorPath{}, err
	}
	if vp.Name == PathPgvector {
		if err := backfillPgvector(ctx, s.DB, vp); err != nil {
			return VectorPath{}, err
		}
	}
	s.vecMu.Lock()
	s.vec = &vp
	s.vecMu.Unlock()
	return vp, nil
}

// ForceExactScan makes s rank and index as on a PostgreSQL server without pgvector (the
// exact-scan fallback), whatever the server has: tests and benchmarks run and compare the
// fallback where the extension is installed. A process using it does not add vectors to the
// pgvector tables, so it must not share a database with processes that search them.
func (s *Service) ForceExactScan() {
	s.vecMu.Lock()
	defer s.vecMu.Unlock()
	s.vec = &VectorPath{Name: PathExact, Reason: "forced (ForceExactScan)", forced: true}
}

// indexPath is the path an ingest indexes on: the Service's, except that a PostgreSQL
// process on the exact path (not forced) looks again (one query), so that once another
// process has created the extension the chunks it stores still reach the pgvector tables
// the others search. Its own searches stay exact until it restarts (and backfills).
func (s *Service) indexPath(ctx context.Context) (VectorPath, error) {
	vp, err := s.vectorPath(ctx)
	if err != nil || vp.Name != PathExact || vp.forced {
		return vp, err
	}
	return detectVectors(ctx, s.DB, false)
}

// vectorPath is the Service's vector path: the one PrepareVectors decided, else detected on
// first use (without creating the extension or backfilling) and kept.
func (s *Service) vectorPath(ctx context.Context) (VectorPath, error) {
	s.vecMu.Lock()
	defer s.vecMu.Unlock()
	if s.vec != nil {
		return *s.vec, nil
	}
	vp, err := detectVectors(ctx, s.DB, false)
	if err != nil {
		return VectorPath{}, err
	}
	s.vec = &vp
	return vp, nil
}

// detectVectors finds d's vector path; create lets it run CREATE EXTENSION when the server
// offers the extension and the database lacks it.
func detectVectors(ctx context.Context, d *bun.DB, create bool) (VectorPath, error) {
	if db.IsSQLite(d) {
		return VectorPath{Name: PathSQLiteVec}, nil
	}
	type ext struct {
		Available bool   `bun:"available"`
		Version   string `bun:"version"`
		Schema    string `bun:"schema"`
	}
	find := func() (ext, error) {
		var e ext
		err := d.NewRaw(`SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS available,
	coalesce(e.extversion, '') AS version, coalesce(n.nspname, '') AS schema
FROM (SELECT 1) AS one LEFT JOIN pg_extension AS e ON e.extname = 'vector' LEFT JOIN pg_namespace AS n ON n.oid = e.extnamespace`).Scan(ctx, &e)
		if err != nil {
			return e, fmt.Errorf("knowledge: detect pgvector: %w", err)
		}
		return e, nil
	}
	e, err := find()
	if err != nil {
		return VectorPath{}, err
	}
	if e.Version == "" && !e.Available {
		return VectorPath{Name: PathExact, Reason: "the PostgreSQL server does not have the vector extension (pgvector)"}, nil
	}
	if e.Version == "" {
		if !create {
			return VectorPath{Name: PathExact, Reason: "the vector extension is not created in this database"}, nil
		}
		_, createErr := d.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS vector")
		// Read again either way: a replica starting beside this one may have created it
		// first (then this statement can fail on the catalog's unique index).
		if e, err = find(); err != nil {
			return VectorPath{}, err
		}
		if createErr != nil && e.Version == "" {
			return VectorPath{Name: PathExact, Reason: "the database role may not create the vector extension (CREATE EXTENSION vector failed)"}, nil
		}
		if e.Version == "" {
			return VectorPath{Name: PathExact, Reason: "the vector extension could not be created"}, nil
		}
	}
	return VectorPath{Name: PathPgvector, Version: e.Version, schema: e.Schema, iterative: versionAtLeast(e.Version, 0, 8)}, nil
}

// versionAtLeast reports whether the "major.minor[.patch]" version v is at least major.minor.
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// quoteIdent is name as a PostgreSQL identifier.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// pgvectorDDL creates (if missing) the pgvector table of vectors of dims components, named
// as SQLite's (migrations.KnowledgeVectorTable): one row per chunk with a vector
// (chunk_id, a foreign key to knowledge_chunks that deletes the row with its chunk, so no
// path that deletes chunks can leave a vector behind), space_id and kb_id (the tenant and
// base filter, with a btree index the planner uses when a base is small), indexed_at (the
// document's indexing time, for max_age) and embedding vector(dims); an HNSW index with
// cosine distance (vector_cosine_ops) when dims is at most pgvecMaxHNSWDims, built with
// m = 24 and ef_construction = 200 rather than pgvector's 16 and 64: on the stand-in
// embeddings of 3,000 procedure steps the defaults found 83-94% of the exact top 50, these
// 98-100% (TestPgvectorIndex), for slower inserts.
func pgvectorDDL(vp VectorPath, dims int) []string {
	t, sch := migrations.KnowledgeVectorTable(dims), quoteIdent(vp.schema)
	stmts := []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	chunk_id TEXT PRIMARY KEY REFERENCES knowledge_chunks (id) ON DELETE CASCADE,
	space_id TEXT NOT NULL,
	kb_id TEXT NOT NULL,
	indexed_at TIMESTAMPTZ NOT NULL,
	embedding %s.vector(%d) NOT NULL
)`, t, sch, dims),
		fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s_kb ON %s (space_id, kb_id)", t, t),
	}
	if dims <= pgvecMaxHNSWDims {
		stmts = append(stmts, fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s_hnsw ON %s USING hnsw (embedding %s.vector_cosine_ops) WITH (m = 24, ef_construction = 200)", t, t, sch))
	}
	return stmts
}

// ensurePgvectorTable creates the pgvector table of dims in tx unless tables (vectorTables)
// has it. Creation takes a transaction-scoped advisory lock first, so two ingests that
// bring a new length at once do not both create it (the second waits, then finds it).
func ensurePgvectorTable(ctx context.Context, tx bun.IDB, vp VectorPath, tables []string, dims int) error {
	t := migrations.KnowledgeVectorTable(dims)
	for _, have := range tables {
		if have == t {
			return nil
		}
	}
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('agentmemory.knowledge_vec.' || current_schema(), 0))"); err != nil {
		return fmt.Errorf("knowledge: vector index: %w", err)
	}
	for _, stmt := range pgvectorDDL(vp, dims) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("knowledge: vector index: %w", err)
		}
	}
	return nil
}

// vectorLiteral is v in pgvector's text form: each component the shortest decimal that reads
// back as the same float32, so pgvector stores exactly the float32s of the chunk row.
func vectorLiteral(v []float32) string {
	var b strings.Builder
	b.Grow(len(v) * 12)
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	}
	b.WriteByte(']')
	return b.String()
}

// finite reports whether every component of v is a finite number (pgvector refuses others).
func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

// pgvectorRow is one vector to index: its chunk, space, base and document indexing time.
type pgvectorRow struct {
	ChunkID, SpaceID, KBID string
	IndexedAt              time.Time
	Vector                 []float32
}

// insertPgvector adds rows to the pgvector tables of their lengths (creating a table when
// its length is new), in tx, pgvecInsertBatch per statement; a row whose chunk already has
// one is left as it is (ON CONFLICT DO NOTHING). Vectors without a direction or with a
// component that is not finite are left out (the exact scan never ranks the former; pgvector
// cannot store the latter).
func insertPgvector(ctx context.Context, tx bun.IDB, vp VectorPath, rows []pgvectorRow) error {
	byDims := map[int][]pgvectorRow{}
	var order []int
	for _, r := range rows {
		if !indexable(r.Vector) || !finite(r.Vector) {
			continue
		}
		if _, ok := byDims[len(r.Vector)]; !ok {
			order = append(order, len(r.Vector))
		}
		byDims[len(r.Vector)] = append(byDims[len(r.Vector)], r)
	}
	if len(order) == 0 {
		return nil
	}
	tables, err := vectorTables(ctx, tx)
	if err != nil {
		return err
	}
	sch := quoteIdent(vp.schema)
	for _, dims := range order {
		if err := ensurePgvectorTable(ctx, tx, vp, tables, dims); err != nil {
			return err
		}
		all := byDims[dims]
		for lo := 0; lo < len(all); lo += pgvecInsertBatch {
			batch := all[lo:min(lo+pgvecInsertBatch, len(all))]
			var sqlb strings.Builder
			args := make([]any, 0, 5*len(batch))
			fmt.Fprintf(&sqlb, "INSERT INTO %s (chunk_id, space_id, kb_id, indexed_at, embedding) VALUES ", migrations.KnowledgeVectorTable(dims))
			for i, r := range batch {
				if i > 0 {
					sqlb.WriteString(", ")
				}
				fmt.Fprintf(&sqlb, "(?, ?, ?, ?, CAST(? AS %s.vector))", sch)
				args = append(args, r.ChunkID, r.SpaceID, r.KBID, r.IndexedAt.UTC(), vectorLiteral(r.Vector))
			}
			sqlb.WriteString(" ON CONFLICT (chunk_id) DO NOTHING")
			if _, err := tx.ExecContext(ctx, sqlb.String(), args...); err != nil {
				return fmt.Errorf("knowledge: vector index: %w", err)
			}
		}
	}
	return nil
}

// backfillPgvector indexes in the pgvector tables every chunk vector that none of them holds
// yet, 500 chunks per transaction (each under the same advisory lock as a table's creation,
// so two starting replicas do not race).
func backfillPgvector(ctx context.Context, d *bun.DB, vp VectorPath) error {
	for after := ""; ; {
		tables, err := vectorTables(ctx, d)
		if err != nil {
			return err
		}
		batch, err := unindexedChunks(ctx, d, tables, after)
		if err != nil {
			return fmt.Errorf("knowledge: pgvector backfill: %w", err)
		}
		if len(batch) == 0 {
			if after == "" || len(tables) == 0 {
				return nil
			}
			// Fresh statistics for the planner (autovacuum would take a while): with a new
			// table's estimate of one row it joins chunks in a nested loop (seconds per search).
			if _, err := d.ExecContext(ctx, "ANALYZE "+strings.Join(tables, ", ")); err != nil {
				return fmt.Errorf("knowledge: pgvector backfill: %w", err)
			}
			return nil
		}
		after = batch[len(batch)-1].ChunkID
		if err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return indexLiveChunks(ctx, tx, vp, batch)
		}); err != nil {
			return fmt.Errorf("knowledge: pgvector backfill: %w", err)
		}
	}
}

// unindexedChunks reads up to 500 chunks with a vector, id after after, in id order, that
// none of the pgvector tables holds, as rows to index (a document never indexed gives the
// Unix epoch as its time).
func unindexedChunks(ctx context.Context, d *bun.DB, tables []string, after string) ([]pgvectorRow, error) {
	var rows []struct {
		ID        string     `bun:"id"`
		SpaceID   string     `bun:"space_id"`
		KBID      string     `bun:"kb_id"`
		Embedding []byte     `bun:"embedding"`
		IndexedAt *time.Time `bun:"indexed_at"`
	}
	q := d.NewSelect().TableExpr("knowledge_chunks AS c").Join("JOIN knowledge_documents AS d ON d.id = c.document_id").
		ColumnExpr("c.id, c.space_id, c.kb_id, c.embedding, d.indexed_at").
		Where("c.embedding IS NOT NULL AND c.id > ?", after)
	for _, t := range tables {
		q = q.Where("NOT EXISTS (SELECT 1 FROM " + t + " AS v WHERE v.chunk_id = c.id)")
	}
	if err := q.OrderExpr("c.id").Limit(500).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	batch := make([]pgvectorRow, 0, len(rows))
	for _, r := range rows {
		at := time.Unix(0, 0).UTC()
		if r.IndexedAt != nil {
			at = *r.IndexedAt
		}
		batch = append(batch, pgvectorRow{ChunkID: r.ID, SpaceID: r.SpaceID, KBID: r.KBID, IndexedAt: at, Vector: decodeVector(r.Embedding)})
	}
	return batch, nil
}

// indexLiveChunks inserts into the pgvector tables the rows of batch whose chunk is still
// there (one deleted since unindexedChunks read it is not indexed), under the advisory lock
// of a table's creation, in tx.
func indexLiveChunks(ctx context.Context, tx bun.Tx, vp VectorPath, batch []pgvectorRow) error {
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('agentmemory.knowledge_vec.' || current_schema(), 0))"); err != nil {
		return err
	}
	var live []string
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.ChunkID
	}
	if err := tx.NewSelect().Model((*models.KnowledgeChunk)(nil)).Column("id").Where("id IN (?)", bun.In(ids)).For("SHARE").Scan(ctx, &live); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, id := range live {
		keep[id] = true
	}
	kept := batch[:0]
	for _, r := range batch {
		if keep[r.ChunkID] {
			kept = append(kept, r)
		}
	}
	return insertPgvector(ctx, tx, vp, kept)
}

// refreshStats runs ANALYZE on the tables a pgvector search joins (knowledge_chunks,
// knowledge_documents and the pgvector tables of the current schema) whose rows changed
// since their last analysis by more than half their size (at least 200): the planner's
// statistics of a table that just grew from nothing. Without them PostgreSQL estimated one
// row per base and joined the chunks in a nested loop over the base's btree (a second per
// search at 4,000 chunks) until autovacuum's analysis came. Amortised: a table is analysed
// again only after it has grown by half. Best effort, after the ingest's commit: an error
// leaves the statistics to autovacuum.
func refreshStats(ctx context.Context, d bun.IDB) {
	var stale []string
	err := d.NewRaw(`SELECT relname FROM pg_stat_user_tables WHERE schemaname = current_schema()
	AND (relname IN ('knowledge_chunks', 'knowledge_documents') OR relname ~ '^knowledge_vec_[0-9]+$')
	AND n_mod_since_analyze > greatest(n_live_tup / 2, 200) ORDER BY relname`).Scan(ctx, &stale)
	if err != nil || len(stale) == 0 {
		return
	}
	_, _ = d.ExecContext(ctx, "ANALYZE "+strings.Join(stale, ", ")) // best effort: planner statistics, refreshed by autovacuum if this fails
}

// pgvecNearest is nearestChunks on pgvector: for each base a k-nearest search in one
// statement over the pgvector table of the query's length joined with the chunk and
// document rows, with the tenant, base, max_age and read-grant filter (scope: the same
// chunkScope as every other read) in its WHERE clause, ordered by cosine distance (<=>,
// served by the HNSW index when the planner finds it cheaper than the base's btree and a
// sort). The graph is shared by every space, so the search runs with
// hnsw.iterative_scan = strict_order (pgvector 0.8+): when the filter drops the nearest
// tuples the index scan goes on until k pass it (or hnsw.max_scan_tuples, 20,000 by default,
// are read), instead of answering fewer. hnsw.ef_search is pgvecEfSearch. HNSW is
// approximate: a near chunk can be missed (docs/scaling.md has the measured recall).
// Ties at the boundary widen k as on SQLite; a search that answers fewer than k (the base
// is small, or the scan gave up) or whose ties go past vecMaxK is replaced by the exact
// scan of that base, so a base is never starved. Scores are exact cosines computed from the
// chunk rows, as on every path. All statements run in one read-only transaction (the
// settings are SET LOCAL).
func pgvecNearest(ctx context.Context, d bun.IDB, vp VectorPath, spaceID string, scope chunkFilter, bases []vectorBase, depth int, minScore float64) ([]vectorHit, error) {
	var hits []vectorHit
	err := d.RunInTx(ctx, &sql.TxOptions{ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
		set := "SELECT set_config('hnsw.ef_search', ?, true)"
		if vp.iterative {
			set += ", set_config('hnsw.iterative_scan', 'strict_order', true)"
		}
		if _, err := tx.ExecContext(ctx, set, strconv.Itoa(pgvecEfSearch)); err != nil {
			return fmt.Errorf("knowledge: vector search: %w", err)
		}
		search := func(ctx context.Context, table string, b vectorBase, k int) ([]string, []float64, error) {
			return pgvecSearch(ctx, tx, vp, table, spaceID, scope, b, k)
		}
		var err error
		hits, err = indexedNearest(ctx, tx, spaceID, scope, bases, depth, minScore, search, false)
		return err
	})
	return hits, err
}

// pgvecSearch is one k-nearest statement of pgvecNearest: chunk ids and cosine distances,
// nearest first.
func pgvecSearch(ctx context.Context, tx bun.IDB, vp VectorPath, table, spaceID string, scope chunkFilter, b vectorBase, k int) ([]string, []float64, error) {
	if !finite(b.Query) {
		return nil, nil, nil
	}
	var rows []struct {
		ID       string  `bun:"chunk_id"`
		Distance float64 `bun:"distance"`
	}
	if err := pgvecQuery(tx, vp, table, spaceID, scope, b, k).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("knowledge: vector search: %w", err)
	}
	ids, dists := make([]string, len(rows)), make([]float64, len(rows))
	for i, r := range rows {
		ids[i], dists[i] = r.ID, r.Distance
	}
	return ids, dists, nil
}

// pgvecQuery is pgvecSearch's statement: table AS v joined with its chunk (c) and document
// (d) rows, v's space and base, max_age and scope (chunkScope) in the WHERE clause, ordered by
// v.embedding <=> the query's vector (pgvector's operator and type named with their schema),
// at most k rows of chunk_id and distance.
func pgvecQuery(tx bun.IDB, vp VectorPath, table, spaceID string, scope chunkFilter, b vectorBase, k int) *bun.SelectQuery {
	sch := quoteIdent(vp.schema)
	dist := fmt.Sprintf("v.embedding OPERATOR(%s.<=>) CAST(? AS %s.vector)", sch, sch)
	lit := vectorLiteral(b.Query)
	q := tx.NewSelect().TableExpr(table+" AS v").
		Join("JOIN knowledge_chunks AS c ON c.id = v.chunk_id").Join("JOIN knowledge_documents AS d ON d.id = c.document_id").
		ColumnExpr("v.chunk_id AS chunk_id").ColumnExpr(dist+" AS distance", lit).
		Where("v.space_id = ? AND v.kb_id = ?", spaceID, b.ID)
	if !b.Since.IsZero() {
		q = q.Where("v.indexed_at >= ?", b.Since.UTC())
	}
	return restrict(q, scope, spaceID, []string{b.ID}).OrderExpr(dist, lit).Limit(int64(k))
}
