package sdk

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Note is an agent-memory note (AM-1), as POST /v1/agent-memory/notes takes it and
// GET /v1/agent-memory/notes/{id} answers it. Remember sends only Kind, Title, Body, Tags,
// Visibility, Evidence, ValidUntil and SourceID; the other fields are set by the service.
type Note struct {
	ID               string     `json:"id,omitempty"`
	Version          int        `json:"version,omitempty"`
	SupersedesNoteID string     `json:"supersedes_note_id,omitempty"`
	SourceID         string     `json:"source_id,omitempty"`
	Vendor           string     `json:"vendor,omitempty"`
	Kind             string     `json:"kind"`
	Title            string     `json:"title"`
	Body             string     `json:"body"`
	Tags             []string   `json:"tags,omitempty"`
	Visibility       string     `json:"visibility,omitempty"`
	Evidence         *Evidence  `json:"evidence,omitempty"`
	Origin           string     `json:"origin,omitempty"`
	Status           string     `json:"status,omitempty"`
	ValidUntil       *time.Time `json:"valid_until,omitempty"`
	ProposalID       string     `json:"proposal_id,omitempty"`
	CreatedAt        time.Time  `json:"created_at,omitzero"`
	UpdatedAt        time.Time  `json:"updated_at,omitzero"`
	RetiredAt        *time.Time `json:"retired_at,omitempty"`
}

// Evidence names the conversation or task a note comes from (the id only).
type Evidence struct {
	ConversationID string `json:"conversation_id,omitempty"`
	TaskID         string `json:"task_id,omitempty"`
}

// Remembered is the answer of Remember: the stored Note (201), or, when the space takes
// agents' notes only through a person's approval (writes: human_only), the ProposalID (202).
// Replayed is true when an Idempotency-Key matched an earlier write. DuplicateOf is set
// (200) when the note was identical to an active note of the same source (kind, title, body,
// tags and visibility, white space and tag order aside): nothing was stored, Note is that
// existing note and DuplicateOf its id.
type Remembered struct {
	Note        *Note
	ProposalID  string
	Replayed    bool
	DuplicateOf string
	// UnknownTags are the written tags outside the space's vocabulary (CTX-1): the note is
	// stored all the same, but no view names them (a typo to fix with a new version).
	UnknownTags []string
}

// Remember writes a note through the personal-data gate (POST /v1/agent-memory/notes).
// idempotencyKey (optional, at most 200 printable ASCII characters) makes a retry return the
// first answer. n.SourceID (or Options.Agent) is sent only for a person key with role
// integration writing for an agent. Refusals are *Error: ErrPersonalData (with Kinds, never
// values), ErrRateLimited (with RetryAfter), ErrUnavailable (with RetryAfter), and 400/403/409
// with their Code (e.g. invalid_member, feature_disabled, note_cap_reached).
func (c *Client) Remember(ctx context.Context, n Note, idempotencyKey string) (Remembered, error) {
	var headers []string
	if idempotencyKey != "" {
		headers = []string{"Idempotency-Key", idempotencyKey}
	}
	body := map[string]any{"kind": n.Kind, "title": n.Title, "body": n.Body}
	if len(n.Tags) > 0 {
		body["tags"] = n.Tags
	}
	if n.Visibility != "" {
		body["visibility"] = n.Visibility
	}
	if n.Evidence != nil {
		body["evidence"] = n.Evidence
	}
	if n.ValidUntil != nil {
		body["valid_until"] = n.ValidUntil
	}
	if src := cmp.Or(n.SourceID, c.opt.Agent); src != "" {
		body["source_id"] = src
	}
	var raw json.RawMessage
	h, status, err := c.do(ctx, "POST", "/v1/agent-memory/notes", body, &raw, headers...)
	if err != nil {
		return Remembered{}, err
	}
	out := Remembered{Replayed: h.Get("Idempotent-Replayed") == "true"}
	if status == http.StatusAccepted {
		var p struct {
			ProposalID  string   `json:"proposal_id"`
			UnknownTags []string `json:"unknown_tags"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return Remembered{}, fmt.Errorf("sdk: decode answer: %w", err)
		}
		out.ProposalID, out.UnknownTags = p.ProposalID, p.UnknownTags
		return out, nil
	}
	var note struct {
		Note
		DuplicateOf string   `json:"duplicate_of"`
		UnknownTags []string `json:"unknown_tags"`
	}
	if err := json.Unmarshal(raw, &note); err != nil {
		return Remembered{}, fmt.Errorf("sdk: decode answer: %w", err)
	}
	out.Note = &note.Note
	out.DuplicateOf, out.UnknownTags = note.DuplicateOf, note.UnknownTags
	if out.DuplicateOf == "" && !out.Replayed {
		c.forgetAnswers() // a new note: this client's next block or context shows it
	}
	return out, nil
}

// BlockOptions select the prompt block: MaxTokens (50..2000, default 300), Tags and View
// order the notes whose tags match first.
type BlockOptions struct {
	MaxTokens int
	Tags      []string
	View      string
}

// Block is the notes block ready for a prompt (AM-4).
type Block struct {
	Text    string   `json:"text"`
	Enabled bool     `json:"enabled"`
	NoteIDs []string `json:"note_ids"`
	Tokens  int      `json:"tokens"`
	ETag    string   `json:"-"`
	// NotModified is true when this call returned the client's cached answer unchanged: the
	// service answered 304 to If-None-Match, or (Fresh) no request was needed.
	NotModified bool `json:"-"`
	// Fresh is true when this call sent no request: the client's cached answer was inside its
	// freshness period (the answer's Cache-Control max-age, CTX-4). NotModified is then true.
	Fresh bool `json:"-"`
}

// Block returns the notes block (GET /v1/agent-memory/block). The client caches the answer
// per call shape (MaxTokens, Tags, View and Options.Agent, CTX-4): inside the freshness period
// the service sent (Cache-Control max-age, the space's agent_memory.cache_seconds) a call sends
// no request at all (Fresh and NotModified); after it, the call revalidates with
// If-None-Match, and a 304 renews the period (NotModified). "no-cache" revalidates every call. A note this client
// writes with Remember drops its cached answers, so it reads its own write at once; notes
// others write show up when the period ends. Errors are *Error (400 invalid_member naming
// max_tokens, tags or view; 403 scope_required).
func (c *Client) Block(ctx context.Context, opt BlockOptions) (Block, error) {
	q := map[string]string{"tags": strings.Join(opt.Tags, ","), "view": opt.View, "source_id": c.opt.Agent}
	if opt.MaxTokens > 0 {
		q["max_tokens"] = strconv.Itoa(opt.MaxTokens)
	}
	path := "/v1/agent-memory/block" + query(q)
	v, fresh, notModified, err := c.cachedGet("block "+path, func(etag string) (any, http.Header, int, error) {
		var headers []string
		if etag != "" {
			headers = []string{"If-None-Match", etag}
		}
		var b Block
		h, status, err := c.do(ctx, "GET", path, nil, &b, headers...)
		b.ETag = h.Get("ETag")
		return b, h, status, err
	})
	if err != nil {
		return Block{}, err
	}
	b := v.(Block)
	b.Fresh, b.NotModified = fresh, notModified
	return b, nil
}

// Found is the answer of Find: Enabled is whether agent memory is on for the space (false:
// Notes is empty because the feature is off, not because nothing matched).
type Found struct {
	Enabled bool   `json:"enabled"`
	Notes   []Note `json:"notes"`
	// Run is the run's figures when the search named one (FindInRun); BudgetExhausted says
	// the run had nothing left (Notes is then empty).
	Run             *RunReport `json:"run,omitempty"`
	BudgetExhausted bool       `json:"budget_exhausted,omitempty"`
}

// Search finds notes by words and tags, with the same visibility as the block.
func (c *Client) Search(ctx context.Context, q string, tags []string, limit int) ([]Note, error) {
	found, err := c.Find(ctx, q, tags, limit)
	return found.Notes, err
}

// Find is Search with the answer's Enabled (GET /v1/agent-memory/search): q's words must all
// match a note's title, body or tags, every tag of tags must be on it, limit is 1..50 (0: 10).
// Errors are *Error (400 invalid_member, 403 scope_required).
func (c *Client) Find(ctx context.Context, q string, tags []string, limit int) (Found, error) {
	return c.FindInRun(ctx, q, tags, limit, nil)
}

// FindInRun is Find drawing on run's budget (CTX-3; nil: no run), sent as the headers
// Agent-Run-Id and Agent-Run-Budget.
func (c *Client) FindInRun(ctx context.Context, q string, tags []string, limit int, run *Run) (Found, error) {
	params := map[string]string{"q": q, "tags": strings.Join(tags, ","), "source_id": c.opt.Agent}
	if limit > 0 {
		params["limit"] = strconv.Itoa(limit)
	}
	var headers []string
	if run != nil {
		headers = append(headers, "Agent-Run-Id", run.ID)
		if run.BudgetTokens > 0 {
			headers = append(headers, "Agent-Run-Budget", strconv.Itoa(run.BudgetTokens))
		}
	}
	var out Found
	if _, _, err := c.do(ctx, "GET", "/v1/agent-memory/search"+query(params), nil, &out, headers...); err != nil {
		return Found{}, err
	}
	if out.Notes == nil {
		out.Notes = []Note{}
	}
	return out, nil
}
