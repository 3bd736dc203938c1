package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/knowledge/knowledgetest"
	"github.com/agentmemory/agentmemory/internal/llm"
	"github.com/agentmemory/agentmemory/internal/llm/hashembed"
	"github.com/agentmemory/agentmemory/internal/llm/llmtest"
)

// knowledgeSizes are the corpus sizes (chunks) retrieval is measured at, in increasing order:
// the corpus grows to each in turn, and the growth is the ingest figure.
var knowledgeSizes = sizesFlag{1000, 10000}

func init() {
	flag.Var(&knowledgeSizes, "knowledge-chunks", "corpus sizes in chunks, increasing, comma-separated (default 1000,10000)")
}

// sizesFlag is a comma-separated list of increasing positive integers.
type sizesFlag []int

func (f *sizesFlag) String() string {
	parts := make([]string, len(*f))
	for i, n := range *f {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

func (f *sizesFlag) Set(s string) error {
	var out sizesFlag
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || (len(out) > 0 && n <= out[len(out)-1]) {
			return fmt.Errorf("want increasing positive integers, got %q", s)
		}
		out = append(out, n)
	}
	*f = out
	return nil
}

// procsPerDocument is how many ABCD procedures one corpus document holds (about 10 chunks of
// 200 tokens: a few pages).
const procsPerDocument = 8

// recallRow is the recall@5 of one engine: hits of len(knowledgetest.Questions), and the
// questions missed.
type recallRow struct {
	engine   string
	hits, of int
	procs    int
	misses   []string
	mode     string
}

// sizeRow is one corpus size of one engine: the ingest that grew the corpus to chunks (from
// the previous size) and the retrieval measured at it.
type sizeRow struct {
	engine              string
	chunks, added, docs int
	ingest              time.Duration
	retrieve            row
	retrieveMode        string
}

var (
	knMu     sync.Mutex
	recalls  []recallRow
	sizeRows []sizeRow
)

// BenchmarkKnowledge measures knowledge retrieval (issue 18) on SQLite and PostgreSQL with the
// stand-in deterministic embedder (internal/llm/hashembed: hashed words and trigrams, 256
// dimensions, behind a fake Ollama /api/embed server), so it measures the pipeline (chunking,
// the gate, embedding calls, indexing, ranking, the context and the receipt), not a model:
//
//   - recall@5: the 55 ABCD procedures ingested into one base (200-token chunks, overlap 30),
//     then knowledgetest.Questions asked through POST /v1/knowledge/retrieve (top_k 5); a hit
//     is the answering procedure among the 5 chunks.
//
//   - ingest chunks/s: a second base grown to each of knowledgeSizes chunks with documents of
//     procsPerDocument procedures each, through the store's Submit and Ingest (what
//     IngestWorkflow's activity calls: gate, chunking, /api/embed in batches, one indexing
//     transaction with its receipt), without Temporal's scheduling.
//
//   - retrieve p50/p99: at each size, b.N retrievals (one client, one after the other) of the
//     questions in turn through the HTTP API on a loopback server (top_k 5, max_tokens 1000),
//     so it measures whatever retrieve does on that engine.
//
// Engines: sqlite (sqlite-vec), postgres (pgvector's HNSW index where the server has the
// extension, else the exact scan) and postgres-exact (the exact-scan fallback forced).
//
//	go test -run '^$' -bench Knowledge -benchtime 200x ./bench
func BenchmarkKnowledge(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres", "postgres-exact"} {
		b.Run(engine, func(b *testing.B) { benchKnowledge(b, engine) })
	}
}

func benchKnowledge(b *testing.B, engine string) {
	ctx := context.Background()
	pg, forceExact := strings.CutSuffix(engine, "-exact")
	e := apptest.New(b, pg)
	embed := llmtest.NewEmbed(b)
	emb, err := llm.New(llm.Config{Host: embed.URL, Model: "unused"})
	if err != nil {
		b.Fatal(err)
	}
	ks := e.App.Knowledge
	if forceExact {
		ks.ForceExactScan()
	}
	ks.Embedder = emb
	e.PutDocument("features", map[string]any{"knowledge": map[string]any{"enabled": true}})
	admin, err := auth.Authenticate(ctx, e.DB, e.AdminKey)
	if err != nil {
		b.Fatal(err)
	}
	base := serve(b, e.Server.HTTPServer)
	hc := &http.Client{Timeout: 60 * time.Second}
	reader := e.AgentKey("bench-reader", "bench", "knowledge:read")
	newBase := func(name string) string {
		settings := map[string]any{"embedding_model": "stand-in", "chunk_tokens": 200, "chunk_overlap": 30, "readers": map[string]any{"space": true}}
		return e.MustDo(http.StatusCreated, "POST", "/v1/knowledge", e.AdminKey, map[string]any{"name": name, "settings": settings}).JSON(b)["id"].(string)
	}
	ingest := func(kb string, req knowledge.SubmitRequest) int {
		d, _, err := ks.Submit(ctx, admin, kb, req)
		if err != nil {
			b.Fatalf("submit %s: %v", req.SourceURI, err)
		}
		res, err := ks.Ingest(ctx, d.ID)
		if err != nil || res.Status != knowledge.StatusReady {
			b.Fatalf("ingest %s: %v (status %q)", req.SourceURI, err, res.Status)
		}
		return res.Chunks
	}
	retrieve := func(ctx context.Context, kb, query string) (retrieval, error) {
		body, _ := json.Marshal(map[string]any{"query": query, "kbs": []string{kb}, "top_k": 5, "max_tokens": 1000})
		data, _, err := do(ctx, hc, "POST", base+"/v1/knowledge/retrieve", reader, "", string(body), http.StatusOK)
		if err != nil {
			return retrieval{}, err
		}
		var r retrieval
		return r, json.Unmarshal(data, &r)
	}

	// Recall@5 of the right procedure.
	procs := knowledgetest.Procedures(b)
	abcd := newBase("procedures")
	for _, p := range procs {
		ingest(abcd, knowledge.SubmitRequest{Text: p.Text, Format: "markdown", SourceURI: p.URI, Title: p.Title, Version: "2020-abcd"})
	}
	rec := recallRow{engine: engine, of: len(knowledgetest.Questions), procs: len(procs)}
	for _, q := range knowledgetest.Questions {
		r, err := retrieve(ctx, abcd, q.Query)
		if err != nil {
			b.Fatal(err)
		}
		var titles []string
		for _, c := range r.Chunks {
			titles = append(titles, c.Title)
		}
		rec.mode = r.Mode
		if knowledgetest.Hit(titles, q.Want) {
			rec.hits++
		} else {
			rec.misses = append(rec.misses, q.Want)
		}
	}
	knMu.Lock()
	recalls = append(recalls, rec)
	knMu.Unlock()

	// The corpus, grown to each size; retrieval measured at each.
	corpus := newBase("corpus")
	chunks, docs := 0, 0
	for _, size := range knowledgeSizes {
		from, fromDocs := chunks, docs
		t0 := time.Now()
		for chunks < size {
			var text strings.Builder
			for j := range procsPerDocument {
				p := procs[(docs*procsPerDocument+j)%len(procs)]
				fmt.Fprintf(&text, "%s\nRevision %d of this procedure for region %d.\n\n", p.Text, docs, j)
			}
			chunks += ingest(corpus, knowledge.SubmitRequest{Text: text.String(), Format: "markdown",
				SourceURI: fmt.Sprintf("bench://corpus/%d", docs), Title: fmt.Sprintf("Handbook part %d", docs), Version: "1"})
			docs++
		}
		sr := sizeRow{engine: engine, chunks: chunks, added: chunks - from, docs: docs - fromDocs, ingest: time.Since(t0)}
		b.Run(sizeName(size), func(b *testing.B) {
			var mu sync.Mutex
			r := drive(b, 1, func(ctx context.Context, _, i int) (int, error) {
				got, err := retrieve(ctx, corpus, knowledgetest.Questions[i%len(knowledgetest.Questions)].Query)
				if err == nil && len(got.Chunks) == 0 {
					err = fmt.Errorf("no chunk retrieved")
				}
				if err == nil {
					mu.Lock()
					sr.retrieveMode = got.Mode
					mu.Unlock()
				}
				return 0, err
			})
			r.engine, r.workload = engine, sizeName(size)
			b.ReportMetric(r.rate(), "ops/s")
			b.ReportMetric(float64(r.p50.Microseconds())/1000, "p50_ms")
			b.ReportMetric(float64(r.p99.Microseconds())/1000, "p99_ms")
			b.ReportMetric(float64(sr.added)/sr.ingest.Seconds(), "ingest_chunks/s")
			if r.failed > 0 {
				b.Fatalf("%d of %d retrievals failed", r.failed, r.ops+r.failed)
			}
			sr.retrieve = r
		})
		knMu.Lock()
		sizeRows = append(sizeRows, sr)
		knMu.Unlock()
	}
	if n := len(embed.Requests()); n == 0 {
		b.Fatal("the embedder was never called")
	}
}

// sizeName names the retrieve workload at size chunks: retrieve_1k, retrieve_10k, retrieve_500.
func sizeName(size int) string {
	if size%1000 == 0 {
		return fmt.Sprintf("retrieve_%dk", size/1000)
	}
	return fmt.Sprintf("retrieve_%d", size)
}

// retrieval is the part of POST /v1/knowledge/retrieve's answer the bench reads.
type retrieval struct {
	Mode   string `json:"mode"`
	Chunks []struct {
		Title string `json:"title"`
	} `json:"chunks"`
}

// printKnowledge prints the knowledge figures: recall@5 per engine, then ingest chunks/s and
// retrieve p50/p99 per engine and corpus size.
func printKnowledge(w io.Writer) {
	knMu.Lock()
	defer knMu.Unlock()
	if len(recalls) == 0 && len(sizeRows) == 0 {
		return
	}
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tprocedures\tquestions\thits\trecall@5\tmode\tmissed\t")
	for _, r := range recalls {
		missed := "-"
		if len(r.misses) > 0 {
			missed = strings.Join(r.misses, "; ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f%%\t%s\t%s\t\n", r.engine, r.procs, r.of, r.hits, 100*float64(r.hits)/float64(r.of), r.mode, missed)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nknowledge recall@5 of the right ABCD procedure: STAND-IN deterministic embedder (hashed words and trigrams, %d dims) fused with full text; it measures the pipeline, not a real embedding model\n%s", hashembed.Dims, sb.String())

	sb.Reset()
	tw = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tcorpus chunks\tingested chunks\tdocuments\tingest s\tingest chunks/s\tretrievals\tretrieve ops/s\tp50 ms\tp99 ms\tmode\t")
	for _, r := range sizeRows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.0f\t%d\t%.1f\t%.2f\t%.2f\t%s\t\n", r.engine, r.chunks, r.added, r.docs, r.ingest.Seconds(),
			float64(r.added)/r.ingest.Seconds(), r.retrieve.ops, r.retrieve.rate(),
			float64(r.retrieve.p50.Microseconds())/1000, float64(r.retrieve.p99.Microseconds())/1000, r.retrieveMode)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nknowledge ingest (store Submit + Ingest, no Temporal; stand-in embedder over HTTP; %d procedures per document, 200-token chunks) and retrieve (HTTP API, 1 client, top_k 5, max_tokens 1000)\n%s", procsPerDocument, sb.String())
}
