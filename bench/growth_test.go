package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/uptrace/bun"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentmemory/agentmemory/api"
	"github.com/agentmemory/agentmemory/app"
	"github.com/agentmemory/agentmemory/apptest"
	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/compliance"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/internal/turns"
	"github.com/agentmemory/agentmemory/sdk"
)

// Sizes BenchmarkGrowth measures at (issue 16, "How cost grows"), each list increasing; the
// flags below cap the largest for a quick run.
var (
	growthStates   = []int{1000, 10000, 100000} // stored states in the space
	growthBodies   = []int{200, 4096, 16384}    // bytes of one state's canonical body
	growthNotes    = []int{10, 100, 500}        // notes in the reader's block source
	growthReceipts = []int{1000, 10000, 100000} // receipts in the space's chain

	growthMaxStates   = flag.Int("growth-max-states", 100000, "largest stored-state count BenchmarkGrowth grows to")
	growthMaxReceipts = flag.Int("growth-max-receipts", 100000, "largest receipt chain BenchmarkGrowth verifies")
)

// verifyRuns is how many times each chain length is verified (the figure is their median).
const verifyRuns = 3

// growthRow is one figure of one table: an engine's workload at one size.
type growthRow struct {
	table, engine string
	size          int
	r             row           // a driven workload (merge writes, block reads)
	once          time.Duration // a single timed operation (verify), when r is empty
}

var (
	grMu        sync.Mutex
	growthRows  = map[string]growthRow{} // by table/engine/size: the last (largest b.N) run
	growthOrder []string
)

func recordGrowth(g growthRow) {
	grMu.Lock()
	defer grMu.Unlock()
	k := fmt.Sprintf("%s/%s/%d", g.table, g.engine, g.size)
	if _, ok := growthRows[k]; !ok {
		growthOrder = append(growthOrder, k)
	}
	growthRows[k] = g
}

// BenchmarkGrowth measures how the cost of the API grows with the data it holds (issue 16,
// "How cost grows"), on SQLite and PostgreSQL, through the real API on a loopback server:
//
//   - states_N: merge writes (2 small fields, each of -agents agents on its own
//     conversation, written once before the measure so every write is an update) with N
//     states stored in the space. The states beyond the agents' own are
//     written through the state service in process (state.Service.Write: sealed and stored
//     exactly as the API stores them), from a few goroutines, not over HTTP.
//   - body_B: the same merge writes when each agent's state holds B bytes (its canonical
//     body: a pad field grown to the size, rewritten by every write).
//   - block_200_N, block_304_N: GET /v1/agent-memory/block without and with a matching
//     If-None-Match when the reader's source holds N notes (notes written through the API).
//   - verify_N: GET /v1/receipts/verify when the space's chain holds N receipts, the median
//     of verifyRuns calls; the chain grows through receipts.Append in transactions of 1000
//     (what every request records), before any block read adds to it; each size is checked
//     against verify's count. The figure is whatever the verify route does.
//   - erasure: one subject with erasureStates states and erasureTurns turns, erased through
//     POST /v1/erasures and ErasureWorkflow on a worker of a Temporal dev server
//     (<repo>/bin/temporal; skipped, with a log line, without it), timed once per engine.
//
// Each driven workload runs b.N operations (bounded by -maxtime); the tables print ops/s and
// p50/p99 per size, and each size's cost relative to the smallest.
//
//	go test -run '^$' -bench Growth -benchtime 1000x -timeout 60m ./bench
//	go test -run '^$' -bench Growth -benchtime 500x ./bench -args -growth-max-states 10000 -growth-max-receipts 10000
func BenchmarkGrowth(b *testing.B) {
	tc := devTemporal(b)
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) { benchGrowth(b, engine, tc) })
	}
}

// devTemporal starts a Temporal dev server from <repo>/bin/temporal (`make temporal`) for the
// erasure figure and returns a client of it; nil (the erasure figure is skipped, with a log
// line) when the CLI is missing.
func devTemporal(b *testing.B) client.Client {
	cli, err := filepath.Abs(filepath.Join("..", "bin", "temporal"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(cli); err != nil {
		b.Logf("no Temporal CLI at %s (make temporal): the erasure figure is skipped", cli)
		return nil
	}
	srv, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{
		ExistingPath: cli, LogLevel: "error", Stdout: io.Discard, Stderr: io.Discard,
		ClientOptions: &client.Options{Logger: app.TemporalLogger(slog.New(slog.DiscardHandler))},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Stop() })
	return srv.Client()
}

func benchGrowth(b *testing.B, engine string, tc client.Client) {
	ctx := context.Background()
	n := *agents
	taskQueue := "growth-" + engine
	e := apptest.New(b, engine, func(d *api.Deps) {
		if tc != nil {
			d.Workflows, d.TaskQueue = tc, taskQueue
		}
	})
	base := serve(b, e.Server.HTTPServer)
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConns: 2 * n, MaxIdleConnsPerHost: 2 * n}}

	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true},
		"agent_memory": map[string]any{"enabled": true, "max_notes_per_source": 100000}})
	e.PutDocument("object-types", map[string]any{"types": []any{map[string]any{
		"type": "bench-agent", "ownership": "agent",
		"fields": map[string]any{"count": map[string]any{"type": "integer"}, "step": map[string]any{"type": "string"},
			"pad": map[string]any{"type": "string"}},
		"agent_state": map[string]any{"scope": "conversation", "max_bytes": 65536}}}})
	clients := make([]*sdk.Client, n)
	for i := range n {
		key := e.AgentKey(fmt.Sprintf("bench-agent-%d", i), "bench", "agent_state")
		c, err := sdk.New(sdk.Options{BaseURL: base, Key: key, HTTPClient: hc, AgentVersion: "bench/1"})
		if err != nil {
			b.Fatal(err)
		}
		clients[i] = c
	}
	merge := func(scope string, body func(i int) map[string]any) func(ctx context.Context, a, i int) (int, error) {
		hs := make([]*sdk.StateHandle, n)
		for a := range n {
			hs[a] = clients[a].AgentState(sdk.Conversation(fmt.Sprintf("%s-%d", scope, a)))
		}
		// Every agent's state exists before the measure: the figure is of updates, not of
		// first writes (inserts).
		for a := range n {
			if res, err := hs[a].Put(context.Background(), body(0)); err != nil || !res.Stored {
				b.Fatalf("first write of agent %d: %v %v", a, res.Reason, err)
			}
		}
		return func(ctx context.Context, a, i int) (int, error) {
			res, err := hs[a].Put(ctx, body(i))
			if err == nil && !res.Stored {
				err = fmt.Errorf("not stored: %v", res.Reason)
			}
			return 0, err
		}
	}
	small := func(i int) map[string]any { return map[string]any{"count": i, "step": "merge"} }
	measure := func(table, name string, size, workers int, op func(ctx context.Context, a, i int) (int, error)) {
		b.Run(fmt.Sprintf("%s_%d", name, size), func(b *testing.B) {
			r := drive(b, workers, op)
			r.engine, r.workload = engine, name
			b.ReportMetric(r.rate(), "ops/s")
			b.ReportMetric(float64(r.p99.Microseconds())/1000, "p99_ms")
			if r.failed > 0 {
				b.Fatalf("%s_%d: %d of %d operations failed", name, size, r.failed, r.ops+r.failed)
			}
			recordGrowth(growthRow{table: table, engine: engine, size: size, r: r})
		})
	}

	// Receipt chain verification as the chain grows: first, while the chain holds only the
	// setup's receipts (every block read below appends one).
	for _, size := range growthReceipts {
		if size > *growthMaxReceipts {
			break
		}
		growChain(b, e, size)
		b.Run(fmt.Sprintf("verify_%d", size), func(b *testing.B) {
			runs := verifyRuns
			if b.N == 1 {
				runs = 1 // the benchmark's probe run: the recorded figure is the next run's
			}
			times := make([]time.Duration, runs)
			for i := range times {
				t0 := time.Now()
				data, _, err := do(ctx, hc, "GET", base+"/v1/receipts/verify", e.AdminKey, "", "", http.StatusOK)
				times[i] = time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				var v struct {
					OK    bool  `json:"ok"`
					Count int64 `json:"count"`
				}
				if err := json.Unmarshal(data, &v); err != nil || !v.OK || v.Count != int64(size) {
					b.Fatalf("verify at %d receipts: %s (%v)", size, data, err)
				}
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[runs/2].Microseconds())/1000, "verify_ms")
			recordGrowth(growthRow{table: "verify", engine: engine, size: size, once: times[runs/2]})
		})
	}

	// Write rate as the number of stored states grows.
	filler := e.AgentKey("bench-filler", "bench", "agent_state")
	p, err := auth.Authenticate(ctx, e.DB, filler)
	if err != nil {
		b.Fatal(err)
	}
	stored := n // the agents' own states, written by the first run of each size
	for _, size := range growthStates {
		if size > *growthMaxStates {
			break
		}
		fillStates(b, e.App.State, p, stored, size-n)
		stored = size
		measure("states", "states", size, n, merge("grow-count", small))
	}

	// Write rate as one state grows: every write rewrites the whole body.
	for _, size := range growthBodies {
		pad := strings.Repeat("x", max(0, size-len(`{"count":1000000,"pad":"","step":"merge"}`)))
		measure("body", "body", size, n, merge(fmt.Sprintf("grow-body-%d", size), func(i int) map[string]any {
			return map[string]any{"count": 1000000 + i, "step": "merge", "pad": pad}
		}))
	}

	// The prompt block as the reader's notes grow.
	reader := e.AgentKey("bench-bot", "bench", "agent_memory")
	loader := e.PersonKey("loader", "integration")
	blockPath := base + "/v1/agent-memory/block?max_tokens=1000&tags=t1"
	notes := 0
	for _, size := range growthNotes {
		for ; notes < size; notes++ {
			e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", loader, map[string]any{
				"kind": "procedure", "source_id": "bench-bot", "title": fmt.Sprintf("Step %d", notes), "visibility": "vendor",
				"body": fmt.Sprintf("Pull up the account, validate the purchase, record the reason and enter the details (variant %d).", notes),
				"tags": []string{fmt.Sprintf("t%d", notes%5)}})
		}
		etag, err := getETag(ctx, hc, blockPath, reader)
		if err != nil {
			b.Fatal(err)
		}
		measure("block_200", "block_200", size, n, func(ctx context.Context, _, _ int) (int, error) {
			return 0, get(ctx, hc, blockPath, reader, "", http.StatusOK)
		})
		measure("block_304", "block_304", size, n, func(ctx context.Context, _, _ int) (int, error) {
			return 0, get(ctx, hc, blockPath, reader, etag, http.StatusNotModified)
		})
	}

	if tc != nil {
		w, err := e.App.NewWorker(tc, app.WorkerOptions{TaskQueue: taskQueue, NoReconcile: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		eraseOnce(b, e, base, hc, engine)
	}
}

// Erasure figure: one subject's states and turns.
const (
	erasureStates = 1000  // the subject's working-memory states, one conversation each
	erasureTurns  = 10000 // the subject's turns, in erasureConvs linked conversations
	erasureConvs  = 10
)

// eraseOnce stores erasureStates states and erasureTurns turns of one subject (through the
// state and turns services, sealed under the subject's key as the API stores them), then
// times one erasure through the API: POST /v1/erasures, ErasureWorkflow on the worker, until
// GET /v1/erasures/{id} answers completed. The space still holds every state, note and
// receipt the figures before it wrote. It is one operation per engine, whatever b.N.
func eraseOnce(b *testing.B, e *apptest.Env, base string, hc *http.Client, engine string) {
	ctx := context.Background()
	const subject = "email:ana@example.com"
	shop := e.AgentKey("bench-shop", "bench", "agent_state")
	p, err := auth.Authenticate(ctx, e.DB, shop)
	if err != nil {
		b.Fatal(err)
	}
	for i := range erasureStates {
		res, err := e.App.State.Write(ctx, p, "bench/1", state.WriteRequest{
			Scope: &state.Scope{Kind: "conversation", ID: fmt.Sprintf("erase-%d", i)}, Subject: subject,
			Body: json.RawMessage(fmt.Sprintf(`{"count":%d,"step":"cart"}`, i))})
		if err == nil && !res.Stored {
			err = fmt.Errorf("state %d not stored: %v", i, res.Reason)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	integ, err := auth.Authenticate(ctx, e.DB, e.PersonKey("bench-integration", "integration"))
	if err != nil {
		b.Fatal(err)
	}
	for c := range erasureConvs {
		conv := turns.Scope{ConversationID: fmt.Sprintf("erase-turns-%d", c)}
		if _, err := e.App.Turns.Link(ctx, integ, turns.LinkRequest{Scope: conv, Subject: subject, Status: turns.LinkConfirmed}); err != nil {
			b.Fatal(err)
		}
		for done := 0; done < erasureTurns/erasureConvs; done += turns.MaxBatch {
			batch := make([]turns.Input, min(turns.MaxBatch, erasureTurns/erasureConvs-done))
			for i := range batch {
				batch[i] = turns.Input{Scope: conv, Speaker: turns.SpeakerCustomer,
					Text: fmt.Sprintf("I would like to return order %d, it arrived damaged.", done+i)}
			}
			if _, err := e.App.Turns.Write(ctx, integ, batch, true); err != nil {
				b.Fatal(err)
			}
		}
	}
	officer := e.PersonKey("bench-officer", "compliance")
	{
		t0 := time.Now()
		data, _, err := do(ctx, hc, "POST", base+"/v1/erasures", officer, "", `{"subject":"`+subject+`"}`, http.StatusAccepted)
		if err != nil {
			b.Fatal(err)
		}
		var started struct {
			ID string `json:"erasure_id"`
		}
		if err := json.Unmarshal(data, &started); err != nil {
			b.Fatal(err)
		}
		for {
			data, _, err := do(ctx, hc, "GET", base+"/v1/erasures/"+started.ID, officer, "", "", http.StatusOK)
			if err != nil {
				b.Fatal(err)
			}
			var v struct {
				Status string `json:"status"`
			}
			if err := json.Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
			if v.Status == compliance.StatusFailed {
				b.Fatalf("erasure failed: %s", data)
			}
			if v.Status == compliance.StatusCompleted {
				break
			}
			if time.Since(t0) > 10*time.Minute {
				b.Fatalf("erasure not completed in 10 minutes: %s", data)
			}
			time.Sleep(20 * time.Millisecond)
		}
		took := time.Since(t0)
		// The subject's states are gone for their agent (WM-13).
		data, _, err = do(ctx, hc, "POST", base+"/v1/agent-state/read", shop, "", `{"scope":{"kind":"conversation","id":"erase-0"}}`, http.StatusOK)
		if err != nil || !strings.Contains(string(data), `"version":0`) {
			b.Fatalf("after the erasure the subject's state reads %s (%v), want version 0", data, err)
		}
		b.Logf("%s: one subject's erasure (%d states, %d turns): %v", engine, erasureStates, erasureTurns, took)
		recordGrowth(growthRow{table: "erasure", engine: engine, size: erasureStates, once: took})
	}
}

// fillStates writes count states of p (conversations fill-from .. fill-(from+count-1)) through
// the state service, from a few goroutines: real states, sealed and stored as the API stores
// them, without HTTP.
func fillStates(b *testing.B, s *state.Service, p auth.Principal, from, count int) {
	const workers = 4
	var next atomic.Int64
	next.Store(int64(from))
	end := int64(from + count)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= end || firstErr.Load() != nil {
					return
				}
				res, err := s.Write(context.Background(), p, "bench/1", state.WriteRequest{
					Scope: &state.Scope{Kind: "conversation", ID: fmt.Sprintf("fill-%d", i)},
					Body:  json.RawMessage(fmt.Sprintf(`{"count":%d,"step":"fill"}`, i))})
				if err == nil && !res.Stored {
					err = fmt.Errorf("fill state %d not stored: %v", i, res.Reason)
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		b.Fatal(err)
	}
}

// growChain appends receipts to e's space until its chain holds size, in transactions of
// 1000 appends.
func growChain(b *testing.B, e *apptest.Env, size int) {
	ctx := context.Background()
	for {
		head, err := receipts.CurrentHead(ctx, e.DB, e.SpaceID)
		if err != nil {
			b.Fatal(err)
		}
		left := size - int(head.Seq)
		if left <= 0 {
			return
		}
		err = e.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for i := range min(left, 1000) {
				_, err := receipts.Append(ctx, tx, e.SpaceID, receipts.Entry{Kind: receipts.KindAgentMemory, Action: "bench.fill",
					ObjectIDs: []string{fmt.Sprintf("bench-%d", int(head.Seq)+i)}, Detail: map[string]any{"n": 1}}, time.Now())
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// printGrowth prints BenchmarkGrowth's tables: per engine and size, the rate and latency (or
// the single operation's time), and the cost per operation relative to the table's smallest
// size.
func printGrowth(w *os.File) {
	grMu.Lock()
	defer grMu.Unlock()
	if len(growthRows) == 0 {
		return
	}
	titles := []struct{ table, title, size string }{
		{"states", "merge write (32 agents, own conversation) as the stored states grow", "states"},
		{"body", "merge write (32 agents) as one state grows", "body bytes"},
		{"block_200", "prompt block read, 200 (whole block), as the notes grow", "notes"},
		{"block_304", "prompt block read, 304 (If-None-Match), as the notes grow", "notes"},
		{"verify", "GET /v1/receipts/verify as the chain grows (median of 3)", "receipts"},
		{"erasure", fmt.Sprintf("one subject's erasure (%d states, %d turns), POST /v1/erasures to completed, once", erasureStates, erasureTurns), "states"},
	}
	for _, t := range titles {
		var sb strings.Builder
		tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
		if t.table == "erasure" {
			fmt.Fprintf(tw, "engine\t%s\terasure ms\t\n", t.size)
		} else if t.table == "verify" {
			fmt.Fprintf(tw, "engine\t%s\tverify ms\tus per receipt\tx smallest\t\n", t.size)
		} else {
			fmt.Fprintf(tw, "engine\t%s\tops\tops/s\tp50 ms\tp99 ms\tcost x smallest\t\n", t.size)
		}
		rows := 0
		first := map[string]growthRow{}
		for _, k := range growthOrder {
			g := growthRows[k]
			if g.table != t.table {
				continue
			}
			rows++
			f, ok := first[g.engine]
			if !ok {
				first[g.engine], f = g, g
			}
			if t.table == "erasure" {
				fmt.Fprintf(tw, "%s\t%d\t%.0f\t\n", g.engine, g.size, float64(g.once.Microseconds())/1000)
				continue
			}
			if t.table == "verify" {
				fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%.2f\t\n", g.engine, g.size, float64(g.once.Microseconds())/1000,
					float64(g.once.Microseconds())/float64(g.size), float64(g.once)/float64(f.once))
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t\n", g.engine, g.size, g.r.ops, g.r.rate(),
				float64(g.r.p50.Microseconds())/1000, float64(g.r.p99.Microseconds())/1000, f.r.rate()/g.r.rate())
		}
		tw.Flush()
		if rows > 0 {
			fmt.Fprintf(w, "\nhow cost grows: %s\n%s", t.title, sb.String())
		}
	}
}
