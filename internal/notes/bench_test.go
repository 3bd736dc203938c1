package notes_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/apptest"
)

// report adds p50/p99 latency (ms) and requests per second to b.
func report(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
}

func benchEnv(b *testing.B, engine string) (*apptest.Env, string) {
	e := apptest.New(b, engine)
	e.PutDocument("features", map[string]any{"agent_memory": map[string]any{"enabled": true, "max_notes_per_source": 100000}})
	e.AgentKey("bench-bot", "acme", "agent_memory")
	return e, e.PersonKey("loader", "integration")
}

// BenchmarkNoteWrite: POST /v1/agent-memory/notes through the whole gate (local layer, the
// space's known subjects), receipt and outbox event, on each database.
func BenchmarkNoteWrite(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			e, key := benchEnv(b, engine)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				body := map[string]any{"kind": "procedure", "source_id": "bench-bot", "title": fmt.Sprintf("Refund step %d", i),
					"body": fmt.Sprintf("Validate the purchase with the order id, then offer a gift card or a paper check. Variant %d.", i),
					"tags": []string{"refund", "orders"}}
				t0 := time.Now()
				r := e.Do("POST", "/v1/agent-memory/notes", key, body)
				lat = append(lat, time.Since(t0))
				if r.Status != http.StatusCreated {
					b.Fatalf("got %d, want 201: %s", r.Status, r.Body)
				}
			}
			report(b, lat, time.Since(start))
		})
	}
}

// BenchmarkBlockRead: GET /v1/agent-memory/block over 40 notes, with and without a matching
// If-None-Match (304), on each database. Each read appends an agent_memory receipt.
func BenchmarkBlockRead(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, cached := range []bool{false, true} {
			name := engine + "/full"
			if cached {
				name = engine + "/if-none-match"
			}
			b.Run(name, func(b *testing.B) {
				e, key := benchEnv(b, engine)
				for i := 0; i < 40; i++ {
					e.MustDo(http.StatusCreated, "POST", "/v1/agent-memory/notes", key, map[string]any{
						"kind": "procedure", "source_id": "bench-bot", "title": fmt.Sprintf("Step %d", i), "visibility": "vendor",
						"body": "Pull up the account, validate the purchase, record the reason and enter the details.",
						"tags": []string{fmt.Sprintf("t%d", i%5)}})
				}
				path := "/v1/agent-memory/block?max_tokens=1000&tags=t1&source_id=bench-bot"
				first := e.MustDo(http.StatusOK, "GET", path, key, nil)
				var headers []string
				want := http.StatusOK
				if cached {
					headers, want = []string{"If-None-Match", first.Header.Get("ETag")}, http.StatusNotModified
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					r := e.Do("GET", path, key, nil, headers...)
					lat = append(lat, time.Since(t0))
					if r.Status != want {
						b.Fatalf("got %d, want %d", r.Status, want)
					}
				}
				report(b, lat, time.Since(start))
			})
		}
	}
}

// BenchmarkBlockDuringWrites (issue 27): GET /v1/agent-memory/block by an agent whose source
// holds blockWriteNotes notes and keeps receiving more, in interleaved rounds of
// blockWriteRound reads: "quiet" rounds, where nothing changes between reads, and "writing"
// rounds, where a note of the same source is written (untimed) before each read, so every
// timed read is the first after a change of its block (what a read sees during a sustained
// write burst), on each database. p50/p99 per kind of round.
func BenchmarkBlockDuringWrites(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			e, key := benchEnv(b, engine)
			agent := e.AgentKey("bench-bot", "acme", "agent_memory")
			n := 0
			writeNote := func() {
				n++
				r := e.Do("POST", "/v1/agent-memory/notes", key, map[string]any{
					"kind": "procedure", "source_id": "bench-bot", "title": fmt.Sprintf("Step %d", n), "visibility": "vendor",
					"body": fmt.Sprintf("Pull up the account, validate purchase %d, record the reason and enter the details.", n),
					"tags": []string{fmt.Sprintf("t%d", n%5)}})
				if r.Status != http.StatusCreated {
					b.Fatalf("write: got %d, want 201: %s", r.Status, r.Body)
				}
			}
			for range blockWriteNotes {
				writeNote()
			}
			path := "/v1/agent-memory/block?max_tokens=2000&tags=t1"
			e.MustDo(http.StatusOK, "GET", path, agent, nil)
			lat := map[bool][]time.Duration{}
			total := max(b.N, 2*blockWriteRound) // at least one round of each kind
			b.ResetTimer()
			for done := 0; done < total; {
				for _, writing := range []bool{false, true} {
					for i := 0; i < blockWriteRound && done < total; i, done = i+1, done+1 {
						if writing {
							b.StopTimer()
							writeNote()
							b.StartTimer()
						}
						t0 := time.Now()
						r := e.Do("GET", path, agent, nil)
						lat[writing] = append(lat[writing], time.Since(t0))
						if r.Status != http.StatusOK {
							b.Fatalf("read: got %d, want 200: %s", r.Status, r.Body)
						}
					}
				}
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			for _, writing := range []bool{false, true} {
				l := lat[writing]
				slices.Sort(l)
				name := map[bool]string{false: "quiet", true: "after_write"}[writing]
				b.ReportMetric(ms(l[len(l)/2]), name+"_p50_ms")
				b.ReportMetric(ms(l[len(l)*99/100]), name+"_p99_ms")
			}
		})
	}
}

// The shape of BenchmarkBlockDuringWrites: 370 notes in the reader's source at the start (the
// attacker's figure), rounds of 50 reads.
const (
	blockWriteNotes = 370
	blockWriteRound = 50
)
