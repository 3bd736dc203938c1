package api

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/knowledge"
	"github.com/agentmemory/agentmemory/workflows"
)

// createKnowledgeBase: POST /v1/knowledge {"name", "settings"} -> 201 base (KN-1). Role admin.
func (s *Server) createKnowledgeBase(c *gin.Context) {
	var in knowledge.CreateBaseRequest
	if err := bind(c, &in); err != nil {
		s.writeError(c, err)
		return
	}
	b, err := s.Knowledge.CreateBase(s.ctx(c), principal(c), in)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusCreated, b)
}

// listKnowledgeBases: GET /v1/knowledge -> {"bases"} (KN-1).
func (s *Server) listKnowledgeBases(c *gin.Context) {
	bs, err := s.Knowledge.ListBases(s.ctx(c), principal(c))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"bases": bs})
}

// setKnowledgeReaders: PUT /v1/knowledge/{kb}/readers {"space", "agents", "vendors"} -> 200
// the base with its new read grants (KN-1, MS-2). Role admin.
func (s *Server) setKnowledgeReaders(c *gin.Context) {
	var in knowledge.Readers
	if err := bind(c, &in); err != nil {
		s.writeError(c, err)
		return
	}
	b, err := s.Knowledge.SetReaders(s.ctx(c), principal(c), c.Param("kb"), in)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, b)
}

// submitKnowledgeDocument: POST /v1/knowledge/{kb}/documents {"text", "format", "source_uri",
// "title", "version"} -> 202 {"document_id", "status", "duplicate", "document"} (KN-2), after
// starting IngestWorkflow under a workflow id derived from the document id. The same bytes
// of the same source answer the existing document (duplicate true; its workflow restarted
// if it is still pending). When the workflow engine does not accept the start the new
// document is ended failed (workflow_unavailable) and the answer is 503
// workflows_unavailable: retry (startRow's policy).
func (s *Server) submitKnowledgeDocument(c *gin.Context) {
	var in knowledge.SubmitRequest
	if err := bind(c, &in); err != nil {
		s.writeError(c, err)
		return
	}
	ctx := s.ctx(c)
	doc, created, err := s.Knowledge.Submit(ctx, principal(c), c.Param("kb"), in)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if doc.Status == knowledge.StatusPending {
		st := rowStart{name: "knowledge_ingest", id: workflows.IngestWorkflowID(doc.ID), workflow: workflows.IngestWorkflow,
			arg: workflows.IngestInput{DocumentID: doc.ID}}
		if created { // a document that existed before this request is kept: its retry starts it (startRow's rule 3)
			st.end = func(ctx context.Context) error { return s.Knowledge.Fail(ctx, doc.ID, "workflow_unavailable") }
		}
		if err := s.startRow(ctx, st); err != nil {
			s.writeError(c, err)
			return
		}
	}
	c.PureJSON(http.StatusAccepted, gin.H{"document_id": doc.ID, "status": doc.Status, "duplicate": !created, "document": doc})
}

// listKnowledgeDocuments: GET /v1/knowledge/{kb}/documents?status= -> {"documents"}.
func (s *Server) listKnowledgeDocuments(c *gin.Context) {
	st := c.Query("status")
	switch st {
	case "", knowledge.StatusPending, knowledge.StatusReady, knowledge.StatusRefused, knowledge.StatusFailed, knowledge.StatusSuperseded, knowledge.StatusDeleted:
	default:
		s.writeError(c, fault.New(fault.Invalid, "invalid_member", "unknown status").With("member", "status"))
		return
	}
	ds, err := s.Knowledge.ListDocuments(s.ctx(c), principal(c), c.Param("kb"), st)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"documents": ds})
}

// getKnowledgeDocument: GET /v1/knowledge/{kb}/documents/{id} -> the document's status.
func (s *Server) getKnowledgeDocument(c *gin.Context) {
	d, err := s.Knowledge.GetDocument(s.ctx(c), principal(c), c.Param("kb"), c.Param("id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, d)
}

// deleteKnowledgeDocument: DELETE /v1/knowledge/{kb}/documents/{id} -> the tombstone (KN-3).
func (s *Server) deleteKnowledgeDocument(c *gin.Context) {
	d, err := s.Knowledge.DeleteDocument(s.ctx(c), principal(c), c.Param("kb"), c.Param("id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, d)
}

// retrieveKnowledge: POST /v1/knowledge/retrieve {"query", "kbs", "top_k", "max_tokens",
// "min_score", "filters", "run"} -> {"mode", "chunks", "context", "context_tokens", and in a
// run: "run", "budget_exhausted"} (KN-4, CTX-3).
func (s *Server) retrieveKnowledge(c *gin.Context) {
	var in knowledge.RetrieveRequest
	if err := bind(c, &in); err != nil {
		s.writeError(c, err)
		return
	}
	r, err := s.Knowledge.Retrieve(s.ctx(c), principal(c), in)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, r)
}
