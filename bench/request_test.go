package bench

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmemory/agentmemory/apptest"
)

// BenchmarkRequest measures the CPU and allocations of one working-memory request through
// each handler, in process and one at a time (no network, no load generator, no
// concurrency): the API's merge, cas and read against the HTTP floor's write and read, on
// SQLite and PostgreSQL. Unlike BenchmarkWM's rates on a shared machine, its cpu-ns/op (the
// process's CPU time per request), B/op and allocs/op repeat from run to run, so a change to
// the request path shows in them (issue 16):
//
//	go test -run '^$' -bench Request -benchmem -benchtime 2000x ./bench
//	go test -run '^$' -bench 'Request/sqlite/api_merge' -benchtime 5000x -cpuprofile /tmp/req.prof ./bench
func BenchmarkRequest(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) { benchRequests(b, engine) })
	}
}

func benchRequests(b *testing.B, engine string) {
	e := apptest.New(b, engine)
	fields := map[string]any{"count": map[string]any{"type": "integer"}, "step": map[string]any{"type": "string"}}
	e.PutDocument("features", map[string]any{"agent_state": map[string]any{"enabled": true}})
	e.PutDocument("object-types", map[string]any{"types": []any{map[string]any{
		"type": "bench-agent", "ownership": "agent", "fields": fields,
		"agent_state": map[string]any{"scope": "conversation", "max_bytes": 65536}}}})
	key := e.AgentKey("bench-agent-0", "bench", "agent_state")
	fl := newFloor(b, e.DB, []string{key})
	scope := `{"kind":"conversation","id":"bench-0"}`
	e.MustDo(http.StatusOK, "PUT", "/v1/agent-state", key, `{"scope":`+scope+`,"mode":"merge_by_key","body":{"count":0,"step":"init"}}`)

	var version, floorVersion int64 = 1, 0
	w := &sink{}
	// one sends a request to h and returns the version its JSON answer names.
	one := func(h http.Handler, method, path, body string) int64 {
		req, err := http.NewRequest(method, "http://bench"+path, strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Agent-Version", "bench/1")
		w.reset()
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, path, w.status, w.body.Bytes())
		}
		return answerVersion(b, w.body.Bytes())
	}
	cases := []struct {
		name string
		op   func(i int)
	}{
		{"floor_write", func(i int) {
			floorVersion = one(fl, "POST", "/floor/write", fmt.Sprintf(`{"version":%d,"body":{"count":%d,"step":"merge"}}`, floorVersion, i))
		}},
		{"floor_read", func(int) { one(fl, "POST", "/floor/read", `{}`) }},
		{"api_merge", func(i int) {
			version = one(e.Server, "PUT", "/v1/agent-state", fmt.Sprintf(`{"scope":%s,"mode":"merge_by_key","body":{"count":%d,"step":"merge"}}`, scope, i))
		}},
		{"api_cas", func(i int) {
			version = one(e.Server, "PUT", "/v1/agent-state", fmt.Sprintf(`{"scope":%s,"mode":"cas","if_version":%d,"body":{"count":%d,"step":"cas"}}`, scope, version, i))
		}},
		{"api_read", func(int) {
			if v := one(e.Server, "POST", "/v1/agent-state/read", `{"scope":`+scope+`}`); v != version {
				b.Fatalf("read version %d after writing %d", v, version)
			}
		}},
	}
	for _, c := range cases {
		runWithCPU(b, c.name, c.op)
	}
}

// cpuTime is the CPU time (user and system) this process used so far: with one request at a
// time it is the handler's, the database driver's and the collector's, and unlike ns/op it
// hardly moves when other processes share the machine. PostgreSQL's own is not in it.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// answerVersion is the "version" member of a JSON answer, read without a decoder (the
// harness's own cost stays out of the handlers' allocations as far as it can).
func answerVersion(b *testing.B, body []byte) int64 {
	_, rest, ok := bytes.Cut(body, []byte(`"version":`))
	if !ok {
		b.Fatalf("no version in %s", body)
	}
	var v int64
	for _, c := range rest {
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int64(c-'0')
	}
	return v
}

// sink is a ResponseWriter that keeps the status and body of the last answer.
type sink struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (s *sink) reset() {
	s.header, s.status = http.Header{}, 0
	s.body.Reset()
}

func (s *sink) Header() http.Header { return s.header }

func (s *sink) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}

func (s *sink) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.body.Write(p)
}

// runWithCPU runs op b.N times (op(i) for i in 0..b.N-1) as the sub-benchmark name, reporting
// allocations and this process's CPU time per op (cpu-ns/op, cpuTime).
func runWithCPU(b *testing.B, name string, op func(int)) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime(b)
		for i := range b.N {
			op(i)
		}
		b.ReportMetric(float64((cpuTime(b)-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
}
