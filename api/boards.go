package api

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/boards"
	"github.com/agentmemory/agentmemory/internal/fault"
)

// boardsService returns the boards service, or answers 503 when the server has none.
func (s *Server) boardsService(c *gin.Context) *boards.Service {
	if s.Boards == nil {
		s.writeError(c, fault.New(fault.Unavailable, "boards_unavailable", "boards are not configured on this server"))
		return nil
	}
	return s.Boards
}

// writeBoard: PUT /v1/boards {"type", "id", "if_version", "body", "lease"} (issue 31) -> 200
// {stored, version, settled, reason}; a rejected merge or a base no longer kept: 412
// board_conflict with "version", "reason" and "settled"; a lease not in force: 409
// lease_lost; another's lease held: 409 lease_held; no read_write grant: 403
// board_grant_required.
func (s *Server) writeBoard(c *gin.Context) {
	svc := s.boardsService(c)
	var req boards.WriteRequest
	if svc == nil || !s.bindOrFail(c, &req) {
		return
	}
	res, err := svc.Write(s.ctx(c), principal(c), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, res)
}

// readBoard: POST /v1/boards/read {"type", "id"} -> 200 {type, id, body, version, updated_at}
// (a read or read_write grant).
func (s *Server) readBoard(c *gin.Context) {
	svc := s.boardsService(c)
	var req boards.ReadRequest
	if svc == nil || !s.bindOrFail(c, &req) {
		return
	}
	res, err := svc.Read(s.ctx(c), principal(c), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, res)
}

// boardLease: POST /v1/boards/lease, /lease/renew, /lease/release {"type", "id",
// "ttl_seconds", "lease_id", "token"} -> 200 {lease_id, token, expires_at}.
func (s *Server) boardLease(action string) gin.HandlerFunc {
	return func(c *gin.Context) {
		svc := s.boardsService(c)
		var req boards.LeaseRequest
		if svc == nil || !s.bindOrFail(c, &req) {
			return
		}
		l, err := svc.Lease(s.ctx(c), principal(c), action, req)
		if err != nil {
			s.writeError(c, err)
			return
		}
		c.PureJSON(http.StatusOK, l)
	}
}

// listBoards: GET /v1/boards?type=&limit= -> 200 {"boards": [meta]}: sizes, versions,
// writers and dates, never content (a person key).
func (s *Server) listBoards(c *gin.Context) {
	svc := s.boardsService(c)
	if svc == nil {
		return
	}
	limit := 0
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.writeError(c, fault.New(fault.Invalid, "invalid_query", "limit must be 1 to 1000").With("member", "limit"))
			return
		}
		limit = n
	}
	list, err := svc.List(s.ctx(c), principal(c), boards.MetaFilter{Type: c.Query("type"), Limit: limit})
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"boards": list})
}

// listBoardGrants: GET /v1/boards/{type}/grants -> 200 {"grants": [...]} (a person key).
func (s *Server) listBoardGrants(c *gin.Context) {
	svc := s.boardsService(c)
	if svc == nil {
		return
	}
	list, err := svc.Grants(s.ctx(c), principal(c), c.Param("type"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"grants": list})
}

// grantBoard: POST /v1/boards/{type}/grants {"agent"|"vendor", "access", "boards"} (role
// admin) -> 201 {grant, applied: true, version} where direct PUT is on, else 202 {grant,
// applied: false, change_id}: a change request of board-grants for a second person holding
// role security.
func (s *Server) grantBoard(c *gin.Context) {
	svc := s.boardsService(c)
	var req boards.GrantRequest
	if svc == nil || !s.bindOrFail(c, &req) {
		return
	}
	res, err := svc.Grant(s.ctx(c), principal(c), c.Param("type"), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	status := http.StatusCreated
	if !res.Applied {
		status = http.StatusAccepted
	}
	c.PureJSON(status, res)
}

// revokeBoardGrant: DELETE /v1/boards/{type}/grants/{grant_id} (role admin) -> 200 {grant,
// applied: true, version}, or 202 with change_id as grantBoard.
func (s *Server) revokeBoardGrant(c *gin.Context) {
	svc := s.boardsService(c)
	if svc == nil {
		return
	}
	res, err := svc.Revoke(s.ctx(c), principal(c), c.Param("type"), c.Param("grant_id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	status := http.StatusOK
	if !res.Applied {
		status = http.StatusAccepted
	}
	c.PureJSON(status, res)
}

// bindOrFail binds the JSON body into v, answering the error itself; false when it did.
func (s *Server) bindOrFail(c *gin.Context, v any) bool {
	if err := bind(c, v); err != nil {
		s.writeError(c, err)
		return false
	}
	return true
}
