package notes

import (
	"context"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
)

// SearchAcross is a person's search over the live notes of every agent of the space (issue
// 27: the Console's notes search with "All agents"): the same words, tags, limit, ranking and
// receipt as Search, over what a person may list (roles integration, admin or reviewer, as
// List and Get) instead of one agent's view; req.SourceID is ignored. Notes are active and
// not expired, as in Search. Errors: fault.Forbidden for an agent key (an agent searches as
// itself with Search) or a person without those roles; fault.Invalid as Search.
func (s *Service) SearchAcross(ctx context.Context, p auth.Principal, req SearchRequest) (SearchResult, error) {
	if p.IsAgent() {
		return SearchResult{}, fault.New(fault.Forbidden, "person_only", "only a person searches across agents; an agent searches as itself")
	}
	req.SourceID = ""
	words, err := checkSearch(&req)
	if err != nil {
		return SearchResult{}, err
	}
	v, err := s.reader(ctx, p, "", true)
	if err != nil {
		return SearchResult{}, err
	}
	return s.search(ctx, p, v, req, words)
}
