package devserver

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// Request is one request that passed a Counter: method, path, its If-None-Match and the
// answer's status.
type Request struct {
	Method, Path, IfNoneMatch string
	Status                    int
}

// Counter is a reverse proxy in front of the server that records every request it forwards,
// so a test can count what an SDK sent (CTX-4: no request inside the freshness period).
type Counter struct {
	URL  string
	mu   sync.Mutex
	seen []Request
}

// statusRecorder records its request with the status the proxy writes, before the status
// reaches the client: a caller that got its answer always finds its request recorded.
type statusRecorder struct {
	http.ResponseWriter
	record func(status int)
	done   bool
}

func (r *statusRecorder) WriteHeader(status int) {
	if !r.done {
		r.done = true
		r.record(status)
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if !r.done {
		r.WriteHeader(http.StatusOK)
	}
	return r.ResponseWriter.Write(b)
}

// Counter starts a counting proxy to s, closed when t ends.
func (s *Server) Counter(t testing.TB) *Counter {
	t.Helper()
	target, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	c := &Counter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := Request{Method: r.Method, Path: r.URL.Path, IfNoneMatch: r.Header.Get("If-None-Match")}
		rec := &statusRecorder{ResponseWriter: w, record: func(status int) {
			seen.Status = status
			c.mu.Lock()
			c.seen = append(c.seen, seen)
			c.mu.Unlock()
		}}
		// The server's DNS-rebinding protection on /mcp wants a loopback Host: keep the target's.
		r.Host = target.Host
		proxy.ServeHTTP(rec, r)
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// Take returns the requests recorded since the last Take and forgets them.
func (c *Counter) Take() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.seen
	c.seen = nil
	return out
}
