// Package promptctx builds the answer of POST /v1/context (CTX-2): the agent-notes block for
// the prompt, and a context holding the fenced knowledge evidence and the task's note section,
// all within one token budget (cl100k_base, the block's tokenizer), with one receipt naming
// every note and chunk delivered.
package promptctx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/internal/notes"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/internal/runs"
)

// Budget limits of a context call, in cl100k_base tokens.
const (
	MinTokens     = notes.MinBlockTokens
	MaxTokens     = 10000
	DefaultTokens = 2000
	MaxTaskIDLen  = 200
)

// separator joins the context's parts (knowledge evidence, then the task section).
const separator = "\n"

// Request is the body of POST /v1/context. MaxTokens (50..10000, default 2000) is the one
// budget of the whole answer; BlockMaxTokens (50..2000, default 300, at most MaxTokens) caps
// the system block within it. View orders the block (CTX-1); Task.ObjectTypes are the task's
// tags (they order the block after the view, AM-4, and select the task section);
// IncludeAgentMemory appends the task section (up to 200 tokens of notes tagged with the
// task's object types) at the end of the context; Knowledge retrieves evidence (its kbs,
// query, top_k, min_score and filters as POST /v1/knowledge/retrieve's) into what the budget leaves.
// SourceID is named by a person (role integration) reading as an agent.
type Request struct {
	View               string     `json:"view,omitempty"`
	Task               *Task      `json:"task,omitempty"`
	MaxTokens          int        `json:"max_tokens,omitempty"`
	BlockMaxTokens     int        `json:"block_max_tokens,omitempty"`
	IncludeAgentMemory bool       `json:"include_agent_memory,omitempty"`
	Knowledge          *Knowledge `json:"knowledge,omitempty"`
	SourceID           string     `json:"source_id,omitempty"`
	// Run names the run the call belongs to (CTX-3; nil: none): the answer is built within
	// what the run has left (inRun).
	Run *runs.Run `json:"run,omitempty"`
}

// Task is the task a context is for: ID (at most 200 printable characters, recorded in the
// receipt) and ObjectTypes (at most 8 lower-case tags).
type Task struct {
	ID          string   `json:"id,omitempty"`
	ObjectTypes []string `json:"object_types,omitempty"`
}

// Knowledge is the retrieval part of a context call (KN-4).
type Knowledge struct {
	KBs      []string           `json:"kbs"`
	Query    string             `json:"query"`
	TopK     int                `json:"top_k,omitempty"`
	MinScore float64            `json:"min_score,omitempty"`
	Filters  *knowledge.Filters `json:"filters,omitempty"`
}

// Tokens are an answer's token counts: each part's exact count and Total, the system block
// plus the context as delivered (its parts joined by a newline), never above the budget.
type Tokens struct {
	SystemBlock int `json:"system_block"`
	TaskNotes   int `json:"task_notes"`
	Knowledge   int `json:"knowledge"`
	Total       int `json:"total"`
}

// Answer is the answer of a context call. SystemBlock goes after the agent's instructions and
// before the customer's context; Context holds the knowledge evidence and then the task
// section. NoteIDs are the block's notes, TaskNoteIDs the task section's, ChunkIDs the chunks
// in the context; Enabled is whether agent memory is on; KnowledgeMode the retrieval's mode
// ("" without knowledge). ETag is a strong validator of the answer; NotModified is set when
// the request's If-None-Match named it.
type Answer struct {
	SystemBlock   string   `json:"system_block"`
	Context       string   `json:"context"`
	Tokens        Tokens   `json:"tokens"`
	ETag          string   `json:"etag"`
	Enabled       bool     `json:"enabled"`
	NoteIDs       []string `json:"note_ids"`
	TaskNoteIDs   []string `json:"task_note_ids"`
	ChunkIDs      []string `json:"chunk_ids"`
	KnowledgeMode string   `json:"knowledge_mode"`
	NotModified   bool     `json:"-"`
	// MaxAge is the space's freshness period in seconds (spaces.Features.ContextMaxAge),
	// sent as Cache-Control max-age (CTX-4).
	MaxAge int `json:"-"`
	// Run is the run's figures after the call (CTX-3; nil without a run); BudgetExhausted
	// says the run had too little left for any part (then every part is empty).
	Run             *runs.Report `json:"run,omitempty"`
	BudgetExhausted bool         `json:"budget_exhausted,omitempty"`

	cut bool // the run's budget left something out (Run.Cut)
}

// Service answers context calls. Receipts group-commits the receipts (nil: one transaction
// each on DB).
type Service struct {
	DB        *bun.DB
	Notes     *notes.Service
	Knowledge *knowledge.Service
	Receipts  *receipts.Log
	Now       func() time.Time
	// Runs keeps the budgets of runs (CTX-3); without it a call naming a run fails.
	Runs *runs.Store
}

// Build answers req for p (CTX-2). Scopes: an agent key reads notes with agent_memory or
// context and knowledge with knowledge:read or context (AM-10, KN-1); a person needs role
// integration and names source_id. Phases: validate, notes (block and task section, one read),
// knowledge (fenced into what the budget leaves), compose (the one budget held exactly), then
// one agent_memory receipt "context.read" naming every note and chunk delivered (a 304
// included, with not_modified). Errors: fault.Invalid naming the member (task.*, max_tokens,
// block_max_tokens, include_agent_memory, view, and the retrieval's own), fault.Forbidden
// scope_required or role_required, the retrieval's (feature_disabled, knowledge_base_not_found,
// embedder_unavailable). Nothing is delivered or recorded on an error.
func (s *Service) Build(ctx context.Context, p auth.Principal, req Request, ifNoneMatch string) (Answer, error) {
	if err := req.normalize(); err != nil {
		return Answer{}, err
	}
	cn, ret, kbs, err := s.parts(ctx, p, req, req.MaxTokens)
	if err != nil {
		return Answer{}, err
	}
	a, err := compose(cn, ret, req.MaxTokens)
	if err != nil {
		return Answer{}, err
	}
	var d *runs.Draw
	if req.Run != nil {
		if a, cn, d, err = s.inRun(ctx, p, req, cn, ret, a); err != nil {
			return Answer{}, err
		}
	}
	a.NotModified = matches(ifNoneMatch, a.ETag)
	f, err := s.Notes.Docs.Features(ctx, p.SpaceID)
	if err != nil {
		d.Abandon(ctx)
		return Answer{}, err
	}
	a.MaxAge = f.ContextMaxAge()
	if d == nil {
		return a, s.record(ctx, p, req, cn, a, kbs, nil)
	}
	return s.settle(ctx, p, req, cn, a, kbs, d)
}

// parts reads the notes part (block and task section) within budget and, when asked for,
// the knowledge retrieval (ranked, fenced later by compose).
func (s *Service) parts(ctx context.Context, p auth.Principal, req Request, budget int) (notes.ContextNotes, knowledge.Retrieval, []string, error) {
	cn, err := s.notesPart(ctx, p, req, budget)
	if err != nil {
		return notes.ContextNotes{}, knowledge.Retrieval{}, nil, err
	}
	var ret knowledge.Retrieval
	var kbs []string
	if req.Knowledge != nil {
		kreq := knowledge.RetrieveRequest{Query: req.Knowledge.Query, KBs: req.Knowledge.KBs, TopK: req.Knowledge.TopK,
			MinScore: req.Knowledge.MinScore, Filters: req.Knowledge.Filters}
		if ret, kbs, err = s.Knowledge.RetrieveForContext(ctx, p, kreq, 0); err != nil {
			return notes.ContextNotes{}, knowledge.Retrieval{}, nil, err
		}
	}
	return cn, ret, kbs, nil
}

// notesPart reads the block (within block_max_tokens, at most budget) and the task section
// (within what the block leaves of budget).
func (s *Service) notesPart(ctx context.Context, p auth.Principal, req Request, budget int) (notes.ContextNotes, error) {
	var tags []string
	if req.Task != nil {
		tags = req.Task.ObjectTypes
	}
	taskTokens := 0
	if req.IncludeAgentMemory {
		taskTokens = notes.TaskSectionTokens
	}
	return s.Notes.Context(ctx, p, notes.ContextRequest{View: req.View, Tags: tags, SourceID: req.SourceID,
		BlockTokens: min(req.BlockMaxTokens, budget), TaskTags: tags, TaskTokens: taskTokens, Budget: budget})
}

// normalize applies the defaults and checks the limits (fault.Invalid naming the member).
func (r *Request) normalize() error {
	if r.MaxTokens == 0 {
		r.MaxTokens = DefaultTokens
	}
	if r.MaxTokens < MinTokens || r.MaxTokens > MaxTokens {
		return invalid("max_tokens", "max_tokens is from %d to %d", MinTokens, MaxTokens)
	}
	if r.BlockMaxTokens == 0 {
		r.BlockMaxTokens = min(notes.DefaultBlockTokens, r.MaxTokens)
	}
	if r.BlockMaxTokens < notes.MinBlockTokens || r.BlockMaxTokens > notes.MaxBlockTokens {
		return invalid("block_max_tokens", "block_max_tokens is from %d to %d", notes.MinBlockTokens, notes.MaxBlockTokens)
	}
	if r.BlockMaxTokens > r.MaxTokens {
		return invalid("block_max_tokens", "block_max_tokens is at most max_tokens")
	}
	if r.Task != nil && (len(r.Task.ID) > MaxTaskIDLen || strings.IndexFunc(r.Task.ID, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0) {
		return invalid("task.id", "task.id is at most %d printable characters", MaxTaskIDLen)
	}
	if r.IncludeAgentMemory && (r.Task == nil || len(r.Task.ObjectTypes) == 0) {
		return invalid("include_agent_memory", "include_agent_memory needs task.object_types: the task section holds the notes tagged with them")
	}
	return r.Run.Validate()
}

// compose fences the knowledge evidence into what budget leaves after the block and the task
// section, joins the context, and holds the total within max exactly: the parts' counts are
// summed first, then the joined text is counted and the evidence fenced again smaller while
// the total is over (cl100k merges across a join are rare but possible). The total stays
// within budget: the block and the task section were built within it.
func compose(cn notes.ContextNotes, ret knowledge.Retrieval, budget int) (Answer, error) {
	task := cn.Task.Text
	room := budget - cn.Block.Tokens - cn.Task.Tokens
	if task != "" {
		room -= 2 // the separator and a possible merge across it
	}
	evidence, kTokens := "", 0
	for {
		var err error
		if len(ret.Chunks) > 0 {
			if evidence, kTokens, err = knowledge.FenceContext(ret.Chunks, min(max(room, 0), knowledge.MaxContextTokens)); err != nil {
				return Answer{}, err
			}
		}
		text := joinParts(evidence, task)
		n, err := notes.CountTokens(text)
		if err != nil {
			return Answer{}, err
		}
		total := cn.Block.Tokens + n
		if total <= budget || evidence == "" {
			return answerOf(cn, ret, text, Tokens{SystemBlock: cn.Block.Tokens, TaskNotes: cn.Task.Tokens, Knowledge: kTokens, Total: total}), nil
		}
		room -= total - budget
	}
}

// joinParts joins the non-empty parts with separator.
func joinParts(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, separator)
}

// answerOf is the answer of the composed parts, with its ETag.
func answerOf(cn notes.ContextNotes, ret knowledge.Retrieval, text string, t Tokens) Answer {
	a := Answer{SystemBlock: cn.Block.Text, Context: text, Tokens: t, Enabled: cn.Enabled,
		NoteIDs: slices.Clone(cn.Block.NoteIDs), TaskNoteIDs: slices.Clone(cn.Task.NoteIDs), ChunkIDs: []string{}, KnowledgeMode: ret.Mode}
	for _, c := range ret.Chunks {
		if c.InContext {
			a.ChunkIDs = append(a.ChunkIDs, c.ChunkID)
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "context/v1\n%t\n%d\n%d\n%d\n%d\n%s\n", a.Enabled, t.SystemBlock, t.TaskNotes, t.Knowledge, t.Total, a.KnowledgeMode)
	for _, ids := range [][]string{a.NoteIDs, a.TaskNoteIDs, a.ChunkIDs} {
		fmt.Fprintf(h, "%s\n", strings.Join(ids, ","))
	}
	fmt.Fprintf(h, "%d\n%s%d\n%s", len(a.SystemBlock), a.SystemBlock, len(a.Context), a.Context)
	a.ETag = `"` + hex.EncodeToString(h.Sum(nil))[:32] + `"`
	return a
}

// record leaves the call's one receipt: every note delivered (block, then task section, each
// once) and every chunk in the context, with the budget's figures; never the query or text.
func (s *Service) record(ctx context.Context, p auth.Principal, req Request, cn notes.ContextNotes, a Answer, kbs []string, d *runs.Draw) error {
	ids := slices.Clone(a.NoteIDs)
	for _, id := range a.TaskNoteIDs {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	ids = append(ids, a.ChunkIDs...)
	detail := map[string]any{
		"tokens":       map[string]any{"system_block": a.Tokens.SystemBlock, "task_notes": a.Tokens.TaskNotes, "knowledge": a.Tokens.Knowledge, "total": a.Tokens.Total},
		"not_modified": a.NotModified, "source_id": cn.SourceID, "view": req.View,
		"notes": len(a.NoteIDs), "task_notes": len(a.TaskNoteIDs), "chunks": len(a.ChunkIDs), "max_tokens": req.MaxTokens,
	}
	if req.Task != nil && req.Task.ID != "" {
		detail["task_id"] = req.Task.ID
	}
	if kbs != nil {
		detail["kbs"] = kbs
	}
	d.Detail(detail, drawn(a))
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return receipts.Record(ctx, s.Receipts, s.DB, p.SpaceID, receipts.Entry{
		Kind: receipts.KindAgentMemory, Action: "context.read", ActorKey: p.KeyID, ObjectIDs: ids, Detail: detail,
	}, now().UTC())
}

// matches reports whether an If-None-Match header value names etag (or is "*").
func matches(header, etag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t != "" && (t == "*" || t == etag) {
			return true
		}
	}
	return false
}

func invalid(member, format string, args ...any) error {
	return fault.New(fault.Invalid, "invalid_member", format, args...).With("member", member)
}
