// Package bench measures the HTTP API against what it is judged by (issue 16): for SQLite and
// PostgreSQL, N concurrent agents (default 32) drive a real net/http server on loopback
// (merge writes, cas writes, reads, merge writes of one hot state, the prompt block with and
// without If-None-Match at 100 and 500 notes, note writes at 8 writers) and, in the same run,
// with the same goroutines, client and pool: the HTTP floor (floor, below: an in-memory key
// check and one prepared conditional UPDATE or SELECT per request), the database's own
// single-row compare-and-swap on a row per writer and on one hot row (read, CAS, retry), and
// the API server's /healthz. Each workload reports ops/s, p50/p99 latency and its ratio to
// its base; the summary prints every workload and issue 16's targets (goals) with the ratios
// and whether each is met.
//
// Each ratio compares figures measured interleaved. A comparison group (floor_write with
// api_merge and api_cas; floor_read with api_read; limit_hot_row with api_merge_hot;
// healthz_100 with the block reads at 100 notes, healthz_500 with those at 500) is one
// sub-benchmark, named by its workloads joined by "+". Every workload of it does b.N
// operations in all, in -rounds chunks (default 5) that alternate with the other workloads'
// chunks, the order reversed every other round (A B, B A, A B, ...). A rate is the chunks'
// operations over their summed time, p50/p99 are over all the chunks' latencies, and the
// summary prints beside each ratio the least and the greatest ratio of a single round.
// limit_own_row and note_write have no base and run in one piece.
//
// The API runs with the pool configuration the service ships with (dbtest.Shipped: what
// `serve` uses when no AGENTMEMORY_DB_* variable is set). On PostgreSQL the same load runs
// again, in the same run, with a tuned pool ("postgres-tuned": open and idle connections set
// explicitly to tunedConns) and the summary prints shipped/tuned per workload, so a default
// that cannot hold the load shows as a ratio far below 1 (issue 11 §2). The two run one after
// the other: that ratio alone is not interleaved.
//
//	go test -run '^$' -bench WM -benchtime 1000x ./bench            # both databases
//	go test -run '^$' -bench 'WM/sqlite' -benchtime 1000x ./bench -args -agents 16
//	go test -run '^$' -bench 'WM/^sqlite$/api_read' -benchtime 1000x ./bench  # api_read's group
//
// BenchmarkKnowledge (knowledge_test.go) measures knowledge retrieval: recall@5, ingest
// chunks/s and retrieve p50/p99 at 1k and 10k chunks, printed in tables of their own.
// BenchmarkGrowth (growth_test.go) measures how cost grows with the data (stored states, one
// state's size, notes, the receipt chain, one subject's erasure), in tables of their own.
//
// Runs are bounded in count (-benchtime Nx: N operations per workload) and in time (-maxtime
// per workload, its chunks together, default 60 s: a workload stops early and reports what it
// did). Loopback only.
package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/sdk"
)

var (
	agents     = flag.Int("agents", 32, "concurrent agents (and database writers for the limit), 1..64")
	maxTime    = flag.Duration("maxtime", 60*time.Second, "upper bound of one workload's duration")
	roundCount = flag.Int("rounds", 5, "chunks each workload of a comparison group is split into, alternating with the group's others")
)

// row is one workload's measured figures: base is the workload of its group it is compared
// with ("" for none), ratio its rate over base's, lo and hi the least and the greatest ratio of
// a single one of its rounds.
type row struct {
	engine, workload, base string
	agents, ops, failed    int
	conflicts              int64
	elapsed                time.Duration
	p50, p99               time.Duration
	ratio, lo, hi          float64
}

func (r row) rate() float64 { return float64(r.ops) / r.elapsed.Seconds() }

var (
	mu      sync.Mutex
	results = map[string]row{} // by engine/workload: the last (largest b.N) run
	order   []string
)

func record(r row) {
	mu.Lock()
	defer mu.Unlock()
	k := r.engine + "/" + r.workload
	if _, ok := results[k]; !ok {
		order = append(order, k)
	}
	results[k] = r
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if len(order) > 0 {
		printSummary(os.Stdout)
	}
	printKnowledge(os.Stdout)
	printGrowth(os.Stdout)
	os.Exit(code)
}

// BenchmarkWM runs every workload on SQLite and on PostgreSQL.
func BenchmarkWM(b *testing.B) {
	if *agents < 1 || *agents > 64 {
		b.Fatalf("-agents must be 1..64, got %d", *agents)
	}
	if *roundCount < 1 {
		b.Fatalf("-rounds must be at least 1, got %d", *roundCount)
	}
	for _, engine := range []string{"sqlite", "postgres", tunedEngine} {
		b.Run(engine, func(b *testing.B) { benchEngine(b, engine) })
	}
}

// tunedEngine is PostgreSQL with a pool tuned by hand (tunedConns open and idle), the
// comparison for the shipped defaults measured as "postgres".
const tunedEngine = "postgres-tuned"

// tunedConns is the tuned pool's size: open and idle connections alike.
const tunedConns = 32

// pool is the pool configuration and database engine of a bench engine name.
func pool(engine string) (string, db.Options) {
	if engine == tunedEngine {
		opt := dbtest.Shipped()
		opt.MaxOpenConns, opt.MaxIdleConns = tunedConns, tunedConns
		return "postgres", opt
	}
	return engine, dbtest.Shipped()
}

func benchEngine(b *testing.B, engine string) {
	n := *agents
	dbEngine, opt := pool(engine)
	e := apptest.NewWithPool(b, dbEngine, opt)
	ctx := context.Background()

	// The limit's table: one row per writer plus one hot row (id -1).
	_, err := e.DB.ExecContext(ctx, `CREATE TABLE bench_cas (id BIGINT PRIMARY KEY, version BIGINT NOT NULL)`)
	if err != nil {
		b.Fatal(err)
	}
	for i := -1; i < n; i++ {
		if _, err := e.DB.ExecContext(ctx, `INSERT INTO bench_cas (id, version) VALUES (?, 0)`, i); err != nil {
			b.Fatal(err)
		}
	}

	// The API on a real loopback server, with the server's own timeouts.
	base := serve(b, e.Server.HTTPServer)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConns: 2 * n, MaxIdleConnsPerHost: 2 * n}}

	fields := map[string]any{"count": map[string]any{"type": "integer"}, "step": map[string]any{"type": "string"}}
	for i := range 64 {
		fields[fmt.Sprintf("f%02d", i)] = map[string]any{"type": "integer"}
	}
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true},
		"agent_memory": map[string]any{"enabled": true, "max_notes_per_source": 100000}})
	e.PutDocument("object-types", map[string]any{"types": []any{map[string]any{
		"type": "bench-agent", "ownership": "agent", "fields": fields,
		"agent_state": map[string]any{"scope": "conversation", "max_bytes": 65536}}}})
	states := make([]*sdk.StateHandle, n) // per agent: its own conversation's state
	keys := make([]string, n)
	var hot *sdk.StateHandle // one state of agent 0 that every goroutine writes
	for i := range n {
		// Every agent has its own key and name; the only agent-owned type is their schema.
		keys[i] = e.AgentKey(fmt.Sprintf("bench-agent-%d", i), "bench", "agent_state")
		c, err := sdk.New(sdk.Options{BaseURL: base, Key: keys[i], HTTPClient: hc, AgentVersion: "bench/1"})
		if err != nil {
			b.Fatal(err)
		}
		states[i] = c.AgentState(sdk.Conversation(fmt.Sprintf("bench-%d", i)))
		if i == 0 {
			hot = c.AgentState(sdk.Conversation("bench-hot"))
		}
	}
	versions := make([]atomic.Int64, n)  // per agent: the version of its own state
	limitVers := make([]atomic.Int64, n) // per writer: the version of its own limit row

	// The HTTP floor: the same keys, the same database and pool, the same client.
	fl := newFloor(b, e.DB, keys)
	floorBase := serve(b, func(addr string) *http.Server { return &http.Server{Addr: addr, Handler: fl} })
	floorVers := make([]atomic.Int64, n)

	limitOwnRow := workload{name: "limit_own_row", n: n, op: func(ctx context.Context, w, _ int) (int, error) {
		v := limitVers[w].Load()
		var got int64
		err := e.DB.NewRaw(`UPDATE bench_cas SET version = version + 1 WHERE id = ? AND version = ? RETURNING version`, w, v).Scan(ctx, &got)
		if err != nil {
			return 0, err
		}
		limitVers[w].Store(got)
		return 0, nil
	}}
	limitHotRow := workload{name: "limit_hot_row", n: n, op: func(ctx context.Context, _, _ int) (int, error) {
		return hotCAS(ctx, e.DB)
	}}
	floorWrite := workload{name: "floor_write", n: n, op: func(ctx context.Context, a, i int) (int, error) {
		v, err := floorCall(ctx, hc, floorBase+"/floor/write", keys[a],
			fmt.Sprintf(`{"version":%d,"body":{"count":%d,"step":"merge"}}`, floorVers[a].Load(), i))
		if err == nil {
			floorVers[a].Store(v)
		}
		return 0, err
	}}
	floorRead := workload{name: "floor_read", n: n, op: func(ctx context.Context, a, _ int) (int, error) {
		v, err := floorCall(ctx, hc, floorBase+"/floor/read", keys[a], `{}`)
		if err == nil && v < floorVers[a].Load() {
			err = fmt.Errorf("floor read version %d after writing %d", v, floorVers[a].Load())
		}
		return 0, err
	}}
	// Like the floor's rows, every agent's state exists before the API is timed: the figures
	// compare updates with updates (a state's first write is an insert).
	for a := range n {
		res, err := states[a].Put(ctx, map[string]any{"count": 0, "step": "init"})
		if err != nil || !res.Stored {
			b.Fatalf("agent %d's first write: %v %+v", a, err, res)
		}
		versions[a].Store(res.Version)
	}
	apiMerge := workload{name: "api_merge", base: "floor_write", n: n, op: func(ctx context.Context, a, i int) (int, error) {
		res, err := states[a].Put(ctx, map[string]any{"count": i, "step": "merge"})
		if err == nil && !res.Stored {
			err = fmt.Errorf("not stored: %v", res.Reason)
		}
		if err == nil {
			versions[a].Store(res.Version)
		}
		return 0, err
	}}
	apiCAS := workload{name: "api_cas", base: "floor_write", n: n, op: func(ctx context.Context, a, i int) (int, error) {
		// Each agent owns its state: the version it last wrote is current, so no conflict.
		res, err := states[a].Put(ctx, map[string]any{"count": i, "step": "cas"}, sdk.CAS(versions[a].Load()))
		if err == nil && !res.Stored {
			err = fmt.Errorf("not stored: %v", res.Reason)
		}
		if err == nil {
			versions[a].Store(res.Version)
		}
		return 0, err
	}}
	apiRead := workload{name: "api_read", base: "floor_read", n: n, op: func(ctx context.Context, a, _ int) (int, error) {
		st, err := states[a].Get(ctx)
		if err == nil && st.Version < versions[a].Load() {
			err = fmt.Errorf("read version %d after writing %d", st.Version, versions[a].Load())
		}
		return 0, err
	}}
	apiMergeHot := workload{name: "api_merge_hot", base: "limit_hot_row", n: n, op: func(ctx context.Context, a, i int) (int, error) {
		// Every agent's goroutine writes its own field of one state of agent 0.
		res, err := hot.Put(ctx, map[string]any{fmt.Sprintf("f%02d", a%64): i})
		if err == nil && !res.Stored {
			err = fmt.Errorf("not stored: %v", res.Reason)
		}
		return 0, err
	}}
	runGroup(b, engine, limitOwnRow)
	runGroup(b, engine, floorWrite, apiMerge, apiCAS)
	runGroup(b, engine, floorRead, apiRead)
	runGroup(b, engine, limitHotRow, apiMergeHot)
	if engine == tunedEngine {
		return // the tuned pool is compared on working memory only
	}

	// The prompt block and note writes; the block against the same server's /healthz,
	// measured in the same group (healthz_100, healthz_500).
	reader := e.AgentKey("bench-bot", "bench", "agent_memory") // reads its own block
	e.AgentKey("bench-writer", "bench", "agent_memory")
	loader := e.PersonKey("loader", "integration")
	addNotes := func(from, to int) {
		for i := from; i < to; i++ {
			e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", loader, map[string]any{
				"kind": "procedure", "source_id": "bench-bot", "title": fmt.Sprintf("Step %d", i), "visibility": "vendor",
				"body": fmt.Sprintf("Pull up the account, validate the purchase, record the reason and enter the details (variant %d).", i),
				"tags": []string{fmt.Sprintf("t%d", i%5)}})
		}
	}
	blockPath := base + "/v1/agent-memory/block?max_tokens=1000&tags=t1"
	blocks := func(notes int) {
		etag, err := getETag(ctx, hc, blockPath, reader)
		if err != nil {
			b.Fatal(err)
		}
		healthz := fmt.Sprintf("healthz_%d", notes)
		runGroup(b, engine,
			workload{name: healthz, n: n, op: func(ctx context.Context, _, _ int) (int, error) {
				return 0, get(ctx, hc, base+"/healthz", "", "", http.StatusOK)
			}},
			workload{name: fmt.Sprintf("block_304_%d", notes), base: healthz, n: n, op: func(ctx context.Context, _, _ int) (int, error) {
				return 0, get(ctx, hc, blockPath, reader, etag, http.StatusNotModified)
			}},
			workload{name: fmt.Sprintf("block_200_%d", notes), base: healthz, n: n, op: func(ctx context.Context, _, _ int) (int, error) {
				return 0, get(ctx, hc, blockPath, reader, "", http.StatusOK)
			}})
	}
	addNotes(0, 100)
	blocks(100)
	addNotes(100, 500)
	blocks(500)
	var seq atomic.Int64 // every note distinct across the benchmark's runs (b.N 1, then N)
	runGroup(b, engine, workload{name: "note_write", n: noteWriters, op: func(ctx context.Context, _, _ int) (int, error) {
		i := seq.Add(1)
		body := fmt.Sprintf(`{"kind":"procedure","source_id":"bench-writer","title":"Refund step %d","body":"Validate the purchase with the order id, then offer a gift card or a paper check. Variant %d.","tags":["refund","orders"]}`, i, i)
		return 0, post(ctx, hc, base+"/v1/agent-memory/notes", loader, body, http.StatusCreated)
	}})
}

// noteWriters is the concurrency of the note_write workload (issue 16: p99 at 8 writers).
const noteWriters = 8

// workload is one stream of operations: its name, the workload of its group it is compared
// with (base; "" for none), its goroutines (n) and its operation. op gets the goroutine
// (0..n-1) and the operation's index within the workload (0..b.N-1), and returns the races it
// lost.
type workload struct {
	name, base string
	n          int
	op         func(ctx context.Context, agent, i int) (conflicts int, err error)
}

// runGroup runs one comparison group of engine as one sub-benchmark, named by its workloads
// joined by "+", and records every workload of it. Each workload performs b.N operations in
// all, in -rounds chunks of about b.N/rounds (fewer chunks when b.N is smaller). Round r runs
// one chunk of every workload, one after the other: in the group's order when r is even,
// reversed when it is odd (A B C, C B A, A B C, ...), so a workload and its base are measured
// at the same moments. A workload's operations, elapsed time and latencies are summed over its
// chunks; its ratio is its rate over its base's, lo and hi the least and the greatest ratio of
// a single round. A group of one workload runs in one chunk. -maxtime bounds the chunks of one
// workload together.
func runGroup(b *testing.B, engine string, ws ...workload) {
	names := make([]string, len(ws))
	for j, w := range ws {
		names[j] = w.name
	}
	b.Run(strings.Join(names, "+"), func(b *testing.B) {
		rounds := 1
		if len(ws) > 1 {
			rounds = min(*roundCount, b.N)
		}
		total := make([]chunk, len(ws))
		per := make([][]chunk, len(ws)) // by workload, then round
		b.ResetTimer()
		for r := range rounds {
			from, to := b.N*r/rounds, b.N*(r+1)/rounds
			for k := range ws {
				j := k
				if r%2 == 1 {
					j = len(ws) - 1 - k
				}
				c := runChunk(*maxTime-total[j].elapsed, ws[j].n, from, to, ws[j].op)
				per[j] = append(per[j], c)
				total[j].add(c)
			}
		}
		b.StopTimer()
		var failed []string
		for j, w := range ws {
			r := total[j].row(w.n)
			r.engine, r.workload, r.base = engine, w.name, w.base
			b.ReportMetric(r.rate(), w.name+"_ops/s")
			b.ReportMetric(ms(r.p50), w.name+"_p50_ms")
			b.ReportMetric(ms(r.p99), w.name+"_p99_ms")
			if k := slices.IndexFunc(ws, func(x workload) bool { return x.name == w.base }); k >= 0 {
				r.ratio = r.rate() / total[k].rate()
				r.lo, r.hi = spread(per[j], per[k])
				b.ReportMetric(r.ratio, w.name+"/"+w.base)
			}
			record(r)
			if r.failed > 0 {
				b.Logf("%s: first error: %s", w.name, total[j].firstErr)
				failed = append(failed, fmt.Sprintf("%s: %d of %d operations failed", w.name, r.failed, r.ops+r.failed))
			}
		}
		if len(failed) > 0 {
			b.Fatal(strings.Join(failed, "; "))
		}
	})
}

// spread returns the least and the greatest ratio of a round's rate of w to the same round's
// rate of base, over the rounds in which both completed operations.
func spread(w, base []chunk) (lo, hi float64) {
	for r := range w {
		if w[r].ops == 0 || base[r].ops == 0 {
			continue
		}
		x := w[r].rate() / base[r].rate()
		if lo == 0 || x < lo {
			lo = x
		}
		hi = max(hi, x)
	}
	return lo, hi
}

// serve starts the server built by mk on a loopback port and returns its base URL.
func serve(b *testing.B, mk func(addr string) *http.Server) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := mk(ln.Addr().String())
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// do sends one request and checks its status; it returns the answer's body and headers.
func do(ctx context.Context, hc *http.Client, method, url, key, ifNoneMatch, body string, want int) ([]byte, http.Header, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if ifNoneMatch != "" {
		req.Header.Set("If-None-Match", ifNoneMatch)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != want {
		return nil, nil, fmt.Errorf("%s %s: got %d, want %d: %.200s", method, url, resp.StatusCode, want, data)
	}
	return data, resp.Header, nil
}

func get(ctx context.Context, hc *http.Client, url, key, ifNoneMatch string, want int) error {
	_, _, err := do(ctx, hc, "GET", url, key, ifNoneMatch, "", want)
	return err
}

func post(ctx context.Context, hc *http.Client, url, key, body string, want int) error {
	_, _, err := do(ctx, hc, "POST", url, key, "", body, want)
	return err
}

// getETag reads url once and returns its ETag.
func getETag(ctx context.Context, hc *http.Client, url, key string) (string, error) {
	_, h, err := do(ctx, hc, "GET", url, key, "", "", http.StatusOK)
	if err != nil {
		return "", err
	}
	if h.Get("ETag") == "" {
		return "", errors.New("no ETag")
	}
	return h.Get("ETag"), nil
}

// floorCall posts body to a floor endpoint and returns the version it answered.
func floorCall(ctx context.Context, hc *http.Client, url, key, body string) (int64, error) {
	data, _, err := do(ctx, hc, "POST", url, key, "", body, http.StatusOK)
	if err != nil {
		return 0, err
	}
	var out struct {
		Version int64 `json:"version"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return 0, err
	}
	return out.Version, nil
}

// floor is the HTTP floor (issue 16): the least a server can do per request on the same
// database with the same pool: check the bearer key in memory, then run one prepared
// conditional UPDATE (write) or one prepared SELECT (read) of the key's own row.
type floor struct {
	keys     map[string]int64 // by key hash: the key's row
	upd, sel *sql.Stmt
}

func newFloor(b *testing.B, d *bun.DB, keys []string) *floor {
	ctx := context.Background()
	if _, err := d.ExecContext(ctx, `CREATE TABLE bench_floor (id BIGINT PRIMARY KEY, version BIGINT NOT NULL, body TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	f := &floor{keys: map[string]int64{}}
	for i, k := range keys {
		f.keys[auth.HashKey(k)] = int64(i)
		if _, err := d.ExecContext(ctx, `INSERT INTO bench_floor (id, version, body) VALUES (?, 0, '{}')`, i); err != nil {
			b.Fatal(err)
		}
	}
	upd := `UPDATE bench_floor SET version = version + 1, body = $1 WHERE id = $2 AND version = $3 RETURNING version`
	sel := `SELECT version, body FROM bench_floor WHERE id = $1`
	if db.IsSQLite(d) {
		upd = `UPDATE bench_floor SET version = version + 1, body = ? WHERE id = ? AND version = ? RETURNING version`
		sel = `SELECT version, body FROM bench_floor WHERE id = ?`
	}
	var err error
	if f.upd, err = d.DB.PrepareContext(ctx, upd); err != nil {
		b.Fatal(err)
	}
	if f.sel, err = d.DB.PrepareContext(ctx, sel); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.upd.Close(); f.sel.Close() })
	return f
}

// ServeHTTP answers POST /floor/write {"version", "body"} with {"version"} (409 when the
// version is stale) and POST /floor/read with {"version", "body"}; 401 for an unknown key.
func (f *floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := f.keys[auth.HashKey(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))]
	if !ok {
		http.Error(w, "unknown key", http.StatusUnauthorized)
		return
	}
	var in struct {
		Version int64           `json:"version"`
		Body    json.RawMessage `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var out struct {
		Version int64           `json:"version"`
		Body    json.RawMessage `json:"body,omitempty"`
	}
	var err error
	switch r.URL.Path {
	case "/floor/write":
		err = f.upd.QueryRowContext(r.Context(), string(in.Body), id, in.Version).Scan(&out.Version)
	case "/floor/read":
		var body string
		err = f.sel.QueryRowContext(r.Context(), id).Scan(&out.Version, &body)
		out.Body = json.RawMessage(body)
	default:
		http.NotFound(w, r)
		return
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		http.Error(w, "stale version", http.StatusConflict)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}
}

// hotCAS increments the hot row by compare-and-swap, re-reading after each lost race; it
// returns the races lost.
func hotCAS(ctx context.Context, db *bun.DB) (int, error) {
	for conflicts := 0; ; conflicts++ {
		var v int64
		if err := db.NewRaw(`SELECT version FROM bench_cas WHERE id = -1`).Scan(ctx, &v); err != nil {
			return conflicts, err
		}
		var got int64
		err := db.NewRaw(`UPDATE bench_cas SET version = version + 1 WHERE id = -1 AND version = ? RETURNING version`, v).Scan(ctx, &got)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		return conflicts, err
	}
}

// drive runs b.N operations spread over n goroutines (released together), timing each, and
// stops early past -maxtime.
func drive(b *testing.B, n int, op func(ctx context.Context, worker, i int) (int, error)) row {
	b.ResetTimer()
	c := runChunk(*maxTime, n, 0, b.N, op)
	b.StopTimer()
	if c.firstErr != "" {
		b.Logf("first error: %v", c.firstErr)
	}
	return c.row(n)
}

// chunk is what a run of consecutive operations of one workload did: the operations that
// succeeded, failed and their lost races, the wall time, the latency of each success and the
// first error.
type chunk struct {
	ops, failed, conflicts int64
	elapsed                time.Duration
	lat                    []time.Duration
	firstErr               string
}

func (c chunk) rate() float64 { return float64(c.ops) / c.elapsed.Seconds() }

// add adds d's operations, time and latencies to c; c keeps its first error.
func (c *chunk) add(d chunk) {
	c.ops += d.ops
	c.failed += d.failed
	c.conflicts += d.conflicts
	c.elapsed += d.elapsed
	c.lat = append(c.lat, d.lat...)
	if c.firstErr == "" {
		c.firstErr = d.firstErr
	}
}

// row returns c's figures for n goroutines, with p50 and p99 of its latencies.
func (c chunk) row(n int) row {
	got := slices.Clone(c.lat)
	slices.Sort(got)
	pct := func(p float64) time.Duration {
		if len(got) == 0 {
			return 0
		}
		return got[min(len(got)-1, int(p*float64(len(got))))]
	}
	return row{agents: n, ops: int(c.ops), failed: int(c.failed), conflicts: c.conflicts, elapsed: c.elapsed, p50: pct(0.50), p99: pct(0.99)}
}

// runChunk runs operations from..to-1 of op over n goroutines, released together, timing each;
// it stops early when budget has passed (at once when budget is not positive).
func runChunk(budget time.Duration, n, from, to int, op func(ctx context.Context, worker, i int) (int, error)) chunk {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	lat := make([]time.Duration, to-from)
	var next, done, failed, conflicts atomic.Int64
	next.Store(int64(from))
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= to {
					return
				}
				t0 := time.Now()
				c, err := op(ctx, w, i)
				d := time.Since(t0)
				conflicts.Add(int64(c))
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				lat[i-from] = d
				done.Add(1)
			}
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	c := chunk{ops: done.Load(), failed: failed.Load(), conflicts: conflicts.Load(), elapsed: time.Since(t0)}
	if e := firstErr.Load(); e != nil {
		c.firstErr = e.(string)
	}
	c.lat = slices.DeleteFunc(lat, func(d time.Duration) bool { return d == 0 })
	return c
}

// goal is one of issue 16's targets: workload's ratio to its base (the workload its group
// compares it with) at least min, or (p99 set) its p99 latency at most p99.
type goal struct {
	workload string
	min      float64
	p99      time.Duration
}

// goals are issue 16's targets, in the order the summary prints them.
var goals = []goal{
	{workload: "api_merge", min: 0.7},
	{workload: "api_cas", min: 0.7},
	{workload: "api_merge_hot", min: 1},
	{workload: "api_read", min: 0.7},
	{workload: "block_304_100", min: 0.5},
	{workload: "block_304_500", min: 0.5},
	{workload: "block_200_100", min: 0.25},
	{workload: "note_write", p99: 10 * time.Millisecond},
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func printSummary(w *os.File) {
	mu.Lock()
	defer mu.Unlock()
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tworkload\tagents\tops\tops/s\tp50 ms\tp99 ms\tlost races\tratio\tround ratios\t")
	for _, k := range order {
		r := results[k]
		ratio, rounds := "-", "-"
		if r.base != "" {
			ratio = fmt.Sprintf("%.2f of %s", r.ratio, r.base)
			rounds = fmt.Sprintf("%.2f-%.2f", r.lo, r.hi)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t%d\t%s\t%s\t\n", r.engine, r.workload, r.agents, r.ops, r.rate(),
			ms(r.p50), ms(r.p99), r.conflicts, ratio, rounds)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nevery workload (each ratio interleaved: the workload and its base in %d alternating rounds; API against the HTTP floor, the hot row against the database's own read-CAS-retry, the block against /healthz)\n%s", *roundCount, sb.String())

	// Issue 16's targets: each figure with the base it is compared with, the ratio and the
	// least and greatest ratio of one round.
	sb.Reset()
	tw = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tfigure\tops/s\tp99 ms\tcompared with\tits ops/s\tratio\tround ratios\ttarget\tmet\t")
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, g := range goals {
			r, ok := results[engine+"/"+g.workload]
			if !ok {
				continue
			}
			if g.p99 > 0 {
				met := r.p99 <= g.p99
				fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.2f\t-\t-\t-\t-\tp99 <= %d ms\t%s\t\n", engine, g.workload, r.rate(), ms(r.p99), g.p99.Milliseconds(), yes(met))
				continue
			}
			base := results[engine+"/"+r.base]
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.2f\t%s\t%.0f\t%.2f\t%.2f-%.2f\t>= %.2f\t%s\t\n", engine, g.workload, r.rate(), ms(r.p99),
				r.base, base.rate(), r.ratio, r.lo, r.hi, g.min, yes(r.ratio >= g.min))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nissue 16: each figure against its base (interleaved, %d agents; note_write %d writers)\n%s", *agents, noteWriters, sb.String())

	// Shipped pool defaults vs a tuned pool, PostgreSQL, same run.
	sb.Reset()
	tw = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tshipped ops/s\ttuned ops/s\tshipped/tuned\tshipped p99 ms\ttuned p99 ms\t")
	rows := 0
	for _, k := range order {
		r := results[k]
		if r.engine != "postgres" || !strings.HasPrefix(r.workload, "api_") {
			continue
		}
		tuned, ok := results[tunedEngine+"/"+r.workload]
		if !ok {
			continue
		}
		rows++
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t\n", r.workload, r.rate(), tuned.rate(), r.rate()/tuned.rate(), ms(r.p99), ms(tuned.p99))
	}
	tw.Flush()
	if rows > 0 {
		fmt.Fprintf(w, "\nPostgreSQL API with the shipped pool defaults vs a tuned pool (%d open, %d idle; same run, one engine after the other: not interleaved)\n%s", tunedConns, tunedConns, sb.String())
	}
}
