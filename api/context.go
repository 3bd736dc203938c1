package api

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/promptctx"
	"github.com/agentmemory/agentmemory/internal/runs"
)

// runHeaders reads the run a GET names in the headers Agent-Run-Id and Agent-Run-Budget
// (CTX-3; nil when both are absent; 400 invalid_member naming the header otherwise).
func runHeaders(c *gin.Context) (*runs.Run, error) {
	return runs.FromHeaders(c.GetHeader(runs.HeaderID), c.GetHeader(runs.HeaderBudget))
}

// contextService is the context call's service over the server's notes and knowledge.
func (s *Server) contextService() *promptctx.Service {
	return &promptctx.Service{DB: s.DB, Notes: s.Notes, Knowledge: s.Knowledge, Receipts: s.Notes.Receipts, Now: s.Now, Runs: s.Notes.Runs}
}

// buildContext: POST /v1/context {view, task: {id, object_types}, max_tokens,
// block_max_tokens, include_agent_memory, knowledge: {kbs, query, top_k, filters}, source_id,
// run: {id, budget_tokens}} -> {system_block, context, tokens: {system_block, task_notes,
// knowledge, total}, etag, enabled, note_ids, task_note_ids, chunk_ids, knowledge_mode, and
// in a run: run, budget_exhausted} (CTX-2, CTX-3), with the ETag header;
// If-None-Match naming it -> 304 (the receipt is left either way).
func (s *Server) buildContext(c *gin.Context) {
	var in promptctx.Request
	if err := bind(c, &in); err != nil {
		s.writeError(c, err)
		return
	}
	a, err := s.contextService().Build(s.ctx(c), principal(c), in, c.GetHeader("If-None-Match"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Header("ETag", a.ETag)
	c.Header("Cache-Control", cacheControl(a.MaxAge))
	if a.NotModified {
		c.Status(http.StatusNotModified)
		return
	}
	c.PureJSON(http.StatusOK, a)
}

// cacheControl is the Cache-Control of a block or context answer: private (it is the key's
// view), fresh for maxAge seconds, then revalidated by ETag (CTX-4); 0 is no-cache.
func cacheControl(maxAge int) string {
	if maxAge <= 0 {
		return "private, no-cache"
	}
	return "private, max-age=" + strconv.Itoa(maxAge)
}
