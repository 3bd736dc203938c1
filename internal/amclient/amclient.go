// Package amclient is a small REST client of agentmemory's working-memory and admin calls,
// used by `agentmemory replay`, the demo and the benchmarks. It is deliberately minimal (no
// local version cache, no offline queue: that is the SDK's job, WM-14); the Go SDK may
// replace it.
package amclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client calls one agentmemory API with one key.
type Client struct {
	// BaseURL is the API's root, e.g. http://127.0.0.1:8080.
	BaseURL string
	// Key is sent as "Authorization: Bearer <Key>"; it never appears in errors.
	Key string
	// AgentVersion, when set, is sent as the Agent-Version header (provenance, MS-5).
	AgentVersion string
	// HTTP is the client used; nil means one with a 30 s timeout.
	HTTP *http.Client
}

// New returns a Client for baseURL and key.
func New(baseURL, key string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Key: key}
}

// Scope names a state (WM-3): Kind is conversation, task, object or subject.
type Scope struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// WriteRequest is the body of PUT /v1/agent-state. Body values are encoded with
// encoding/json; pass json.RawMessage to keep a number's exact text.
type WriteRequest struct {
	Scope     Scope          `json:"scope"`
	Agent     string         `json:"agent,omitempty"`
	Mode      string         `json:"mode,omitempty"`
	IfVersion *int64         `json:"if_version,omitempty"`
	Body      map[string]any `json:"body"`
	Subject   string         `json:"subject,omitempty"`
}

// WriteResult is the 200 answer of a write: Stored, or Reason "not_declared_field" (Fields)
// or "over_cap" (Bytes, MaxBytes).
type WriteResult struct {
	Stored   bool     `json:"stored"`
	Version  int64    `json:"version"`
	Reason   *string  `json:"reason"`
	Fields   []string `json:"fields"`
	Bytes    int      `json:"bytes"`
	MaxBytes int      `json:"max_bytes"`
}

// State is the answer of a read: a never-written state has an empty body, version 0 and a
// nil UpdatedAt.
type State struct {
	Body      json.RawMessage `json:"body"`
	Version   int64           `json:"version"`
	UpdatedAt *time.Time      `json:"updated_at"`
}

// Error is an error answer of the API. Version is the current version on a 412
// agent_state_conflict.
type Error struct {
	Status  int
	Code    string
	Message string
	Version int64
}

func (e *Error) Error() string {
	return fmt.Sprintf("agentmemory: %d %s: %s", e.Status, e.Code, e.Message)
}

// IsConflict reports whether err is a 412 agent_state_conflict, and the current version.
func IsConflict(err error) (int64, bool) {
	var e *Error
	if errors.As(err, &e) && e.Code == "agent_state_conflict" {
		return e.Version, true
	}
	return 0, false
}

// Ptr returns a pointer to v (for IfVersion).
func Ptr(v int64) *int64 { return &v }

// WriteState sends PUT /v1/agent-state. A 412 is an *Error with Code agent_state_conflict
// and the current Version; other refusals are *Error; stored:false answers are not errors.
func (c *Client) WriteState(ctx context.Context, req WriteRequest) (WriteResult, error) {
	var res WriteResult
	err := c.Do(ctx, http.MethodPut, "/v1/agent-state", req, &res)
	return res, err
}

// ReadState sends POST /v1/agent-state/read; agent may be empty with an agent key.
func (c *Client) ReadState(ctx context.Context, scope Scope, agent string) (State, error) {
	var st State
	req := map[string]any{"scope": scope}
	if agent != "" {
		req["agent"] = agent
	}
	err := c.Do(ctx, http.MethodPost, "/v1/agent-state/read", req, &st)
	return st, err
}

// PutDocument stores a space document ("features", "object-types").
func (c *Client) PutDocument(ctx context.Context, name string, doc any) error {
	return c.Do(ctx, http.MethodPut, "/v1/documents/"+name, doc, nil)
}

// KeySpec is the body of POST /v1/keys.
type KeySpec struct {
	Kind   string   `json:"kind"`
	Agent  string   `json:"agent,omitempty"`
	Vendor string   `json:"vendor,omitempty"`
	Name   string   `json:"name,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
	Roles  []string `json:"roles,omitempty"`
}

// CreateKey mints a key (needs role admin) and returns its id and the key, shown once.
func (c *Client) CreateKey(ctx context.Context, spec KeySpec) (keyID, key string, err error) {
	var out struct {
		KeyID string `json:"key_id"`
		Key   string `json:"key"`
	}
	err = c.Do(ctx, http.MethodPost, "/v1/keys", spec, &out)
	return out.KeyID, out.Key, err
}

// Do sends method path with in as the JSON body (none when nil) and decodes a 2xx answer
// into out (when not nil). Any other status is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("agentmemory: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	if c.AgentVersion != "" {
		req.Header.Set("Agent-Version", c.AgentVersion)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("agentmemory: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("agentmemory: %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			Version int64 `json:"version"`
		}
		_ = json.Unmarshal(data, &e)
		return &Error{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message, Version: e.Version}
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("agentmemory: %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

var defaultHTTP = &http.Client{Timeout: 30 * time.Second}
