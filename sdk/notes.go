package sdk

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Note is an agent-memory note (AM-1).
type Note struct {
	ID               string     `json:"id,omitempty"`
	Kind             string     `json:"kind"`
	Title            string     `json:"title"`
	Body             string     `json:"body"`
	Tags             []string   `json:"tags,omitempty"`
	Visibility       string     `json:"visibility,omitempty"`
	Evidence         *Evidence  `json:"evidence,omitempty"`
	ValidUntil       *time.Time `json:"valid_until,omitempty"`
	Origin           string     `json:"origin,omitempty"`
	SourceID         string     `json:"source_id,omitempty"`
	Version          int        `json:"version,omitempty"`
	SupersedesNoteID string     `json:"supersedes_note_id,omitempty"`
	Status           string     `json:"status,omitempty"`
}

// Evidence names the conversation or task a note comes from (the id only).
type Evidence struct {
	ConversationID string `json:"conversation_id,omitempty"`
	TaskID         string `json:"task_id,omitempty"`
}

// Remembered is the answer of Remember: the stored Note, or (when the space takes agents'
// notes only through a person's approval) the ProposalID.
type Remembered struct {
	Note       *Note
	ProposalID string
}

// Remember writes a note through the personal-data gate. idempotencyKey (optional) makes a
// retry return the first answer. Refusals are *Error: ErrPersonalData (with Kinds),
// ErrRateLimited (with RetryAfter), ErrUnavailable.
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
	var raw map[string]json.RawMessage
	_, status, err := c.do(ctx, "POST", "/v1/agent-memory/notes", body, &raw, headers...)
	if err != nil {
		return Remembered{}, err
	}
	if status == http.StatusAccepted {
		var id string
		_ = json.Unmarshal(raw["proposal_id"], &id)
		return Remembered{ProposalID: id}, nil
	}
	var note Note
	data, _ := json.Marshal(raw)
	if err := json.Unmarshal(data, &note); err != nil {
		return Remembered{}, err
	}
	return Remembered{Note: &note}, nil
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
}

// Block returns the notes block. The client caches it per options and revalidates it with
// If-None-Match, so fetching it every turn costs a 304.
func (c *Client) Block(ctx context.Context, opt BlockOptions) (Block, error) {
	q := map[string]string{"tags": strings.Join(opt.Tags, ","), "view": opt.View}
	if opt.MaxTokens > 0 {
		q["max_tokens"] = strconv.Itoa(opt.MaxTokens)
	}
	path := "/v1/agent-memory/block" + query(q)
	c.mu.Lock()
	cached, ok := c.blocks[path]
	c.mu.Unlock()
	var headers []string
	if ok && cached.ETag != "" {
		headers = []string{"If-None-Match", cached.ETag}
	}
	var b Block
	h, status, err := c.do(ctx, "GET", path, nil, &b, headers...)
	if err != nil {
		return Block{}, err
	}
	if status == http.StatusNotModified {
		return cached, nil
	}
	b.ETag = h.Get("ETag")
	c.mu.Lock()
	c.blocks[path] = b
	c.mu.Unlock()
	return b, nil
}

// Search finds notes by words and tags, with the same visibility as the block.
func (c *Client) Search(ctx context.Context, q string, tags []string, limit int) ([]Note, error) {
	params := map[string]string{"q": q, "tags": strings.Join(tags, ",")}
	if limit > 0 {
		params["limit"] = strconv.Itoa(limit)
	}
	var out struct {
		Notes []Note `json:"notes"`
	}
	if _, _, err := c.do(ctx, "GET", "/v1/agent-memory/search"+query(params), nil, &out); err != nil {
		return nil, err
	}
	return out.Notes, nil
}
