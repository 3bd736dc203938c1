package knowledge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/internal/db/dbtest"
)

// pgvecBenchMax is the largest base BenchmarkVectorSearch indexes with pgvector: 50,000
// chunks of 768 dimensions (150 MB of vectors, past PostgreSQL's default 128 MB
// shared_buffers) were on course for over half an hour of HNSW inserts on the shared
// development machine, past make bench's timeout; that size runs the exact scan only.
const pgvecBenchMax = 10_000

// benchDims is the vector length of BenchmarkVectorSearch: 768, as nomic-embed-text and
// most small embedding models answer.
const benchDims = 768

// BenchmarkVectorSearch measures the vector half of retrieval (nearestChunks: the 50 nearest
// chunks of one base, their exact cosine) at 1,000, 10,000 and 50,000 chunks of 768
// dimensions in the base (random vectors): the exact scan on PostgreSQL and on SQLite, the
// sqlite-vec search on SQLite and the pgvector HNSW search on PostgreSQL (when the server
// has the extension; up to pgvecBenchMax chunks). Each engine and size seeds a fresh database once (50,000
// chunks take a minute or two). Another base of the same space holds 1,000 more chunks, so
// the filter does work. docs/scaling.md records a run.
//
//	go test -run '^$' -bench VectorSearch -benchtime 10x -timeout 30m ./internal/knowledge
func BenchmarkVectorSearch(b *testing.B) {
	for _, engine := range []string{"postgres", "sqlite"} {
		for _, size := range []int{1_000, 10_000, 50_000} {
			b.Run(fmt.Sprintf("%s/chunks=%d", engine, size), func(b *testing.B) {
				search, vp := seedBench(b, engine, size)
				for _, path := range []string{PathExact, PathSQLiteVec, PathPgvector} {
					if path != PathExact && path != vp.Name {
						continue
					}
					b.Run(path, func(b *testing.B) {
						ctx := context.Background()
						for i := 0; b.Loop(); i++ {
							hits, err := search(ctx, path, i)
							if err != nil || len(hits) != ListDepth {
								b.Fatalf("got %d hits, err %v; want %d", len(hits), err, ListDepth)
							}
						}
					})
				}
			})
		}
	}
}

// seedBench opens a fresh database of engine with size random chunks in base kb_bench and
// 1,000 in kb_other, indexed on the database's vector path (pgvector when the server has
// it), and returns that path and a search of kb_bench by path (PathExact, PathSQLiteVec or
// PathPgvector) with the i-th of 16 random queries.
func seedBench(b *testing.B, engine string, size int) (func(ctx context.Context, path string, i int) ([]vectorHit, error), VectorPath) {
	d := dbtest.Open(b, engine)
	vp, err := detectVectors(context.Background(), d, true)
	if err != nil {
		b.Fatal(err)
	}
	if vp.Name == PathPgvector && size > pgvecBenchMax {
		vp = VectorPath{Name: PathExact, Reason: "above pgvecBenchMax"}
	}
	rng := rand.New(rand.NewPCG(uint64(size), 7))
	vector := func(string) []float32 {
		v := make([]float32, benchDims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	texts := make([]string, size)
	for i := range texts {
		texts[i] = "chunk"
	}
	now := time.Now().UTC()
	for lo := 0; lo < size; lo += 5_000 {
		seedChunks(b, d, vp, "sp_bench", "kb_bench", now, texts[lo:min(lo+5_000, size)], vector)
	}
	seedChunks(b, d, vp, "sp_bench", "kb_other", now, texts[:1_000], vector)
	queries := make([][]float32, 16)
	for i := range queries {
		queries[i] = vector("")
	}
	return func(ctx context.Context, path string, i int) ([]vectorHit, error) {
		bases := []vectorBase{{ID: "kb_bench", Query: queries[i%len(queries)]}}
		switch path {
		case PathSQLiteVec:
			return vecNearest(ctx, d, "sp_bench", nil, bases, ListDepth, 0)
		case PathPgvector:
			return pgvecNearest(ctx, d, vp, "sp_bench", nil, bases, ListDepth, 0)
		}
		return exactNearest(ctx, d, "sp_bench", nil, bases, ListDepth, 0)
	}, vp
}
