package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/fault"
)

// The documents' change requests (issue 15, internal/changes): proposed whole, shown as a
// diff, applied only when a second person holding role security approves.

// changesOn answers 503 when the API was built without the change requests' service.
func (s *Server) changesOn(c *gin.Context) bool {
	if s.Changes == nil {
		s.writeError(c, fault.New(fault.Unavailable, "changes_unavailable", "change requests are not configured"))
		return false
	}
	return true
}

// proposeChange: POST /v1/documents/{name}/changes with the proposed document as the body
// (the role PUT needs: features security, object-types admin or integration) -> 201 the
// change, with "diff"; 400 naming the member of an invalid document; 409
// change_without_difference. Nothing is stored on an error.
func (s *Server) proposeChange(c *gin.Context) {
	if !s.changesOn(c) {
		return
	}
	p := principal(c)
	if err := s.Docs.MayPut(p, c.Param("name")); err != nil {
		s.writeError(c, err) // before the body is read, as PUT
		return
	}
	data, err := readBody(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	ch, err := s.Changes.Propose(s.ctx(c), p, c.Param("name"), data, s.Now())
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusCreated, ch)
}

// listChanges: GET /v1/documents/{name}/changes?status=&limit= (any person key) -> {"changes"}
// newest first; status one of pending, applied, rejected, stale; limit 1..500 (default 100).
func (s *Server) listChanges(c *gin.Context) {
	if !s.changesOn(c) {
		return
	}
	limit, err := queryInt(c, "limit", 100, 1, 500)
	if err != nil {
		s.writeError(c, err)
		return
	}
	list, err := s.Changes.List(s.ctx(c), principal(c), c.Param("name"), c.Query("status"), int(limit))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"changes": list})
}

// getChange: GET /v1/documents/{name}/changes/{id} (any person key) -> the change; 404
// change_not_found.
func (s *Server) getChange(c *gin.Context) {
	if !s.changesOn(c) {
		return
	}
	ch, err := s.Changes.Get(s.ctx(c), principal(c), c.Param("name"), c.Param("id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, ch)
}

// approveChange: POST /v1/documents/{name}/changes/{id}/approve (role security, not the
// proposer: 403 change_own_proposal) -> 200 the applied change, the document written with its
// receipt and event; 409 change_stale (the document moved on: nothing applied) or
// change_not_pending.
func (s *Server) approveChange(c *gin.Context) {
	if !s.changesOn(c) {
		return
	}
	ch, err := s.Changes.Approve(s.ctx(c), principal(c), c.Param("name"), c.Param("id"), s.Now())
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, ch)
}

// changeRejection is the body of .../reject.
type changeRejection struct {
	Reason string `json:"reason"`
}

// rejectChange: POST /v1/documents/{name}/changes/{id}/reject {"reason"} (role security, or
// the proposer withdrawing it) -> 200 the rejected change; 400 without a reason; 409
// change_not_pending.
func (s *Server) rejectChange(c *gin.Context) {
	if !s.changesOn(c) {
		return
	}
	var req changeRejection
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ch, err := s.Changes.Reject(s.ctx(c), principal(c), c.Param("name"), c.Param("id"), req.Reason, s.Now())
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, ch)
}
