package knowledge

import (
	"context"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
)

// CanReadForContext is CanRead for POST /v1/context (CTX-2, AM-10, KN-1): an agent key with
// scope context or knowledge:read, or a person key with role admin or integration. The
// bases' read grants still apply (chunkScope).
func CanReadForContext(p auth.Principal) error {
	if p.IsAgent() && p.HasScope(auth.ScopeContext) {
		return nil
	}
	if p.IsAgent() && !p.HasScope(auth.ScopeKnowledgeRead) {
		return fault.New(fault.Forbidden, "scope_required", "this key lacks scope context (or knowledge:read)")
	}
	return CanRead(p)
}

// RetrieveForContext ranks as Retrieve does (the same bases, grants, filters and errors) for
// a context call (CTX-2), with CanReadForContext instead of CanRead and without a receipt:
// the context call leaves one receipt naming every note and chunk it delivers. Its Context is
// fenced within maxTokens (any value: 0 or too small for one chunk gives an empty context);
// the caller may fence again with FenceContext. It also returns the bases read, in request
// order.
func (s *Service) RetrieveForContext(ctx context.Context, p auth.Principal, req RetrieveRequest, maxTokens int) (Retrieval, []string, error) {
	if err := CanReadForContext(p); err != nil {
		return Retrieval{}, nil, err
	}
	req.MaxTokens = MaxContextTokens // fenced below within the context call's budget
	out, order, _, err := s.retrieve(ctx, p, req)
	if err != nil {
		return Retrieval{}, nil, err
	}
	if out.Context, out.ContextTokens, err = FenceContext(out.Chunks, maxTokens); err != nil {
		return Retrieval{}, nil, err
	}
	return out, order, nil
}

// FenceContext fences chunks (in rank order) into a knowledge context of at most maxTokens
// tokens (cl100k_base, wrapper included), as Retrieve's context: whole chunks only, each
// marked InContext when held (the marks of an earlier fencing are cleared first). It returns
// the text and its exact token count; nothing fits: "" and 0.
func FenceContext(chunks []RetrievedChunk, maxTokens int) (string, int, error) {
	for i := range chunks {
		chunks[i].InContext = false
	}
	return assemble(chunks, maxTokens)
}
