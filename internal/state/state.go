// Package state is working memory (WM-1..WM-13): small per-scope, per-agent states written by
// an agent's code, with a declared schema, compare-and-swap and merge-by-key writes, a byte
// cap, masking of pii fields and retention per field. Scope ids are stored only as keyed
// hashes (WM-3); operators see sizes, versions and dates, never content (WM-11).
package state

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/db"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/keyed"
	"github.com/agentmemory/agentmemory/internal/keystore"
	"github.com/agentmemory/agentmemory/internal/quotas"
	"github.com/agentmemory/agentmemory/internal/redact"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/strictjson"
	"github.com/agentmemory/agentmemory/models"
)

// Write modes (WM-5, WM-6).
const (
	ModeCAS   = "cas"
	ModeMerge = "merge_by_key"
)

// Reasons a write was not stored (WM-7, WM-8).
const (
	ReasonNotDeclared = "not_declared_field"
	ReasonOverCap     = "over_cap"
	// ReasonOverQuota: storing the write would pass one of the space's storage quotas
	// (issue 34 §1): states per space or per scope kind, or bytes of state per space.
	ReasonOverQuota = quotas.ReasonOverQuota
)

// Masker masks personal data inside a pii field's text by the space's masking rules.
type Masker interface {
	MaskText(ctx context.Context, spaceID, text string) (string, error)
}

// Service reads and writes working memory.
type Service struct {
	DB     *bun.DB
	Docs   spaces.Documents
	Hasher keyed.Hasher
	Masker Masker
	Now    func() time.Time
	// Keys, when set, seals the states of customers under their data keys (sealing.go).
	Keys keystore.Store

	seen    lastSeen // this replica's last-seen rows: a write's first attempt skips the read
	writers writers  // this replica's writes of one state, one at a time
}

// Scope names what a state belongs to (WM-3): Kind is conversation, task, object, subject or
// agent; ID is the conversation/task id, "type:namespace:id" for an object, a customer handle,
// or for agent the agent instance's id (one state for the instance, shared by all its runs,
// issue 31).
type Scope struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// WriteRequest is the body of PUT /v1/agent-state (WM-4). IfVersion is required for cas.
// Lease, when set, is the lease the writer holds on the state (issue 31, leases.go): the
// write is refused 409 lease_lost unless it is the lease in force.
type WriteRequest struct {
	Scope     *Scope          `json:"scope"`
	Agent     string          `json:"agent"`
	Mode      string          `json:"mode"`
	IfVersion *int64          `json:"if_version"`
	Body      json.RawMessage `json:"body"`
	Subject   string          `json:"subject"`
	Lease     *LeaseProof     `json:"lease,omitempty"`
}

// WriteResult is the answer of a write (WM-7, WM-8). Reason is nil when stored. Fields lists
// undeclared fields; Bytes and MaxBytes are set for over_cap; Quota (the quota's name,
// internal/quotas) and Limit (its limit) for over_quota.
type WriteResult struct {
	Stored   bool     `json:"stored"`
	Version  int64    `json:"version"`
	Reason   *string  `json:"reason"`
	Fields   []string `json:"fields,omitempty"`
	Bytes    int      `json:"bytes,omitempty"`
	MaxBytes int      `json:"max_bytes,omitempty"`
	Quota    string   `json:"quota,omitempty"`
	Limit    int64    `json:"limit,omitempty"`
}

// ReadRequest is the body of POST /v1/agent-state/read (WM-9).
type ReadRequest struct {
	Scope *Scope `json:"scope"`
	Agent string `json:"agent"`
}

// ReadResult is a state as served: never-written or expired states read as an empty body at
// version 0 with a null updated_at.
type ReadResult struct {
	Body      json.RawMessage `json:"body"`
	Version   int64           `json:"version"`
	UpdatedAt *time.Time      `json:"updated_at"`
}

// AppendJSON appends r as the API answers it: the bytes a json.Encoder without HTML
// escaping writes (final newline included), written directly. Body is the compact JSON Read
// built (strictjson.Object.Canonical), so it is not compacted again.
func (r ReadResult) AppendJSON(b []byte) []byte {
	b = append(b, `{"body":`...)
	b = append(b, r.Body...)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, r.Version, 10)
	b = append(b, `,"updated_at":`...)
	if r.UpdatedAt == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = r.UpdatedAt.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}

// AppendJSON appends r as the API answers it when it is a stored write or a plain refusal
// without a reason or fields (the bytes a json.Encoder without HTML escaping writes, final
// newline included), and reports whether it did; any other result is left to encoding/json.
func (r WriteResult) AppendJSON(b []byte) ([]byte, bool) {
	if r.Reason != nil || len(r.Fields) > 0 {
		return b, false
	}
	b = append(b, `{"stored":`...)
	b = strconv.AppendBool(b, r.Stored)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, r.Version, 10)
	b = append(b, `,"reason":null`...)
	if r.Bytes != 0 {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, int64(r.Bytes), 10)
	}
	if r.MaxBytes != 0 {
		b = append(b, `,"max_bytes":`...)
		b = strconv.AppendInt(b, int64(r.MaxBytes), 10)
	}
	return append(b, "}\n"...), true
}

// Meta is what operators see of a state (WM-11): never its content or scope id.
type Meta struct {
	Agent     string    `json:"agent"`
	ScopeKind string    `json:"scope_kind"`
	Bytes     int       `json:"bytes"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// CodeConflict is the API code of a stale if_version (412, WM-5).
const CodeConflict = "agent_state_conflict"

// ErrConflict matches (errors.Is) the error of a write whose if_version is not the stored
// version (WM-5); the error is a *ConflictError.
var ErrConflict = errors.New("state: if_version is not the stored version")

// ConflictError is the error of a write whose if_version is stale: Current is the stored
// version. It matches ErrConflict and unwraps to the caller-facing fault (412,
// CodeConflict, with "version": Current beside the error object).
type ConflictError struct{ Current int64 }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: the state is at version %d", ErrConflict, e.Current)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Unwrap returns the fault the API answers: 412 CodeConflict with the current version.
func (e *ConflictError) Unwrap() error {
	f := fault.New(fault.Stale, CodeConflict, "the state is at another version than if_version; read it and retry")
	f.Extra = map[string]any{"version": e.Current}
	return f
}

// maxAttempts bounds the optimistic attempts of one write before it answers
// agent_state_busy (503).
const maxAttempts = 200

// errNoState is load's answer when no row holds the target's state (never written, or
// erased); callers read it as version 0.
var errNoState = errors.New("state: no stored state")

// target is a resolved request: who writes, which state, under which schema.
type target struct {
	spaceID     string
	agent       string
	scopeKind   string
	scopeHash   string
	subjectHash string
	schema      spaces.ObjectType
	declared    bool
	features    spaces.Features
	// config is the configuration revision the request's Snapshot was read at, which every
	// statement checks (atConfig), or -1 when it assumed none.
	config int64
}

// errOverQuota rolls back a locked attempt (a PostgreSQL transaction the refused statement
// aborted) whose answer is stored:false over_quota; Write answers that result.
var errOverQuota = errors.New("state: over quota")

// overQuota is the answer of an attempt the database refused for a quota (err, from the
// insert or update of the state; quotas.Exceeded): stored:false over_quota at version
// effective, the previous state kept (the refused statement changed nothing), and the error
// that ends the attempt (errOverQuota inside a transaction, to roll it back; else nil). ok is
// false for any other err.
func overQuota(err error, t target, effective int64, lock bool) (res WriteResult, ok bool, end error) {
	q, ok := quotas.Exceeded(err)
	if !ok {
		return WriteResult{}, false, nil
	}
	reason := ReasonOverQuota
	res = WriteResult{Stored: false, Version: effective, Reason: &reason, Quota: q, Limit: quotas.Limit(t.features, q, t.scopeKind)}
	if lock {
		return res, true, errOverQuota
	}
	return res, true, nil
}

// Write applies a write of p (WM-4..WM-8). Check order: version (fault.Stale
// "agent_state_conflict" with the current version), declared fields (stored:false
// not_declared_field), field values (fault.Invalid), cap (stored:false over_cap), then the
// space's quotas (stored:false over_quota naming the quota, issue 34 §1). Feature off
// or scope missing is fault.Forbidden; a malformed request is fault.Invalid. Parallel merge
// writers of different fields never lose each other's writes. A write whose ctx ends while
// it retries a lost race stops at once and returns ctx's error (context.Canceled or
// context.DeadlineExceeded, wrapped); nothing of it is stored. After maxAttempts lost races it
// is fault.Unavailable "agent_state_busy".
func (s *Service) Write(ctx context.Context, p auth.Principal, agentVersion string, req WriteRequest) (WriteResult, error) {
	return s.WriteAt(ctx, spaces.Snapshot{}, p, agentVersion, req)
}

// WriteAt is Write on snap, the request's key and documents as authenticated (issue 30 §1):
// the space's features and object types are snap's, and every statement applies only while
// the space's configuration revision is still snap's, else the answer is
// spaces.ErrStaleConfig and nothing is stored (the caller reloads snap and writes again:
// spaces.KeyCache.Run). The zero Snapshot reads the documents from the store and checks no
// revision.
func (s *Service) WriteAt(ctx context.Context, snap spaces.Snapshot, p auth.Principal, agentVersion string, req WriteRequest) (WriteResult, error) {
	req, body, deletes, err := checkRequest(req)
	if err != nil {
		return WriteResult{}, err
	}
	t, err := s.resolve(ctx, snap, p, req.Scope, req.Agent, req.Subject)
	if err != nil {
		return WriteResult{}, err
	}
	if t.declared && !t.schema.AllowsMode(req.Mode) {
		return WriteResult{}, invalid("mode", fmt.Sprintf("this agent's schema allows only %s writes", t.schema.AgentState.Write))
	}
	w := &pendingWrite{p: p, agentVersion: agentVersion, t: t, req: req, body: body, deletes: deletes}
	if fence, err := s.fenced(ctx, t, req.Lease); err != nil || fence {
		if err != nil {
			return WriteResult{}, fmt.Errorf("state: write: %w", err)
		}
		return s.writeFenced(ctx, w)
	}
	if !t.masks(body) {
		// This replica's writers of one state take turns (writers), so a hot state's writes
		// each start from the row the previous one stored instead of losing the race to it.
		// A body with a pii field does not wait in line: its masking may call out.
		release, err := s.writers.acquire(ctx, t)
		if err != nil {
			return WriteResult{}, fmt.Errorf("state: write: %w", err)
		}
		defer release()
	}
	return s.attempts(ctx, w)
}

// pendingWrite is one Write once its request is checked and resolved: who writes (p, and the
// agent's version), the target, the request (its mode defaulted), its body without the
// deleted members, and the names of those (sorted).
type pendingWrite struct {
	p            auth.Principal
	agentVersion string
	t            target
	req          WriteRequest
	body         strictjson.Object
	deletes      []string
}

// checkRequest is Write's first phase, on the request alone: the mode (merge_by_key when
// empty), if_version, and the body parsed, its {"$delete": true} members split off
// (splitDeletes). It returns the request with its mode set; a malformed one is fault.Invalid
// naming the member.
func checkRequest(req WriteRequest) (WriteRequest, strictjson.Object, []string, error) {
	if req.Mode == "" {
		req.Mode = ModeMerge
	}
	if req.Mode != ModeCAS && req.Mode != ModeMerge {
		return req, nil, nil, invalid("mode", `mode must be "cas" or "merge_by_key"`)
	}
	if req.Mode == ModeCAS && req.IfVersion == nil {
		return req, nil, nil, invalid("if_version", "a cas write needs if_version (0 when the state must not exist yet)")
	}
	if req.IfVersion != nil && *req.IfVersion < 0 {
		return req, nil, nil, invalid("if_version", "if_version must be 0 or more")
	}
	if len(bytes.TrimSpace(req.Body)) == 0 || bytes.Equal(bytes.TrimSpace(req.Body), []byte("null")) {
		return req, nil, nil, invalid("body", "body is required and must be a JSON object")
	}
	body, err := strictjson.ParseObject(req.Body)
	if err != nil {
		return req, nil, nil, invalid("body", "body must be a JSON object")
	}
	deletes, err := splitDeletes(body, req.Mode)
	if err != nil {
		return req, nil, nil, err
	}
	return req, body, deletes, nil
}

// attempts runs w's attempts until one is decided. PostgreSQL: after one lost race the write
// runs under the row's lock (SELECT ... FOR UPDATE in a transaction), so a hot state's writers
// queue on the row instead of re-reading and losing again. A body with a pii field stays
// optimistic: its masking may call out (rules, a model) and must not run while the row is
// locked. SQLite serialises writers itself: it keeps retrying, with no transaction around the
// write. After maxAttempts lost races it is fault.Unavailable "agent_state_busy"; a ctx that
// ends stops it at once with ctx's error, wrapped.
func (s *Service) attempts(ctx context.Context, w *pendingWrite) (WriteResult, error) {
	lockable := !db.IsSQLite(s.DB) && !w.t.masks(w.body)
	locked := false
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return WriteResult{}, fmt.Errorf("state: write: %w", err)
		}
		if !locked {
			if res, ok := s.tryRemembered(ctx, w); ok {
				return res, nil
			}
		}
		res, retry, err := s.attempt(ctx, w, locked)
		if err != nil || !retry {
			return res, err
		}
		locked = lockable
		if attempt >= maxAttempts {
			busy := fault.New(fault.Unavailable, "agent_state_busy", "too many concurrent writers on this state; retry")
			busy.RetryAfter = time.Second
			return WriteResult{}, busy
		}
		if attempt > 2 {
			if err := pause(ctx, time.Duration(rand.IntN(200*attempt))*time.Microsecond); err != nil {
				return WriteResult{}, fmt.Errorf("state: write: %w", err)
			}
		}
	}
}

// tryRemembered tries w on the row this replica saw last (lastSeen), without reading it: only
// a stored update stands (ok). Anything else (a lost race, a 412, a refusal, an error) is
// forgotten with the row and decided again on the stored row, without counting as an
// attempt.
func (s *Service) tryRemembered(ctx context.Context, w *pendingWrite) (WriteResult, bool) {
	seen, ok := s.seen.get(w.t)
	if !ok {
		return WriteResult{}, false
	}
	res, retry, err := s.tryWrite(ctx, s.DB, false, w, seen)
	if err == nil && !retry && res.Stored {
		return res, true
	}
	s.seen.drop(w.t)
	return WriteResult{}, false
}

// attempt is one attempt of w on the stored row: under its lock in a transaction when locked
// (an over_quota answer there rolls the transaction back and is the answer), else through the
// pool. retry is tryWrite's.
func (s *Service) attempt(ctx context.Context, w *pendingWrite, locked bool) (WriteResult, bool, error) {
	if !locked {
		return s.tryWrite(ctx, s.DB, false, w, nil)
	}
	var res WriteResult
	var retry bool
	err := s.DB.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		res, retry, err = s.tryWrite(ctx, tx, true, w, nil)
		return err
	})
	if errors.Is(err, errOverQuota) {
		return res, false, nil
	}
	return res, retry, err
}

// pause waits d, or less when ctx ends first (then it returns ctx's error).
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// splitDeletes removes {"$delete": true} members from body and returns their names. Any other
// object whose only member is "$delete", at any depth (there is no deep merge, so a nested
// {"$delete": true} would silently be stored as a value), is fault.Invalid; cas takes no
// deletes.
func splitDeletes(body strictjson.Object, mode string) ([]string, error) {
	var deletes []string
	for name, raw := range body {
		if strictjson.IsScalar(raw) {
			continue // neither {"$delete": true} nor holding one
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, invalid("body."+name, "malformed JSON value")
		}
		if obj, ok := v.(map[string]any); ok && len(obj) == 1 && obj["$delete"] == true {
			if mode == ModeCAS {
				return nil, invalid("body."+name, `{"$delete": true} is for merge_by_key; a cas body is the whole state`)
			}
			deletes = append(deletes, name)
			delete(body, name)
			continue
		}
		if err := checkNoDelete(v, "body."+name, true); err != nil {
			return nil, err
		}
	}
	sort.Strings(deletes)
	return deletes, nil
}

// checkNoDelete refuses any object whose only member is "$delete" inside v (top is true for a
// field's own value, where only exactly {"$delete": true} is allowed, and handled above).
func checkNoDelete(v any, at string, top bool) error {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["$delete"]; ok && len(x) == 1 {
			if top {
				return invalid(at, `only exactly {"$delete": true} removes a field`)
			}
			return invalid(at, `{"$delete": true} removes only a top-level field (there is no deep merge)`)
		}
		for k, y := range x {
			if err := checkNoDelete(y, at+"."+k, false); err != nil {
				return err
			}
		}
	case []any:
		for i, y := range x {
			if err := checkNoDelete(y, fmt.Sprintf("%s[%d]", at, i), false); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolve checks who writes or reads and what (WM-3) on snap's documents, and returns the
// target, at snap's configuration revision.
func (s *Service) resolve(ctx context.Context, snap spaces.Snapshot, p auth.Principal, scope *Scope, agent, subject string) (target, error) {
	t := target{spaceID: p.SpaceID, config: snap.ConfigArg(p.SpaceID)}
	switch {
	case p.IsAgent():
		if !p.HasScope(auth.ScopeAgentState) {
			return t, fault.New(fault.Forbidden, "scope_required", "this key lacks scope agent_state")
		}
		if agent != "" && agent != p.Agent {
			return t, fault.New(fault.Forbidden, "agent_mismatch", "an agent key writes only its own agent's state")
		}
		t.agent = p.Agent
	default:
		if !p.HasRole(auth.RoleIntegration) {
			return t, fault.New(fault.Forbidden, "role_required", "a person needs role integration for working memory")
		}
		if agent == "" {
			return t, invalid("agent", "agent is required with a person key")
		}
		t.agent = agent
	}
	features, types, err := snap.Documents(ctx, s.Docs, p.SpaceID)
	if err != nil {
		return t, err
	}
	if !features.AgentState.Enabled {
		return t, fault.New(fault.Forbidden, "feature_disabled", "working memory (agent_state) is off for this space")
	}
	t.scopeKind, t.scopeHash, t.subjectHash, err = s.hashScope(p.SpaceID, features, scope)
	if err != nil {
		return t, err
	}
	t.schema, t.declared = types.SchemaFor(t.agent)
	t.features = features
	if t.declared && t.schema.AgentState.Scope != scope.Kind {
		return t, invalid("scope.kind", fmt.Sprintf("this agent's state is scoped by %s", t.schema.AgentState.Scope))
	}
	if subject != "" {
		// Checked even when a subject scope already names the customer (whose handle then
		// wins): a malformed value is refused, never silently ignored.
		c, err := redact.CanonicalHandle(subject, features.Region())
		if err != nil {
			return t, invalid("subject", "subject is a customer handle such as email:... or phone:...")
		}
		if t.subjectHash == "" {
			t.subjectHash = s.Hasher.Hash(p.SpaceID, "subject", c)
		}
	}
	return t, nil
}

// hashScope checks scope (WM-3) and returns its kind, its keyed hash and, for a subject
// scope, the keyed hash of the customer's canonical handle; a malformed scope is
// fault.Invalid naming the member.
func (s *Service) hashScope(spaceID string, features spaces.Features, scope *Scope) (kind, scopeHash, subjectHash string, err error) {
	if scope == nil {
		return "", "", "", invalid("scope", "scope is required")
	}
	if !slices.Contains(spaces.ScopeKinds, scope.Kind) {
		return "", "", "", invalid("scope.kind", "scope.kind must be conversation, task, object, subject or agent")
	}
	id := strings.TrimSpace(scope.ID)
	if id == "" || len(id) > 512 {
		return "", "", "", invalid("scope.id", "scope.id must be 1-512 characters")
	}
	switch scope.Kind {
	case "object":
		parts := strings.SplitN(id, ":", 3)
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return "", "", "", invalid("scope.id", "an object scope id reads type:namespace:id")
		}
	case "subject":
		c, err := redact.CanonicalHandle(id, features.Region())
		if err != nil {
			return "", "", "", invalid("scope.id", "a subject scope id is a customer handle such as email:... or phone:...")
		}
		id = c
		subjectHash = s.Hasher.Hash(spaceID, "subject", c)
	}
	return scope.Kind, s.Hasher.Hash(spaceID, "scope:"+scope.Kind, id), subjectHash, nil
}

// masks reports whether writing body calls the masker: one of its fields is declared pii.
func (t target) masks(body strictjson.Object) bool {
	for name := range body {
		if t.schema.Fields[name].PII {
			return true
		}
	}
	return false
}

// tryWrite makes one attempt of w through idb; retry is true when another writer won the race
// and the write should be recomputed on the new version. With lock (idb a transaction) the
// row is read FOR UPDATE, so an existing row's update cannot lose. With seen (a row this
// replica remembers, lastSeen) the row is not read: the conditional update checks it is still
// current. Phases: the current state (current), the checks and the next state (decide), then
// the expired row replaced (replaceExpired), and an insert (insertState) or a conditional
// update (updateRow).
func (s *Service) tryWrite(ctx context.Context, idb bun.IDB, lock bool, w *pendingWrite, seen *seenRow) (WriteResult, bool, error) {
	now := s.Now().UTC()
	cur, err := s.current(ctx, idb, lock, w.t, seen, now)
	if err != nil {
		return WriteResult{}, false, err
	}
	if seen != nil && cur.effective == 0 {
		return WriteResult{}, true, nil // an expired state is replaced only on the stored row
	}
	next, res, err := s.decide(ctx, w, cur, now)
	if next == nil {
		return res, false, err
	}
	row := cur.row
	if row != nil && cur.effective == 0 {
		gone, err := s.replaceExpired(ctx, idb, row)
		if err != nil || !gone {
			return WriteResult{}, err == nil, err
		}
		row = nil
	}
	if row == nil {
		return s.insertState(ctx, idb, lock, w, cur.effective, next)
	}
	return s.updateRow(ctx, idb, lock, w, row, cur.effective, next)
}

// currentState is the state an attempt starts from: the stored (or remembered) row, nil when
// there is none, its live fields and their last-write times, and the version callers see
// (effective: 0 when there is no row or it expired).
type currentState struct {
	row       *models.AgentState
	fields    strictjson.Object
	times     map[string]time.Time
	effective int64
}

// current returns t's current state at now: seen's row when there is one (parsed once), else
// the row loaded through idb (FOR UPDATE with lock).
func (s *Service) current(ctx context.Context, idb bun.IDB, lock bool, t target, seen *seenRow, now time.Time) (currentState, error) {
	var row *models.AgentState
	var all strictjson.Object
	var stamps map[string]time.Time
	if seen != nil {
		row, all, stamps = &seen.row, seen.fields, seen.times
	} else {
		loaded, err := s.load(ctx, idb, lock, t)
		if err != nil && !errors.Is(err, errNoState) {
			return currentState{}, err
		}
		row = loaded
	}
	if all == nil && row != nil {
		all, stamps = parseRow(row)
	}
	fields, times, effective := liveOf(row, all, stamps, t.schema, now)
	return currentState{row: row, fields: fields, times: times, effective: effective}, nil
}

// nextState is what an attempt stores: the fields and their last-write times, the body
// (canonical: next's Join) and the times encoded, the write's clock and the state's new expiry.
type nextState struct {
	fields  strictjson.Object
	times   map[string]time.Time
	canon   []byte
	timesJS string
	now     time.Time
	expires time.Time
}

// decide checks w against cur in Write's order (version, declared fields, values, cap) and
// returns the state to store; when next is nil, res and err are the attempt's answer
// (a 412, stored:false not_declared_field or over_cap, a fault.Invalid value, a masking
// error).
func (s *Service) decide(ctx context.Context, w *pendingWrite, cur currentState, now time.Time) (*nextState, WriteResult, error) {
	t := w.t
	if w.req.IfVersion != nil && *w.req.IfVersion != cur.effective {
		return nil, WriteResult{}, conflict(cur.effective)
	}
	if names, refused := undeclared(t, w.body, w.deletes); refused {
		return nil, notDeclared(cur.effective, names), nil
	}
	written, err := s.written(ctx, t, w.body)
	if err != nil {
		return nil, WriteResult{}, err
	}
	fields, times := merged(w.req.Mode, cur.fields, cur.times, w.deletes, written, now)
	canon := fields.Join() // every value is canonical: the stored ones and the written ones
	if max := t.schema.MaxBytes(); len(canon) > max {
		reason := ReasonOverCap
		return nil, WriteResult{Stored: false, Version: cur.effective, Reason: &reason, Bytes: len(canon), MaxBytes: max}, nil
	}
	return &nextState{fields: fields, times: times, canon: canon, timesJS: encodeTimes(times),
		now: now, expires: now.Add(t.schema.StateTTL())}, WriteResult{}, nil
}

// undeclared reports whether the write is refused stored:false not_declared_field, and the
// fields it names, sorted: for an agent with no schema, always, naming every field of body
// and deletes; else when body has a field t's schema does not declare, naming those.
func undeclared(t target, body strictjson.Object, deletes []string) ([]string, bool) {
	if !t.declared {
		names := append(sortedKeys(body), deletes...)
		sort.Strings(names)
		return names, true
	}
	var names []string
	for name := range body {
		if _, ok := t.schema.Fields[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, len(names) > 0
}

// written returns body's values as stored: each checked against its declared field
// (fault.Invalid), a pii one masked, every one canonical.
func (s *Service) written(ctx context.Context, t target, body strictjson.Object) (strictjson.Object, error) {
	out := strictjson.Object{}
	for name, raw := range body {
		f := t.schema.Fields[name]
		if err := checkValue(name, f, raw); err != nil {
			return nil, err
		}
		if f.PII {
			masked, err := s.maskValue(ctx, t.spaceID, raw)
			if err != nil {
				return nil, err
			}
			raw = masked
		}
		out[name] = strictjson.CanonicalValue(raw)
	}
	return out, nil
}

// merged is the next state's fields and last-write times: for merge_by_key the current ones
// without deletes, then written's fields at now; for cas written's alone. It only reads its
// arguments.
func merged(mode string, current strictjson.Object, times map[string]time.Time, deletes []string, written strictjson.Object, now time.Time) (strictjson.Object, map[string]time.Time) {
	next := strictjson.Object{}
	nextTimes := map[string]time.Time{}
	if mode == ModeMerge {
		for k, v := range current {
			next[k] = v
			nextTimes[k] = times[k]
		}
		for _, name := range deletes {
			delete(next, name)
			delete(nextTimes, name)
		}
	}
	for k, v := range written {
		next[k] = v
		nextTimes[k] = now
	}
	return next, nextTimes
}

// replaceExpired removes row, whose state expired (WM-12), if it is still unchanged; gone is
// false when another writer changed it first. The state is gone for callers, so the write
// starts a new state above the old one's version (floors.go: never at 1 again, so a CAS
// holding an old version cannot match it), under a new id, so a writer holding the old row
// can never apply its update to the new one. Its own key is destroyed with it (as the
// retention sweep does), so the new state is sealed under a fresh key of the same id and a
// backup holding the expired row cannot open it (issue 29 §1).
func (s *Service) replaceExpired(ctx context.Context, idb bun.IDB, row *models.AgentState) (gone bool, err error) {
	removed, err := deleteStates(ctx, idb, "id = ? AND version = ?", row.ID, row.Version)
	if err != nil {
		return false, err
	}
	if err := s.destroyOwnKeys(ctx, removed); err != nil {
		return false, err
	}
	return len(removed) > 0, nil
}

// insertState creates w's state as next, sealed, at the first version above every deleted
// incarnation's (floors.go); retry when another writer created it first. effective is the
// version an over_quota answer names.
func (s *Service) insertState(ctx context.Context, idb bun.IDB, lock bool, w *pendingWrite, effective int64, next *nextState) (WriteResult, bool, error) {
	t := w.t
	id := auth.NewID("st")
	sealed, sealedTimes, err := s.seal(ctx, id, sealingFor(t.subjectHash, t.scopeKind, t.scopeHash, t.agent), next.canon, next.timesJS)
	if err != nil {
		return WriteResult{}, false, err
	}
	fresh := &models.AgentState{
		ID: id, SpaceID: t.spaceID, ScopeHash: t.scopeHash, ScopeKind: t.scopeKind,
		Agent: t.agent, SubjectHash: t.subjectHash, Body: sealed, FieldTimes: sealedTimes, Version: 1,
		Bytes: len(next.canon), KeyID: w.p.KeyID, AgentVersion: w.agentVersion,
		CreatedAt: next.now, UpdatedAt: next.now, ExpiresAt: next.expires, ExpiresHour: ExpiresHour(next.expires),
	}
	var version []int64
	err = idb.NewInsert().Model(fresh).Value("version", floorVersion, t.spaceID, t.agent).
		On("CONFLICT (space_id, scope_hash, agent) DO NOTHING").Returning("version").Scan(ctx, &version)
	if res, ok, qerr := overQuota(err, t, effective, lock); ok {
		return res, false, qerr
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return WriteResult{}, false, fmt.Errorf("state: insert: %w", err)
	}
	if len(version) == 0 {
		return WriteResult{}, true, nil // another writer created it first
	}
	opened := *fresh
	opened.Body, opened.FieldTimes, opened.Version = next.canon, next.timesJS, version[0]
	s.remember(t, lock, opened, next.fields, next.times)
	return stored(version[0]), false, nil
}

// updateRow stores next over row, sealed, only if row is still at its version and the space's
// configuration still the one assumed; retry when another writer won the race (a conditional
// write then meets the version check and answers 412 with the current version).
func (s *Service) updateRow(ctx context.Context, idb bun.IDB, lock bool, w *pendingWrite, row *models.AgentState, effective int64, next *nextState) (WriteResult, bool, error) {
	subjectHash := row.SubjectHash
	if w.t.subjectHash != "" {
		subjectHash = w.t.subjectHash
	}
	sealed, sealedTimes, err := s.seal(ctx, row.ID, sealingFor(subjectHash, row.ScopeKind, row.ScopeHash, w.t.agent), next.canon, next.timesJS)
	if err != nil {
		return WriteResult{}, false, err
	}
	u := rowUpdate{sealed: sealed, sealedTimes: sealedTimes, subjectHash: subjectHash, hour: ExpiresHour(next.expires)}
	version, err := s.applyUpdate(ctx, idb, w, row, next, u)
	if res, ok, qerr := overQuota(err, w.t, effective, lock); ok {
		return res, false, qerr
	}
	if errors.Is(err, sql.ErrNoRows) {
		return WriteResult{}, true, nil // another writer won the race: recompute on its version
	}
	if err != nil {
		return WriteResult{}, false, fmt.Errorf("state: update: %w", err)
	}
	opened := *row
	opened.SubjectHash, opened.Body, opened.FieldTimes, opened.Version = subjectHash, next.canon, next.timesJS, version
	opened.Bytes, opened.KeyID, opened.AgentVersion = len(next.canon), w.p.KeyID, w.agentVersion
	opened.UpdatedAt, opened.ExpiresAt, opened.ExpiresHour = next.now, next.expires, u.hour
	s.remember(w.t, lock, opened, next.fields, next.times)
	return stored(version), false, nil
}

// rowUpdate is what updateRow writes besides next: the sealed body and times, the subject
// hash and the expiry hour.
type rowUpdate struct {
	sealed      []byte
	sealedTimes string
	subjectHash string
	hour        int64
}

// applyUpdate runs the conditional update of row (prepared statements on a pool, bun's query
// in a transaction) and returns the new version; sql.ErrNoRows when row is no longer current.
// The indexed columns (subject_hash, expires_hour) are set only when they change, so a write
// within the same hour touches no index: PostgreSQL can update the row in place (HOT) and
// SQLite rewrites no index page.
func (s *Service) applyUpdate(ctx context.Context, idb bun.IDB, w *pendingWrite, row *models.AgentState, next *nextState, u rowUpdate) (int64, error) {
	reindex := u.subjectHash != row.SubjectHash || u.hour != row.ExpiresHour
	rev := w.t.config
	var version int64
	var err error
	if d, ok := idb.(*bun.DB); ok {
		if reindex {
			err = db.QueryOne(ctx, d, updateStateReindex, []any{&version}, u.sealed, u.sealedTimes, len(next.canon), w.p.KeyID, w.agentVersion,
				db.TimeArg(d, next.now), db.TimeArg(d, next.expires), u.subjectHash, u.hour, row.ID, row.Version, rev, rev)
		} else {
			err = db.QueryOne(ctx, d, updateState, []any{&version}, u.sealed, u.sealedTimes, len(next.canon), w.p.KeyID, w.agentVersion,
				db.TimeArg(d, next.now), db.TimeArg(d, next.expires), row.ID, row.Version, rev, rev)
		}
		return version, err
	}
	q := idb.NewUpdate().Model((*models.AgentState)(nil)).
		Set("body = ?", u.sealed).Set("field_times = ?", u.sealedTimes).Set("version = version + 1").
		Set("bytes = ?", len(next.canon)).Set("key_id = ?", w.p.KeyID).Set("agent_version = ?", w.agentVersion).
		Set("updated_at = ?", next.now).Set("expires_at = ?", next.expires)
	if reindex {
		q = q.Set("subject_hash = ?", u.subjectHash).Set("expires_hour = ?", u.hour)
	}
	err = q.Where("id = ? AND version = ?", row.ID, row.Version).Where(atConfigAlias, rev, rev).
		Returning("version").Scan(ctx, &version)
	return version, err
}

// remember keeps row, just written, as t's last-seen state, unless it was written inside a
// transaction (lock): that one is not committed yet, and may never be (a failed commit, a
// caller gone): a remembered row whose version another writer then commits would have the
// next write apply on content that was never stored. The state is forgotten instead.
func (s *Service) remember(t target, lock bool, row models.AgentState, fields strictjson.Object, times map[string]time.Time) {
	if lock {
		s.seen.drop(t)
		return
	}
	s.seen.put(t, row, fields, times)
}

// load returns the stored row of t's state through idb, opened (unsealed); errNoState when
// there is none. With lock the row is read FOR UPDATE (PostgreSQL; idb a transaction).
func (s *Service) load(ctx context.Context, idb bun.IDB, lock bool, t target) (*models.AgentState, error) {
	return s.loadRow(ctx, idb, lock, t, stateByScope)
}

// loadForRead is load for Read: only the columns a read serves and opens (stateForRead), and
// the row is not remembered (lastSeen wants it whole); a remembered row at another version is
// forgotten, so the next write reads the row instead of missing on it.
func (s *Service) loadForRead(ctx context.Context, t target) (*models.AgentState, error) {
	return s.loadRow(ctx, s.DB, false, t, stateForRead)
}

// loadRow is load with query (stateByScope or stateForRead) outside a transaction.
func (s *Service) loadRow(ctx context.Context, idb bun.IDB, lock bool, t target, query string) (*models.AgentState, error) {
	var row models.AgentState
	var err error
	rev := t.config
	if d, ok := idb.(*bun.DB); ok && !lock && query == stateForRead {
		err = scanForRead(ctx, d, &row, t, rev)
	} else if ok && !lock {
		err = db.QueryOne(ctx, d, query, []any{&row}, t.spaceID, t.scopeHash, t.agent, rev, rev)
	} else {
		q := idb.NewSelect().Model(&row).
			Where("space_id = ? AND scope_hash = ? AND agent = ?", t.spaceID, t.scopeHash, t.agent).
			Where(atConfigAlias, rev, rev)
		if lock {
			q = q.For("UPDATE")
		}
		err = q.Scan(ctx)
	}
	if errors.Is(err, sql.ErrNoRows) && rev >= 0 {
		// No row: no state, or the configuration the request assumed is gone.
		current, err := spaces.Revision(ctx, idb, t.spaceID, spaces.RevisionConfig)
		if err != nil {
			return nil, err
		}
		if current != rev {
			return nil, spaces.ErrStaleConfig
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		s.seen.drop(t) // deleted (erased, expired): nothing of it stays in memory
		return nil, errNoState
	}
	if err != nil {
		return nil, fmt.Errorf("state: load: %w", err)
	}
	row.Agent = t.agent // stateForRead leaves the column out: the statement selected t.agent's row
	if err := s.openRow(ctx, &row); err != nil {
		return nil, err
	}
	if query == stateForRead {
		if seen, ok := s.seen.get(t); ok && (seen.row.ID != row.ID || seen.row.Version != row.Version) {
			s.seen.drop(t)
		}
		return &row, nil
	}
	s.seen.put(t, row, nil, nil)
	return &row, nil
}

// atConfig is the condition the working-memory statements end with: the space's configuration
// revision is still the one the request's key and documents were read at (its two arguments:
// that revision, or -1 for a caller that assumed none). A replica that cached them is exact
// without invalidation messages (spaces.KeyCache).
const atConfig = ` AND (? < 0 OR COALESCE((SELECT revision FROM space_revisions WHERE space_revisions.space_id = agent_states.space_id AND space_revisions.name = 'config'), 0) = ?)`

// atConfigAlias is atConfig's condition in bun's query builder.
const atConfigAlias = `? < 0 OR COALESCE((SELECT revision FROM space_revisions WHERE space_revisions.space_id = ?TableAlias.space_id AND space_revisions.name = 'config'), 0) = ?`

// stateByScope is load's statement (prepared once per pool): every column of
// models.AgentState, when the configuration is still the one assumed.
const stateByScope = `SELECT id, space_id, scope_hash, scope_kind, agent, subject_hash, body, field_times, version, bytes, key_id, agent_version, created_at, updated_at, expires_at, expires_hour FROM agent_states WHERE space_id = ? AND scope_hash = ? AND agent = ?` + atConfig

// stateForRead is Read's statement (prepared once per pool): stateByScope with only the
// columns Read serves and openRow needs, so the driver converts fewer columns. Its times are
// read as stored (db.ScanTime): stateForReadSQLite on SQLite.
const stateForRead = `SELECT id, scope_hash, scope_kind, subject_hash, body, field_times, version, updated_at, expires_at FROM agent_states WHERE space_id = ? AND scope_hash = ? AND agent = ?` + atConfig

// stateForReadSQLite is stateForRead on SQLite, its times selected as their stored text
// (`+col`: no declared type, see db.ScanTime).
const stateForReadSQLite = `SELECT id, scope_hash, scope_kind, subject_hash, body, field_times, version, +updated_at AS updated_at, +expires_at AS expires_at FROM agent_states WHERE space_id = ? AND scope_hash = ? AND agent = ?` + atConfig

// scanForRead runs stateForRead (stateForReadSQLite on SQLite) for t at the assumed
// configuration revision rev and scans its row into row with database/sql directly (no
// model reflection), its times through db.ScanTime. No row is sql.ErrNoRows.
func scanForRead(ctx context.Context, d *bun.DB, row *models.AgentState, t target, rev int64) error {
	query := stateForRead
	if db.IsSQLite(d) {
		query = stateForReadSQLite
	}
	rows, err := db.QueryRows(ctx, d, query, t.spaceID, t.scopeHash, t.agent, rev, rev)
	if err != nil {
		return err
	}
	return db.ScanFirst(rows, &row.ID, &row.ScopeHash, &row.ScopeKind, &row.SubjectHash, &row.Body, &row.FieldTimes, &row.Version,
		db.ScanTime{T: &row.UpdatedAt}, db.ScanTime{T: &row.ExpiresAt})
}

// updateState is tryWrite's conditional update outside a transaction (prepared once per
// pool) when no indexed column changes: it applies only at the version read and the
// configuration assumed.
const updateState = `UPDATE agent_states SET body = ?, field_times = ?, version = version + 1, bytes = ?, key_id = ?, agent_version = ?, updated_at = ?, expires_at = ? WHERE id = ? AND version = ?` + atConfig + ` RETURNING version`

// updateStateReindex is updateState when the subject or the expiry hour changes.
const updateStateReindex = `UPDATE agent_states SET body = ?, field_times = ?, version = version + 1, bytes = ?, key_id = ?, agent_version = ?, updated_at = ?, expires_at = ?, subject_hash = ?, expires_hour = ? WHERE id = ? AND version = ?` + atConfig + ` RETURNING version`

// ExpiresHour is the Unix hour (seconds since the epoch / 3600) at or after t: the coarse
// expiry agent_states.expires_hour keeps for the retention sweep's index (WM-12). A state whose
// expires_at is at or before now has ExpiresHour(expires_at) <= ExpiresHour(now), so the sweep
// selects by the hour and then checks expires_at exactly.
func ExpiresHour(t time.Time) int64 {
	h := t.Unix() / 3600
	if t.Unix()%3600 != 0 || t.Nanosecond() != 0 {
		h++
	}
	return h
}

// live returns the fields of row still within retention at now, their last-write times, and
// the version callers see: 0 when there is no row or the whole state expired (WM-12).
func live(row *models.AgentState, schema spaces.ObjectType, now time.Time) (strictjson.Object, map[string]time.Time, int64) {
	if row == nil {
		return liveOf(nil, nil, nil, schema, now)
	}
	all, stamps := parseRow(row)
	return liveOf(row, all, stamps, schema, now)
}

// parseRow returns the fields of an opened row's body (canonical values) and each one's last
// write (the row's updated_at when its stamp is missing or unreadable).
func parseRow(row *models.AgentState) (strictjson.Object, map[string]time.Time) {
	all := bodyFields(row)
	stamps := make(map[string]string, len(all))
	if ok, err := strictjson.Members([]byte(row.FieldTimes), func(name string, value []byte) error {
		if s, ok := strictjson.PlainString(value); ok {
			stamps[name] = s
			return nil
		}
		return errNotQuick
	}); !ok || err != nil {
		stamps = nil
		_ = json.Unmarshal([]byte(row.FieldTimes), &stamps) // written by this package as a JSON object; an unreadable one reads as no stamps
	}
	times := make(map[string]time.Time, len(all))
	for name := range all {
		at, err := time.Parse(time.RFC3339Nano, stamps[name])
		if err != nil {
			at = row.UpdatedAt.UTC()
		}
		times[name] = at
	}
	return all, times
}

// bodyFields returns the fields of an opened row's body (canonical values).
func bodyFields(row *models.AgentState) strictjson.Object {
	all := strictjson.Object{}
	if ok, _ := strictjson.Members(row.Body, func(name string, value []byte) error {
		all[name] = value
		return nil
	}); !ok {
		all = nil
		_ = json.Unmarshal(row.Body, &all) // validated as a JSON object when written; an unreadable one reads as empty
	}
	return all
}

// fieldsOutliveState reports whether every field of schema lives as long as the state (no
// retention of its own shorter than the state's): then a live state's fields are all live,
// whatever their last writes (WM-12).
func fieldsOutliveState(schema spaces.ObjectType) bool {
	st := schema.StateTTL()
	for name := range schema.Retention {
		if name != "state" && schema.FieldTTL(name) < st {
			return false
		}
	}
	return true
}

// liveOf is live on row's fields and times already parsed (parseRow); it only reads them.
func liveOf(row *models.AgentState, all strictjson.Object, stamps map[string]time.Time, schema spaces.ObjectType, now time.Time) (strictjson.Object, map[string]time.Time, int64) {
	fields, times := make(strictjson.Object, len(all)), make(map[string]time.Time, len(all))
	if row == nil || !now.Before(row.ExpiresAt.UTC()) {
		return fields, times, 0
	}
	for name, raw := range all {
		at := stamps[name]
		// A field with a retention of its own shorter than the state's expires that long
		// after its own last write; any other field lives as long as the state does.
		if ttl := schema.FieldTTL(name); ttl < schema.StateTTL() && !now.Before(at.Add(ttl)) {
			continue
		}
		fields[name] = raw
		times[name] = at
	}
	return fields, times, row.Version
}

// Read returns the state of scope and agent as p may see it (WM-9, WM-12): expired fields
// are never served, and a never-written or expired state reads as version 0.
func (s *Service) Read(ctx context.Context, p auth.Principal, req ReadRequest) (ReadResult, error) {
	return s.ReadAt(ctx, spaces.Snapshot{}, p, req)
}

// ReadAt is Read on snap, as WriteAt is Write: a state read at a configuration revision that
// is no longer snap's answers spaces.ErrStaleConfig.
func (s *Service) ReadAt(ctx context.Context, snap spaces.Snapshot, p auth.Principal, req ReadRequest) (ReadResult, error) {
	t, err := s.resolve(ctx, snap, p, req.Scope, req.Agent, "")
	if err != nil {
		return ReadResult{}, err
	}
	row, err := s.loadForRead(ctx, t)
	if errors.Is(err, errNoState) {
		return ReadResult{Body: json.RawMessage("{}"), Version: 0}, nil
	}
	if err != nil {
		return ReadResult{}, err
	}
	now := s.Now().UTC()
	body := row.Body
	var version int64
	if fieldsOutliveState(t.schema) {
		// No field expires before the state, so a live state is served whole: its stored
		// body as it is, canonical already (every write stores a strictjson Join of canonical
		// values, the bytes Canonical would give again), neither parsed nor encoded again.
		if now.Before(row.ExpiresAt.UTC()) {
			version = row.Version
		}
	} else {
		var fields strictjson.Object
		fields, _, version = live(row, t.schema, now)
		body = fields.Canonical()
	}
	if version == 0 {
		return ReadResult{Body: json.RawMessage("{}"), Version: 0}, nil
	}
	at := row.UpdatedAt.UTC()
	return ReadResult{Body: json.RawMessage(body), Version: version, UpdatedAt: &at}, nil
}

// ListBySubject returns what operators may see of the states tied to any of subjectHashes
// (their scope or their subject member names the customer), newest first (WM-11).
func (s *Service) ListBySubject(ctx context.Context, spaceID string, subjectHashes []string) ([]Meta, error) {
	out := []Meta{}
	if len(subjectHashes) == 0 {
		return out, nil
	}
	var rows []models.AgentState
	if err := s.DB.NewSelect().Model(&rows).
		Column("agent", "scope_kind", "bytes", "version", "created_at", "updated_at", "expires_at").
		Where("space_id = ? AND subject_hash IN (?)", spaceID, bun.In(subjectHashes)).
		Where("expires_at > ?", s.Now().UTC()).
		Order("updated_at DESC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("state: list by subject: %w", err)
	}
	for _, r := range rows {
		out = append(out, Meta{Agent: r.Agent, ScopeKind: r.ScopeKind, Bytes: r.Bytes, Version: r.Version,
			CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()})
	}
	return out, nil
}

func (s *Service) maskValue(ctx context.Context, spaceID string, raw json.RawMessage) (json.RawMessage, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return raw, nil
	}
	changed := false
	var walk func(any) (any, error)
	walk = func(x any) (any, error) {
		switch x := x.(type) {
		case string:
			m, err := s.Masker.MaskText(ctx, spaceID, x)
			if err != nil {
				return nil, err
			}
			if m != x {
				changed = true
			}
			return m, nil
		case []any:
			for i := range x {
				y, err := walk(x[i])
				if err != nil {
					return nil, err
				}
				x[i] = y
			}
		case map[string]any:
			for k := range x {
				y, err := walk(x[k])
				if err != nil {
					return nil, err
				}
				x[k] = y
			}
		}
		return x, nil
	}
	v, err := walk(v)
	if err != nil {
		return nil, err
	}
	if !changed {
		return raw, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("state: mask: %w", err)
	}
	return json.RawMessage(bytes.TrimSpace(b.Bytes())), nil
}

// checkValue checks raw against the declared type of field name; null is always a value.
func checkValue(name string, f spaces.Field, raw json.RawMessage) error {
	if ok, decided := checkScalar(f, raw); decided {
		if ok {
			return nil
		}
		return badValue(name, f)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || v == nil {
		return nil
	}
	ok := true
	switch f.Type {
	case "string", "text", "date", "datetime":
		_, ok = v.(string)
	case "enum":
		str, isStr := v.(string)
		ok = isStr && (len(f.Values) == 0 || slices.Contains(f.Values, str))
	case "integer":
		n, isNum := v.(json.Number)
		_, err := n.Int64()
		ok = isNum && err == nil
	case "number":
		_, ok = v.(json.Number)
	case "boolean":
		_, ok = v.(bool)
	case "object":
		_, ok = v.(map[string]any)
	case "array":
		_, ok = v.([]any)
	}
	if !ok {
		return badValue(name, f)
	}
	return nil
}

// checkScalar is checkValue on a value that is a number, a literal or a string without
// escapes, read from its first byte: decided is false for any other value (an object, an
// array, a string with escapes, an enum), which checkValue then decodes.
func checkScalar(f spaces.Field, raw json.RawMessage) (ok, decided bool) {
	if len(raw) == 0 {
		return false, false
	}
	switch c := raw[0]; {
	case c == 'n':
		return true, true // null is always a value
	case c == '"':
		if _, plain := strictjson.PlainString(raw); !plain {
			return false, false
		}
		switch f.Type {
		case "string", "text", "date", "datetime":
			return true, true
		case "integer", "number", "boolean", "object", "array":
			return false, true
		}
	case c == 't' || c == 'f':
		switch f.Type {
		case "boolean":
			return true, true
		case "string", "text", "date", "datetime", "integer", "number", "object", "array":
			return false, true
		}
	case c == '-' || (c >= '0' && c <= '9'):
		switch f.Type {
		case "number":
			return true, true
		case "integer":
			_, err := strconv.ParseInt(string(raw), 10, 64)
			return err == nil, true
		case "string", "text", "date", "datetime", "boolean", "object", "array":
			return false, true
		}
	}
	return false, false
}

// badValue is checkValue's refusal of field name's value.
func badValue(name string, f spaces.Field) error {
	what := f.Type
	if f.Type == "enum" && len(f.Values) > 0 {
		what = "one of " + strings.Join(f.Values, ", ")
	}
	return fault.New(fault.Invalid, "invalid_field_value", "field %q must be %s", name, what).With("member", "body."+name)
}

func stored(v int64) WriteResult { return WriteResult{Stored: true, Version: v} }

func notDeclared(version int64, fields []string) WriteResult {
	reason := ReasonNotDeclared
	return WriteResult{Stored: false, Version: version, Reason: &reason, Fields: fields}
}

func conflict(current int64) error { return &ConflictError{Current: current} }

func invalid(member, msg string) error {
	return fault.New(fault.Invalid, "invalid_member", "%s", msg).With("member", member)
}

// encodeTimes is the stored field_times of times: a JSON object of each field's last write
// (RFC 3339, UTC, nanoseconds), names sorted, the same bytes as encoding/json's encoding of
// the map of formatted times, without its reflection and intermediate map.
func encodeTimes(times map[string]time.Time) string {
	names := make([]string, 0, len(times))
	size := 2
	for name := range times {
		names = append(names, name)
		size += len(name) + len(`"":"2006-01-02T15:04:05.999999999Z",`)
	}
	sort.Strings(names)
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		if plainName(name) {
			b = append(b, '"')
			b = append(b, name...)
			b = append(b, '"')
		} else {
			q, _ := json.Marshal(name) // escapes as encoding/json does in a map key
			b = append(b, q...)
		}
		b = append(b, ':', '"')
		b = times[name].UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, '}')
	return string(b)
}

// plainName reports whether encoding/json writes name as a JSON string unchanged between
// quotes: printable ASCII with no quote, backslash or HTML-sensitive character.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func sortedKeys(o strictjson.Object) []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
