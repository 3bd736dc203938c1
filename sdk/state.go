package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"
)

// Scope names what a state belongs to: build it with Conversation, Task, Object or Subject.
type Scope struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// Conversation is the scope of one conversation.
func Conversation(id string) Scope { return Scope{Kind: "conversation", ID: id} }

// Task is the scope of one task.
func Task(id string) Scope { return Scope{Kind: "task", ID: id} }

// Object is the scope of one object, named type:namespace:id.
func Object(typ, namespace, id string) Scope {
	return Scope{Kind: "object", ID: typ + ":" + namespace + ":" + id}
}

// Subject is the scope of one customer, named by a handle such as "email:ana@example.com".
func Subject(handle string) Scope { return Scope{Kind: "subject", ID: handle} }

// AgentInstance is the scope of one agent instance (issue 31): one state shared by all the
// instance's runs, named by the instance's id.
func AgentInstance(instance string) Scope { return Scope{Kind: "agent", ID: instance} }

// Delete, as a field's value in a merge write, removes that field.
var Delete = deleteMarker{}

type deleteMarker struct{}

// MarshalJSON encodes the marker as exactly {"$delete": true}.
func (deleteMarker) MarshalJSON() ([]byte, error) { return []byte(`{"$delete":true}`), nil }

// State is a state as read: Body maps field names to their JSON values (print it, or read a
// field with Body.Field / the whole body with Body.Decode).
type State struct {
	Body      Body       `json:"body"`
	Version   int64      `json:"version"`
	UpdatedAt *time.Time `json:"updated_at"`
	known     bool       // Body is the body at Version (not only its number)
}

// WriteResult is the answer of a write. Queued is true when the service was unreachable and
// the write waits in the client's queue (Stored is then false and Version the expected base).
type WriteResult struct {
	Stored   bool     `json:"stored"`
	Version  int64    `json:"version"`
	Reason   *string  `json:"reason"`
	Fields   []string `json:"fields,omitempty"`
	Bytes    int      `json:"bytes,omitempty"`
	MaxBytes int      `json:"max_bytes,omitempty"`
	Queued   bool     `json:"-"`
}

// Conflict is a queued compare-and-swap that met another version when it was resent: it is
// reported, never merged silently.
type Conflict struct {
	Scope          Scope
	Agent          string
	IfVersion      int64
	CurrentVersion int64
	Body           Body
}

// PutOption changes a write: CAS(v) for a whole-state compare-and-swap at version v;
// IfVersion(v) for a merge applied only at version v.
type PutOption func(*writeRequest)

// CAS makes the write a compare-and-swap of the whole state at version v (0: must not exist).
func CAS(v int64) PutOption {
	return func(w *writeRequest) { w.Mode = "cas"; w.IfVersion = &v }
}

// IfVersion makes a merge write apply only at version v.
func IfVersion(v int64) PutOption { return func(w *writeRequest) { w.IfVersion = &v } }

// StateOption changes a StateHandle.
type StateOption func(*StateHandle)

// WithSubject names the customer a non-subject scope belongs to (for erasure and export).
func WithSubject(handle string) StateOption { return func(h *StateHandle) { h.subject = handle } }

// WithAgent names the agent (person keys with role integration only).
func WithAgent(agent string) StateOption { return func(h *StateHandle) { h.agent = agent } }

// StateHandle reads and writes one state (scope + agent).
type StateHandle struct {
	c       *Client
	scope   Scope
	agent   string
	subject string
}

// AgentState returns the handle of the state of scope for this client's agent.
func (c *Client) AgentState(scope Scope, opts ...StateOption) *StateHandle {
	h := &StateHandle{c: c, scope: scope, agent: c.opt.Agent}
	for _, o := range opts {
		o(h)
	}
	return h
}

type stateKey struct {
	kind, id, agent string
}

func (h *StateHandle) key() stateKey { return stateKey{h.scope.Kind, h.scope.ID, h.agent} }

type writeRequest struct {
	Scope     Scope                      `json:"scope"`
	Agent     string                     `json:"agent,omitempty"`
	Mode      string                     `json:"mode"`
	IfVersion *int64                     `json:"if_version,omitempty"`
	Body      map[string]json.RawMessage `json:"body"`
	Subject   string                     `json:"subject,omitempty"`
	Lease     *leaseProof                `json:"lease,omitempty"`
}

type queuedWrite struct {
	Request writeRequest `json:"request"`
}

// Get returns the state, never older than the newest version this client wrote or read
// (read-your-writes). When the service answers with an older non-zero version (a lagging
// replica), the client serves the newer state it holds, or retries briefly and then fails.
// When the service answers version 0 (the state is absent: erased, expired or deleted) and
// keeps answering it through the bounded retries (about 0.75 s), the client drops what it
// held for this scope and agent and returns the empty state: it never serves data the
// service no longer has.
func (h *StateHandle) Get(ctx context.Context) (State, error) {
	c := h.c
	if c.opt.Replay {
		c.mu.Lock()
		defer c.mu.Unlock()
		return cloneState(c.local[h.key()]), nil
	}
	c.flushQuiet(ctx)
	for attempt := 0; ; attempt++ {
		var st State
		_, _, err := c.do(ctx, "POST", "/v1/agent-state/read", encodeRead(h.scope, h.agent), &st)
		if err != nil {
			return State{}, err
		}
		st.known = true
		c.mu.Lock()
		seen := c.seen[h.key()]
		if st.Version >= seen.Version {
			c.seen[h.key()] = cloneState(st)
			c.mu.Unlock()
			return st, nil
		}
		absent := st.Version == 0
		if absent && attempt >= maxReadRetries {
			// Still absent after the retries: erased or expired, not lagging.
			delete(c.seen, h.key())
			c.mu.Unlock()
			return st, nil
		}
		if seen.known && !absent {
			c.mu.Unlock()
			return cloneState(seen), nil
		}
		c.mu.Unlock()
		if attempt >= maxReadRetries {
			return State{}, fmt.Errorf("sdk: the service still serves version %d after this client saw %d", st.Version, seen.Version)
		}
		select {
		case <-ctx.Done():
			return State{}, ctx.Err()
		case <-time.After(time.Duration(50*(attempt+1)) * time.Millisecond):
		}
	}
}

// maxReadRetries bounds the retries of a read that answers an older version than seen.
const maxReadRetries = 5

// Put writes fields of the state: merge_by_key by default (each top-level field replaces
// that field; Delete removes one), or CAS. A refused write (not_declared_field, over_cap) is
// a result with Stored false, not an error; a stale version is an *Error matching ErrConflict.
// When the service is unreachable the write is queued (Queued true) and resent later with the
// same if_version.
func (h *StateHandle) Put(ctx context.Context, body map[string]any, opts ...PutOption) (WriteResult, error) {
	raw := make(map[string]json.RawMessage, len(body))
	for k, v := range body {
		data, err := json.Marshal(v)
		if err != nil {
			return WriteResult{}, fmt.Errorf("sdk: encode field %q: %w", k, err)
		}
		raw[k] = data
	}
	req := writeRequest{Scope: h.scope, Agent: h.agent, Mode: "merge_by_key", Body: raw, Subject: h.subject}
	for _, o := range opts {
		o(&req)
	}
	c := h.c
	if c.opt.Replay {
		return c.applyLocal(h.key(), req)
	}
	c.flushQuiet(ctx)
	res, err := c.send(ctx, req, encodeWrite(req))
	var unreachable errUnreachable
	if (errors.As(err, &unreachable) || isUnavailable(err)) && req.Lease == nil { // a leased write is never queued
		c.mu.Lock()
		c.queue = append(c.queue, queuedWrite{Request: req})
		saveErr := c.saveQueueLocked()
		c.mu.Unlock()
		if saveErr != nil {
			return WriteResult{}, saveErr
		}
		base := int64(0)
		if req.IfVersion != nil {
			base = *req.IfVersion
		}
		return WriteResult{Queued: true, Version: base}, nil
	}
	return res, err
}

func isUnavailable(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Status == 502 || e.Status == 503 || e.Status == 504)
}

// send writes req and records the version it stored. data is req already encoded
// (encodeWrite), or nil to encode it with encoding/json (a write read back from the queue).
func (c *Client) send(ctx context.Context, req writeRequest, data encoded) (WriteResult, error) {
	var body any = req
	if data != nil {
		body = data
	}
	var res WriteResult
	_, _, err := c.do(ctx, "PUT", "/v1/agent-state", body, &res)
	if err != nil {
		return WriteResult{}, err
	}
	if res.Stored {
		k := stateKey{req.Scope.Kind, req.Scope.ID, req.Agent}
		c.mu.Lock()
		if res.Version > c.seen[k].Version {
			c.seen[k] = State{Version: res.Version}
		}
		c.mu.Unlock()
	}
	return res, nil
}

// Flush resends queued writes in order. A resent CAS that conflicts is moved to Conflicts; a
// write the service still cannot take stays queued and Flush returns that error.
func (c *Client) Flush(ctx context.Context) error {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.mu.Unlock()
			return nil
		}
		next := c.queue[0]
		c.mu.Unlock()
		_, err := c.send(ctx, next.Request, nil)
		var unreachable errUnreachable
		if errors.As(err, &unreachable) || isUnavailable(err) {
			return err
		}
		c.mu.Lock()
		c.queue = c.queue[1:]
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.Status == 412 {
			iv := int64(0)
			if next.Request.IfVersion != nil {
				iv = *next.Request.IfVersion
			}
			c.conflicts = append(c.conflicts, Conflict{Scope: next.Request.Scope, Agent: next.Request.Agent,
				IfVersion: iv, CurrentVersion: apiErr.Version, Body: next.Request.Body})
		}
		saveErr := c.saveQueueLocked()
		c.mu.Unlock()
		if saveErr != nil {
			return saveErr
		}
		if err != nil && (apiErr == nil || apiErr.Status != 412) {
			return err
		}
	}
}

func (c *Client) flushQuiet(ctx context.Context) {
	c.mu.Lock()
	n := len(c.queue)
	c.mu.Unlock()
	if n > 0 {
		_ = c.Flush(ctx) // a write still queued stays queued for the next Flush, which reports it
	}
}

// Pending returns how many writes wait in the queue.
func (c *Client) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// Conflicts returns the queued compare-and-swap writes that conflicted when resent.
func (c *Client) Conflicts() []Conflict {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Conflict(nil), c.conflicts...)
}

// applyLocal applies a write to the local state (replay mode) with the service's semantics:
// version check, merge by key or whole-state CAS, version + 1.
func (c *Client) applyLocal(k stateKey, req writeRequest) (WriteResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.local[k]
	if req.IfVersion != nil && *req.IfVersion != cur.Version {
		return WriteResult{}, &Error{Status: 412, Code: "agent_state_conflict", Message: "replay: version mismatch", Version: cur.Version}
	}
	next := map[string]json.RawMessage{}
	if req.Mode != "cas" {
		for f, v := range cur.Body {
			next[f] = v
		}
	}
	for f, v := range req.Body {
		if string(v) == `{"$delete":true}` {
			delete(next, f)
			continue
		}
		next[f] = v
	}
	now := time.Now().UTC()
	c.local[k] = State{Body: next, Version: cur.Version + 1, UpdatedAt: &now, known: true}
	return WriteResult{Stored: true, Version: cur.Version + 1}, nil
}

func cloneState(s State) State {
	out := s
	out.Body = make(map[string]json.RawMessage, len(s.Body))
	for k, v := range s.Body {
		out.Body[k] = v
	}
	return out
}

func (c *Client) loadQueue() error {
	if c.opt.QueueFile == "" {
		return nil
	}
	data, err := os.ReadFile(c.opt.QueueFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sdk: read queue: %w", err)
	}
	if len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, &c.queue); err != nil {
		return fmt.Errorf("sdk: parse queue %s: %w", c.opt.QueueFile, err)
	}
	return nil
}

// saveQueueLocked writes the queue file (when configured) atomically; c.mu is held.
func (c *Client) saveQueueLocked() error {
	if c.opt.QueueFile == "" {
		return nil
	}
	data, err := json.Marshal(c.queue)
	if err != nil {
		return err
	}
	tmp := c.opt.QueueFile + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("sdk: write queue: %w", err)
	}
	return os.Rename(tmp, c.opt.QueueFile)
}

// Fields returns the state's field names, sorted.
func (s State) Fields() []string {
	names := make([]string, 0, len(s.Body))
	for k := range s.Body {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
