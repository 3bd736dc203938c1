package devserver

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// Request is one request an SDK sent through a Counter: method, path, its If-None-Match and
// the answer's status.
type Request struct {
	Method, Path, IfNoneMatch string
	Status                    int
}

// Counter counts the requests an SDK sends to the server (CTX-4: no request inside the
// freshness period): give the SDK Client as its HTTP client and URL as its base URL. It
// records every request that left the client, with the answer's status, before the answer
// is returned to the SDK. (A counting reverse proxy in front of the binary was tried first:
// httputil.ReverseProxy cut about 2% of the /mcp event-stream answers short, its own reads
// failing with "use of closed network connection", so the count is taken in the transport.)
type Counter struct {
	URL    string
	Client *http.Client
	mu     sync.Mutex
	seen   []Request
}

// countingTransport records each round trip on its Counter.
type countingTransport struct {
	c    *Counter
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	seen := Request{Method: r.Method, Path: r.URL.Path, IfNoneMatch: r.Header.Get("If-None-Match")}
	resp, err := t.next.RoundTrip(r)
	if resp != nil {
		seen.Status = resp.StatusCode
	}
	t.c.mu.Lock()
	t.c.seen = append(t.c.seen, seen)
	t.c.mu.Unlock()
	return resp, err
}

// Counter returns a new Counter of requests to s; its client's idle connections are closed
// when t ends.
func (s *Server) Counter(t testing.TB) *Counter {
	t.Helper()
	tr := &http.Transport{}
	c := &Counter{URL: s.URL}
	c.Client = &http.Client{Timeout: 30 * time.Second, Transport: countingTransport{c: c, next: tr}}
	t.Cleanup(tr.CloseIdleConnections)
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
