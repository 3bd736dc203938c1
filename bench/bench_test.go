// Package bench measures working memory through the HTTP API against the physical limit:
// for SQLite and PostgreSQL, N concurrent agents drive a real net/http server on loopback
// (merge writes, cas writes, reads, merge writes of one hot state) and, in the same run and
// with the same concurrency, the database's own single-row compare-and-swap
// (UPDATE ... SET version = version + 1 WHERE id = ? AND version = ? RETURNING version), on a
// row per writer and on one hot row. Each workload reports ops/s, p50/p99 latency and, for
// writes, the ratio API/limit; a summary table is printed at the end of the run.
//
// The API runs with the pool configuration the service ships with (dbtest.Shipped: what
// `serve` uses when no AGENTMEMORY_DB_* variable is set). On PostgreSQL the same load runs
// again, in the same run, with a tuned pool ("postgres-tuned": open and idle connections set
// explicitly to tunedConns) and the summary prints shipped/tuned per workload, so a default
// that cannot hold the load shows as a ratio far below 1 (issue 11 §2).
//
//	go test -run '^$' -bench . -benchtime 2000x ./bench            # both databases
//	go test -run '^$' -bench 'WM/sqlite' -benchtime 2000x ./bench -args -agents 16
//
// Runs are bounded in count (-benchtime Nx) and in time (-maxtime per workload, default 60 s:
// a workload stops early and reports what it did). Loopback only.
package bench

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/api/apitest"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/db/dbtest"
	"github.com/agentmemory/agentmemory/sdk"
)

var (
	agents  = flag.Int("agents", 8, "concurrent agents (and database writers for the limit), 1..64")
	maxTime = flag.Duration("maxtime", 60*time.Second, "upper bound of one workload's duration")
)

// row is one workload's measured figures.
type row struct {
	engine, workload, limit string
	agents, ops, failed     int
	conflicts               int64
	elapsed                 time.Duration
	p50, p99                time.Duration
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
	os.Exit(code)
}

// BenchmarkWM runs every workload on SQLite and on PostgreSQL.
func BenchmarkWM(b *testing.B) {
	if *agents < 1 || *agents > 64 {
		b.Fatalf("-agents must be 1..64, got %d", *agents)
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
	e := apitest.NewWithPool(b, dbEngine, opt)
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := e.Server.HTTPServer(ln.Addr().String())
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	base := "http://" + ln.Addr().String()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConns: 2 * n, MaxIdleConnsPerHost: 2 * n}}

	fields := map[string]any{"count": map[string]any{"type": "integer"}, "step": map[string]any{"type": "string"}}
	for i := range 64 {
		fields[fmt.Sprintf("f%02d", i)] = map[string]any{"type": "integer"}
	}
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
	e.PutDocument("object-types", map[string]any{"types": []any{map[string]any{
		"type": "bench-agent", "ownership": "agent", "fields": fields,
		"agent_state": map[string]any{"scope": "conversation", "max_bytes": 65536}}}})
	states := make([]*sdk.StateHandle, n) // per agent: its own conversation's state
	var hot *sdk.StateHandle              // one state of agent 0 that every goroutine writes
	for i := range n {
		// Every agent has its own key and name; the only agent-owned type is their schema.
		key := e.AgentKey(fmt.Sprintf("bench-agent-%d", i), "bench", "agent_state")
		c, err := sdk.New(sdk.Options{BaseURL: base, Key: key, HTTPClient: hc, AgentVersion: "bench/1"})
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

	run := func(name, limit string, op func(ctx context.Context, agent, i int) (conflicts int, err error)) {
		b.Run(name, func(b *testing.B) {
			r := drive(b, n, op)
			r.engine, r.workload, r.limit = engine, name, limit
			record(r)
			b.ReportMetric(r.rate(), "ops/s")
			b.ReportMetric(float64(r.p50.Microseconds())/1000, "p50_ms")
			b.ReportMetric(float64(r.p99.Microseconds())/1000, "p99_ms")
			if l, ok := results[engine+"/"+limit]; ok && limit != "" {
				b.ReportMetric(r.rate()/l.rate(), "x_limit")
			}
			if r.failed > 0 {
				b.Fatalf("%s: %d of %d operations failed", name, r.failed, r.ops+r.failed)
			}
		})
	}

	run("limit_own_row", "", func(ctx context.Context, w, _ int) (int, error) {
		v := limitVers[w].Load()
		var got int64
		err := e.DB.NewRaw(`UPDATE bench_cas SET version = version + 1 WHERE id = ? AND version = ? RETURNING version`, w, v).Scan(ctx, &got)
		if err != nil {
			return 0, err
		}
		limitVers[w].Store(got)
		return 0, nil
	})
	run("limit_hot_row", "", func(ctx context.Context, _, _ int) (int, error) {
		return hotCAS(ctx, e.DB)
	})
	run("api_merge", "limit_own_row", func(ctx context.Context, a, i int) (int, error) {
		res, err := states[a].Put(ctx, map[string]any{"count": i, "step": "merge"})
		if err == nil && !res.Stored {
			err = fmt.Errorf("not stored: %v", res.Reason)
		}
		if err == nil {
			versions[a].Store(res.Version)
		}
		return 0, err
	})
	run("api_cas", "limit_own_row", func(ctx context.Context, a, i int) (int, error) {
		// Each agent owns its state: the version it last wrote is current, so no conflict.
		res, err := states[a].Put(ctx, map[string]any{"count": i, "step": "cas"}, sdk.CAS(versions[a].Load()))
		if err == nil && !res.Stored {
			err = fmt.Errorf("not stored: %v", res.Reason)
		}
		if err == nil {
			versions[a].Store(res.Version)
		}
		return 0, err
	})
	run("api_read", "", func(ctx context.Context, a, _ int) (int, error) {
		st, err := states[a].Get(ctx)
		if err == nil && st.Version < versions[a].Load() {
			err = fmt.Errorf("read version %d after writing %d", st.Version, versions[a].Load())
		}
		return 0, err
	})
	run("api_merge_hot", "limit_hot_row", func(ctx context.Context, a, i int) (int, error) {
		// Every agent's goroutine writes its own field of one state of agent 0.
		res, err := hot.Put(ctx, map[string]any{fmt.Sprintf("f%02d", a): i})
		if err == nil && !res.Stored {
			err = fmt.Errorf("not stored: %v", res.Reason)
		}
		return 0, err
	})
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
	ctx, cancel := context.WithTimeout(context.Background(), *maxTime)
	defer cancel()
	lat := make([]time.Duration, b.N)
	var next, done, failed, conflicts atomic.Int64
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
				if i >= b.N {
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
				lat[i] = d
				done.Add(1)
			}
		}()
	}
	b.ResetTimer()
	t0 := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	b.StopTimer()
	if e := firstErr.Load(); e != nil {
		b.Logf("first error: %v", e)
	}
	ops := int(done.Load())
	got := make([]time.Duration, 0, ops)
	for _, d := range lat {
		if d > 0 {
			got = append(got, d)
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	pct := func(p float64) time.Duration {
		if len(got) == 0 {
			return 0
		}
		return got[min(len(got)-1, int(p*float64(len(got))))]
	}
	return row{agents: n, ops: ops, failed: int(failed.Load()), conflicts: conflicts.Load(), elapsed: elapsed, p50: pct(0.50), p99: pct(0.99)}
}

func printSummary(w *os.File) {
	mu.Lock()
	defer mu.Unlock()
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tworkload\tagents\tops\tops/s\tp50 ms\tp99 ms\tlost races\tAPI/limit\t")
	for _, k := range order {
		r := results[k]
		ratio := "-"
		if l, ok := results[r.engine+"/"+r.limit]; ok && r.limit != "" {
			ratio = fmt.Sprintf("%.2f of %s", r.rate()/l.rate(), strings.TrimPrefix(r.limit, "limit_"))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t%d\t%s\t\n", r.engine, r.workload, r.agents, r.ops, r.rate(),
			float64(r.p50.Microseconds())/1000, float64(r.p99.Microseconds())/1000, r.conflicts, ratio)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nworking memory over HTTP vs the database's own compare-and-swap (same run, same concurrency)\n%s", sb.String())

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
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t\n", r.workload, r.rate(), tuned.rate(), r.rate()/tuned.rate(),
			float64(r.p99.Microseconds())/1000, float64(tuned.p99.Microseconds())/1000)
	}
	tw.Flush()
	if rows > 0 {
		fmt.Fprintf(w, "\nPostgreSQL API with the shipped pool defaults vs a tuned pool (%d open, %d idle; same run)\n%s", tunedConns, tunedConns, sb.String())
	}
}
