package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ContextRequest is the body of POST /v1/context (CTX-2, docs/context.md). Zero members are
// left out and take the service's defaults.
type ContextRequest struct {
	// View orders the block as GET /v1/agent-memory/block?view= does.
	View string `json:"view,omitempty"`
	// Task names the task: its object types order the block after the view and select the
	// task section.
	Task *ContextTask `json:"task,omitempty"`
	// MaxTokens is the one budget of the whole answer, 50..10000 cl100k tokens (0: 2000).
	MaxTokens int `json:"max_tokens,omitempty"`
	// BlockMaxTokens is the system block's share, 50..2000 (0: 300, or MaxTokens when smaller).
	BlockMaxTokens int `json:"block_max_tokens,omitempty"`
	// IncludeAgentMemory appends the task section (up to 200 tokens of notes tagged with the
	// task's object types) at the end of the context; it needs Task.ObjectTypes.
	IncludeAgentMemory bool `json:"include_agent_memory,omitempty"`
	// Knowledge asks for fenced knowledge evidence in the context (the key needs
	// knowledge:read or context); nil asks for notes only.
	Knowledge *ContextKnowledge `json:"knowledge,omitempty"`
}

// ContextTask is the task a context is for: ID (at most 200 printable characters, recorded in the
// receipt) and ObjectTypes (at most 8 lower-case tags).
type ContextTask struct {
	ID          string   `json:"id,omitempty"`
	ObjectTypes []string `json:"object_types,omitempty"`
}

// ContextKnowledge is the retrieval part of a context call, as POST /v1/knowledge/retrieve
// takes it without max_tokens (the evidence gets what the budget leaves): KBs (1-10 base
// ids), Query (1-1000 characters), TopK (1..50, 0: the first base's), MinScore (0..1, 0 sends
// nothing) and Filters (sent member for member when not nil).
type ContextKnowledge struct {
	KBs      []string       `json:"kbs"`
	Query    string         `json:"query"`
	TopK     int            `json:"top_k,omitempty"`
	MinScore float64        `json:"min_score,omitempty"`
	Filters  map[string]any `json:"filters,omitempty"`
}

// ContextTokens are an answer's exact cl100k token counts per part; Total (the system block
// plus the context as delivered) never passes the request's MaxTokens.
type ContextTokens struct {
	SystemBlock int `json:"system_block"`
	TaskNotes   int `json:"task_notes"`
	Knowledge   int `json:"knowledge"`
	Total       int `json:"total"`
}

// Context is the answer of a context call. SystemBlock goes after the agent's instructions
// and before the customer's context; Context holds the fenced knowledge evidence and then
// the task section (see SystemPrompt). NoteIDs are the block's notes, TaskNoteIDs the task
// section's, ChunkIDs the chunks in the context; Enabled is whether agent memory is on;
// KnowledgeMode the retrieval's mode ("" without knowledge). NotModified and Fresh say how the
// client's cache served it, as on Block.
type Context struct {
	SystemBlock   string        `json:"system_block"`
	Context       string        `json:"context"`
	Tokens        ContextTokens `json:"tokens"`
	ETag          string        `json:"etag"`
	Enabled       bool          `json:"enabled"`
	NoteIDs       []string      `json:"note_ids"`
	TaskNoteIDs   []string      `json:"task_note_ids"`
	ChunkIDs      []string      `json:"chunk_ids"`
	KnowledgeMode string        `json:"knowledge_mode"`
	NotModified   bool          `json:"-"`
	Fresh         bool          `json:"-"`
}

// contextBody is a ContextRequest as sent: source_id is Options.Agent (a person key with role
// integration reading as that agent).
type contextBody struct {
	ContextRequest
	SourceID string `json:"source_id,omitempty"`
}

// Context runs the context call (POST /v1/context, CTX-2): the system block and the context
// (knowledge evidence, then the task section) within one token budget, with one receipt on
// the service naming every note and chunk delivered. The answer is cached per call shape (the
// request body's canonical JSON) exactly as Block's (CTX-4): no request inside the freshness
// period, then If-None-Match. Errors are *Error: 400 invalid_member naming the member (view,
// task.*, max_tokens, block_max_tokens, include_agent_memory, knowledge.*), 403
// scope_required or feature_disabled, 404 knowledge_base_not_found, ErrUnavailable for 503
// embedder_unavailable.
func (c *Client) Context(ctx context.Context, req ContextRequest) (Context, error) {
	body, err := json.Marshal(contextBody{ContextRequest: req, SourceID: c.opt.Agent})
	if err != nil {
		return Context{}, fmt.Errorf("sdk: encode: %w", err)
	}
	v, fresh, notModified, err := c.cachedGet("context "+string(body), func(etag string) (any, http.Header, int, error) {
		var headers []string
		if etag != "" {
			headers = []string{"If-None-Match", etag}
		}
		var a Context
		h, status, err := c.do(ctx, "POST", "/v1/context", encoded(body), &a, headers...)
		if a.ETag == "" {
			a.ETag = h.Get("ETag")
		}
		return a, h, status, err
	})
	if err != nil {
		return Context{}, err
	}
	a := v.(Context)
	a.Fresh, a.NotModified = fresh, notModified
	return a, nil
}

// SystemPrompt composes a system prompt in the spec's order (AM-4, agent-memory: "the block
// after the agent's instructions and before the customer's context"): instructions, then the
// notes block (Block.Text or Context.SystemBlock), then the context (Context.Context, or the
// customer's context you hold), joined by one blank line ("\n\n"); empty parts are skipped
// and the others kept byte for byte, as the Python and TypeScript SDKs do, so the prompt's
// prefix a provider caches stays the same for every customer.
func SystemPrompt(instructions, block, context string) string {
	parts := make([]string, 0, 3)
	for _, p := range []string{instructions, block, context} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "\n\n")
}
