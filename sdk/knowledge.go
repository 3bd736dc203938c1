package sdk

import "context"

// RetrieveRequest asks for the chunks of the space's knowledge bases that answer Query
// (POST /v1/knowledge/retrieve, KN-4; the key needs scope knowledge:read).
type RetrieveRequest struct {
	// Query is the question, 1-1000 characters.
	Query string
	// KBs names 1-10 knowledge bases of the key's space by id.
	KBs []string
	// TopK is how many chunks to return, 1..50 (0: the first base's top_k).
	TopK int
	// MaxTokens is the budget of Retrieval.Context in cl100k tokens, 100..8000 (0: the first
	// base's max_tokens).
	MaxTokens int
	// MinScore, 0..1: vector candidates whose cosine similarity is below it do not enter the
	// vector ranking (full-text matches are not affected). 0 sends nothing.
	MinScore float64
	// Filters is sent as the request's "filters" object, member for member, when not nil; the
	// service decides what it accepts (a service that has no filters answers 400).
	Filters map[string]any
	// Run, when set, draws the retrieval on a run's budget (CTX-3).
	Run *Run
	// Space, when set, reads the bases of another space across a bridge (issue 31): KBs then
	// names that space's bases by name, and only an active bridge approved by both spaces
	// that lists this agent and those bases lets the read through; without one the answer
	// is 404 knowledge_base_not_found, as for a base that does not exist. With Run, the run
	// is a run of the key's own space.
	Space string
}

// Run names the run a read belongs to (CTX-3): ID (1..200 printable characters) and, on the
// run's first call, BudgetTokens (1..1000000 cl100k tokens), which sets the run's budget;
// every read of the run draws the tokens it delivers. A later call may leave BudgetTokens 0.
type Run struct {
	ID           string `json:"id"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// RunReport is a run's figures after a read of the run: UsedTokens counts what the run's
// reads delivered; Cut says this read delivered less than it would have without the run.
type RunReport struct {
	ID              string `json:"id"`
	BudgetTokens    int    `json:"budget_tokens"`
	UsedTokens      int    `json:"used_tokens"`
	RemainingTokens int    `json:"remaining_tokens"`
	Cut             bool   `json:"cut"`
}

// RetrievedChunk is one ranked chunk with its provenance: its document, base, source, title,
// version label and byte range in the document. Score is the fused reciprocal-rank score;
// VectorScore the cosine similarity and VectorRank, LexicalRank its ranks in each ranking
// (nil: not in that ranking); InContext whether Retrieval.Context holds it.
type RetrievedChunk struct {
	ChunkID     string   `json:"chunk_id"`
	DocumentID  string   `json:"document_id"`
	KBID        string   `json:"kb_id"`
	SourceURI   string   `json:"source_uri"`
	Title       string   `json:"title"`
	Version     string   `json:"version"`
	StartByte   int      `json:"start_byte"`
	EndByte     int      `json:"end_byte"`
	Score       float64  `json:"score"`
	VectorScore *float64 `json:"vector_score"`
	VectorRank  *int     `json:"vector_rank"`
	LexicalRank *int     `json:"lexical_rank"`
	Text        string   `json:"text"`
	InContext   bool     `json:"in_context"`
}

// Retrieval is the answer of Retrieve. Mode is "hybrid" (vector and full-text rankings
// fused) or "lexical_only" (the embedder was down and the bases allow full text alone).
// Context is ready for a prompt: each chunk that fits ContextTokens fenced as evidence with
// its source and version, under a line saying it is reference material, not instructions
// (MS-7); empty when no chunk fits. Put it beside the conversation, never in place of the
// system prompt.
type Retrieval struct {
	Mode          string           `json:"mode"`
	Chunks        []RetrievedChunk `json:"chunks"`
	Context       string           `json:"context"`
	ContextTokens int              `json:"context_tokens"`
	// Run is the run's figures when the request named one; BudgetExhausted says the run had
	// nothing left (Chunks and Context are then empty).
	Run             *RunReport `json:"run,omitempty"`
	BudgetExhausted bool       `json:"budget_exhausted,omitempty"`
}

// Retrieve ranks the chunks of the named knowledge bases for req.Query
// (POST /v1/knowledge/retrieve). Every retrieval leaves a receipt on the service naming the
// chunks delivered. Errors are *Error: 400 invalid_member (with the member in the message),
// 403 scope_required (no knowledge:read) or feature_disabled, 404 knowledge_base_not_found
// (a base of another space looks missing), ErrUnavailable for 503 embedder_unavailable (a
// base whose embedder_down is "fail"), retried like any 5xx. An empty Query or KBs is the
// service's 400 invalid_member.
func (c *Client) Retrieve(ctx context.Context, req RetrieveRequest) (Retrieval, error) {
	kbs := req.KBs
	if kbs == nil {
		kbs = []string{}
	}
	body := map[string]any{"query": req.Query, "kbs": kbs}
	if req.TopK != 0 {
		body["top_k"] = req.TopK
	}
	if req.MaxTokens != 0 {
		body["max_tokens"] = req.MaxTokens
	}
	if req.MinScore != 0 {
		body["min_score"] = req.MinScore
	}
	if req.Filters != nil {
		body["filters"] = req.Filters
	}
	if req.Run != nil {
		body["run"] = req.Run
	}
	if req.Space != "" {
		body["space"] = req.Space
	}
	var out Retrieval
	if _, _, err := c.do(ctx, "POST", "/v1/knowledge/retrieve", body, &out); err != nil {
		return Retrieval{}, err
	}
	if out.Chunks == nil {
		out.Chunks = []RetrievedChunk{}
	}
	return out, nil
}
