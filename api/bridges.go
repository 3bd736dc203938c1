package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/boards"
)

// proposeBridge: POST /v1/bridges {"id", "from", "to", "agents", "boards"} (role security)
// -> 202 {bridge, change_id}: a change request of this space's bridges document, for a second
// person holding role security (SH-3). The bridge is in force once both spaces approved the
// same bridge (same id and terms).
func (s *Server) proposeBridge(c *gin.Context) {
	svc := s.boardsService(c)
	var req boards.BridgeRequest
	if svc == nil || !s.bindOrFail(c, &req) {
		return
	}
	res, err := svc.ProposeBridge(s.ctx(c), principal(c), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusAccepted, res)
}

// listBridges: GET /v1/bridges -> 200 {bridges: [{..., direction, status}], proposals:
// [change]} (a person key).
func (s *Server) listBridges(c *gin.Context) {
	svc := s.boardsService(c)
	if svc == nil {
		return
	}
	res, err := svc.Bridges(s.ctx(c), principal(c))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, res)
}

// revokeBridge: DELETE /v1/bridges/{bridge_id} (role security) -> 200 {bridge}: removed from
// this space's side at once; no read crosses it from the next request on, on every replica.
func (s *Server) revokeBridge(c *gin.Context) {
	svc := s.boardsService(c)
	if svc == nil {
		return
	}
	b, err := svc.RevokeBridge(s.ctx(c), principal(c), c.Param("bridge_id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"bridge": b})
}
