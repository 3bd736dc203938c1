// Package conformance checks a live agentmemory deployment from the outside (issue 34 §3,
// QT-3): tenant isolation over every route of its /openapi.json, bad input, an erasure whose
// signed certificate verifies offline and whose probe finds nothing, the receipt chain and the
// Console's headers. It speaks only HTTP to the deployment; `agentmemory conformance`
// runs it and a test runs it against the real binary.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Options configure a run. URL is the deployment's base URL. AdminKey is either a deployment
// operator key (amop_..., `agentmemory operator-key create`; PeerAdminKey then empty): the run
// creates its two throwaway spaces A and B with POST /v1/spaces; or, with PeerAdminKey, the
// admin keys of two throwaway spaces whose documents allow a direct PUT (`agentmemory space
// create NAME --direct-put`). The run turns agent memory on in both and mints its own agent
// keys there. HTTP is the client (nil: one with a 30 s timeout).
type Options struct {
	URL          string
	AdminKey     string
	PeerAdminKey string
	HTTP         *http.Client
	// ErasureWait is how long the erasure check waits for its erasure to end (0: 2 minutes);
	// past it the check fails, naming a missing Temporal worker.
	ErasureWait time.Duration
}

// Check is one check's outcome: its group (setup, isolation, bad_input, erasure, receipts,
// console, cleanup), the route or subject, OK, and on failure what was seen.
type Check struct {
	Group  string `json:"group"`
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Report is a run's result: every check, and how many failed. It is the JSON of --json.
type Report struct {
	URL      string    `json:"url"`
	Started  time.Time `json:"started"`
	Checks   []Check   `json:"checks"`
	Failures int       `json:"failures"`
}

func (r *Report) add(group, name string, ok bool, detail string) {
	if ok {
		detail = ""
	}
	r.Checks = append(r.Checks, Check{Group: group, Name: name, OK: ok, Detail: detail})
	if !ok {
		r.Failures++
	}
}

// client is one key's view of the deployment.
type client struct {
	base string
	key  string
	http *http.Client
}

// do sends method path with body (nil, a string sent as is, or a value sent as JSON) and
// returns the status, the raw answer and its headers.
func (c client) do(ctx context.Context, method, path string, body any) (int, []byte, http.Header, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	return res.StatusCode, data, res.Header, err
}

// must sends the request and decodes a JSON object, failing unless the status is want.
func (c client) must(ctx context.Context, want int, method, path string, body any) (map[string]any, error) {
	code, data, _, err := c.do(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	if code != want {
		return nil, fmt.Errorf("%s %s: got %d, want %d: %.300s", method, path, code, want, data)
	}
	var m map[string]any
	if len(data) > 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return m, nil
}

// Run runs every check against o.URL and returns the report; an error means the run could not
// set itself up (the report then holds what was checked so far). It retires its note and
// revokes the keys it minted before returning.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if o.ErasureWait <= 0 {
		o.ErasureWait = 2 * time.Minute
	}
	o.URL = strings.TrimRight(o.URL, "/")
	rep := &Report{URL: o.URL, Started: time.Now().UTC()}
	w, err := setup(ctx, o)
	defer w.cleanup(context.WithoutCancel(ctx), rep)
	if err != nil {
		rep.add("setup", "spaces and keys", false, err.Error())
		return rep, err
	}
	rep.add("setup", "spaces and keys", true, "")
	routes, err := w.routes(ctx)
	if err != nil {
		rep.add("setup", "GET /openapi.json", false, err.Error())
		return rep, err
	}
	w.isolation(ctx, rep, routes)
	w.mcp(ctx, rep)
	w.badInput(ctx, rep, routes)
	w.unchanged(ctx, rep)
	w.boards(ctx, rep)
	w.erasure(ctx, rep, o.ErasureWait)
	w.receipts(ctx, rep)
	w.console(ctx, rep)
	return rep, nil
}
