// Package sdk is the Go client agents import: working memory with read-your-writes and an
// offline queue (WM-14), agent notes (remember, the prompt block with revalidation, search),
// and knowledge retrieval with provenance (Retrieve, KN-4).
//
//	c, _ := sdk.New(sdk.Options{BaseURL: "http://127.0.0.1:8080", Key: os.Getenv("AGENTMEMORY_KEY")})
//	st := c.AgentState(sdk.Conversation("c-1"))
//	res, err := st.Put(ctx, map[string]any{"step": "sizes"})       // merge_by_key
//	cur, err := st.Get(ctx)                                          // never older than what this client saw
//	res, err = st.Put(ctx, map[string]any{"step": "checkout"}, sdk.CAS(cur.Version))
//	res, err = st.Put(ctx, map[string]any{"offer": sdk.Delete})
package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a Client.
type Options struct {
	// BaseURL of the service, e.g. "http://127.0.0.1:8080".
	BaseURL string
	// Key is the agent's (or an integration person's) API key.
	Key string
	// Agent names the agent whose state is written; needed only with a person key.
	Agent string
	// AgentVersion is sent as the Agent-Version header (provenance, MS-5).
	AgentVersion string
	// HTTPClient defaults to a client with a 10 s timeout.
	HTTPClient *http.Client
	// QueueFile, when set, keeps writes queued while the service is unreachable in this file
	// (JSON) so that they survive a restart of the agent's process.
	QueueFile string
	// Replay starts every state empty and keeps writes local: nothing is sent to the service.
	Replay bool
	// MaxRetries bounds the retries of an answer 429 or 5xx (default 3; negative: none). Each
	// waits the answer's Retry-After, else an exponential backoff with jitter from RetryBackoff.
	MaxRetries int
	// MaxRetryWait: an answer asking to wait longer than this (default 30 s) is returned at
	// once, with its RetryAfter, instead of being retried.
	MaxRetryWait time.Duration
	// RetryBackoff is the first backoff without Retry-After (default 250 ms; doubles per retry).
	RetryBackoff time.Duration
	// CacheEntries bounds the block and context answers kept per call shape (CTX-4; default
	// DefaultCacheEntries, least recently used dropped first; negative: keep none, so every
	// call is a full request).
	CacheEntries int
	// Now is the clock of the cache's freshness periods (default time.Now); tests inject one.
	Now func() time.Time
}

// Client talks to agentmemory. It is safe for concurrent use.
type Client struct {
	opt  Options
	http *http.Client

	mu        sync.Mutex
	seen      map[stateKey]State // the newest state (or version) this client wrote or read
	queue     []queuedWrite
	conflicts []Conflict
	local     map[stateKey]State // replay mode
	cache     *answerCache       // block and context answers per call shape (CTX-4)
}

// New returns a Client. A queue file that exists is loaded and its writes resent on the next
// call that reaches the service (or on Flush).
func New(opt Options) (*Client, error) {
	if !opt.Replay && opt.BaseURL == "" {
		return nil, errors.New("sdk: BaseURL is required")
	}
	opt.BaseURL = strings.TrimRight(opt.BaseURL, "/")
	if opt.MaxRetries == 0 {
		opt.MaxRetries = 3
	}
	if opt.MaxRetryWait == 0 {
		opt.MaxRetryWait = 30 * time.Second
	}
	if opt.RetryBackoff == 0 {
		opt.RetryBackoff = 250 * time.Millisecond
	}
	hc := opt.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	if opt.CacheEntries == 0 {
		opt.CacheEntries = DefaultCacheEntries
	}
	c := &Client{opt: opt, http: hc, seen: map[stateKey]State{}, local: map[stateKey]State{}, cache: newAnswerCache(opt.CacheEntries)}
	if err := c.loadQueue(); err != nil {
		return nil, err
	}
	return c, nil
}

// Error is an answer of the service that is not a success. Use errors.Is with ErrConflict,
// ErrPersonalData, ErrRateLimited, ErrUnavailable, or read the fields.
type Error struct {
	Status     int
	Code       string
	Message    string
	RetryAfter time.Duration // 429 and 503
	Kinds      []string      // 422 personal_data_in_agent_memory: the kinds found, never values
	Classes    []string      // 422 instruction_in_agent_memory: the classes found (GATE-3)
	Version    int64         // 412: the state's current version
}

func (e *Error) Error() string {
	return fmt.Sprintf("agentmemory: %d %s: %s", e.Status, e.Code, e.Message)
}

// Sentinels matched by errors.Is against an *Error's status.
var (
	ErrConflict     = errors.New("agentmemory: version conflict (412)")
	ErrPersonalData = errors.New("agentmemory: personal data refused (422)")
	ErrRateLimited  = errors.New("agentmemory: rate limited (429)")
	ErrUnavailable  = errors.New("agentmemory: unavailable (503)")
)

// Is maps an *Error to the sentinel of its status.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrConflict:
		return e.Status == http.StatusPreconditionFailed
	case ErrPersonalData:
		return e.Status == http.StatusUnprocessableEntity
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests
	case ErrUnavailable:
		return e.Status == http.StatusServiceUnavailable
	case ErrLeaseLost:
		return e.Status == http.StatusConflict && e.Code == "lease_lost"
	case ErrLeaseHeld:
		return e.Status == http.StatusConflict && e.Code == "lease_held"
	}
	return false
}

// errUnreachable marks a transport failure: the request may not have reached the service.
type errUnreachable struct{ err error }

func (e errUnreachable) Error() string { return "agentmemory: unreachable: " + e.err.Error() }
func (e errUnreachable) Unwrap() error { return e.err }

// retryStatuses are the answers retried with backoff (or their Retry-After).
func retryStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500 && status <= 599
}

// do sends a JSON request and decodes a 2xx JSON answer into out. headers are name, value
// pairs. It returns the response headers and status. An answer 429 or 5xx is retried up to
// Options.MaxRetries times, waiting its Retry-After or an exponential backoff with full
// jitter; one asking to wait longer than Options.MaxRetryWait is returned at once. Transport
// failures are not retried (a write is queued instead).
func (c *Client) do(ctx context.Context, method, path string, body, out any, headers ...string) (http.Header, int, error) {
	var data []byte
	if pre, ok := body.(encoded); ok {
		data = pre
	} else if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, 0, fmt.Errorf("sdk: encode: %w", err)
		}
	}
	for attempt := 0; ; attempt++ {
		h, status, err := c.doOnce(ctx, method, path, data, body != nil, out, headers)
		var ae *Error
		if err == nil || !errors.As(err, &ae) || !retryStatus(ae.Status) || attempt >= c.opt.MaxRetries {
			return h, status, err
		}
		wait := ae.RetryAfter
		if wait == 0 {
			wait = c.opt.RetryBackoff << attempt
			wait = wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1))
		}
		if wait > c.opt.MaxRetryWait {
			return h, status, err
		}
		select {
		case <-ctx.Done():
			return h, status, err
		case <-time.After(wait):
		}
	}
}

func (c *Client) doOnce(ctx context.Context, method, path string, data []byte, hasBody bool, out any, headers []string) (http.Header, int, error) {
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.opt.BaseURL+path, rd)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.opt.Key)
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.opt.AgentVersion != "" {
		req.Header.Set("Agent-Version", c.opt.AgentVersion)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, errUnreachable{err}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, 0, errUnreachable{err}
	}
	if resp.StatusCode == http.StatusNotModified {
		return resp.Header, resp.StatusCode, nil
	}
	if resp.StatusCode >= 300 {
		return resp.Header, resp.StatusCode, decodeError(resp, answer)
	}
	if out != nil && len(answer) > 0 {
		if err := checkAnswerDepth(answer); err != nil {
			return resp.Header, resp.StatusCode, err
		}
		if q, ok := out.(quickDecoder); ok && json.Valid(answer) && q.decodeQuick(answer) {
			return resp.Header, resp.StatusCode, nil
		}
		dec := json.NewDecoder(bytes.NewReader(answer))
		dec.UseNumber()
		if err := dec.Decode(out); err != nil {
			return resp.Header, resp.StatusCode, fmt.Errorf("sdk: decode answer: %w", err)
		}
	}
	return resp.Header, resp.StatusCode, nil
}

func decodeError(resp *http.Response, data []byte) error {
	var body struct {
		Error struct {
			Code    string   `json:"code"`
			Message string   `json:"message"`
			Kinds   []string `json:"kinds"`
			Classes []string `json:"classes"`
		} `json:"error"`
		Version int64 `json:"version"`
	}
	if checkAnswerDepth(data) == nil {
		_ = json.Unmarshal(data, &body) // a body that is not an error object leaves the status to speak for itself
	}
	e := &Error{Status: resp.StatusCode, Code: body.Error.Code, Message: body.Error.Message, Kinds: body.Error.Kinds, Classes: body.Error.Classes, Version: body.Version}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	if e.Code == "" {
		e.Code = http.StatusText(resp.StatusCode)
	}
	return e
}

// parseRetryAfter reads a Retry-After header: delta-seconds or an HTTP date (0 when absent,
// invalid or past).
func parseRetryAfter(s string, now time.Time) time.Duration {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(s); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func query(values map[string]string) string {
	q := url.Values{}
	for k, v := range values {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}
