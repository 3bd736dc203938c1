package api

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/leases"
	"github.com/agentmemory/agentmemory/internal/spaces"
	"github.com/agentmemory/agentmemory/internal/state"
	"github.com/agentmemory/agentmemory/internal/subjects"
)

// writeState: PUT /v1/agent-state (WM-4..WM-8). Stored or refused by rule: 200 with
// {stored, version, reason}; stale if_version: 412 agent_state_conflict with "version".
func (s *Server) writeState(c *gin.Context) {
	var req state.WriteRequest
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	var res state.WriteResult
	err := s.withConfig(c, func(ctx context.Context, p auth.Principal, snap spaces.Snapshot) error {
		var err error
		res, err = s.State.WriteAt(ctx, snap, p, c.GetHeader("Agent-Version"), req)
		return err
	})
	s.Metrics.StateWrite(stateWriteResult(res.Stored, res.Reason, err))
	if err != nil {
		s.writeError(c, err)
		return
	}
	if b, ok := res.AppendJSON(make([]byte, 0, 64)); ok {
		c.Data(http.StatusOK, jsonContentType, b) // what PureJSON writes, without reflection
		return
	}
	c.PureJSON(http.StatusOK, res)
}

// jsonContentType is the Content-Type gin's JSON renderers set.
const jsonContentType = "application/json; charset=utf-8"

// readState: POST /v1/agent-state/read (WM-9) -> {body, version, updated_at}.
func (s *Server) readState(c *gin.Context) {
	var req state.ReadRequest
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	var res state.ReadResult
	err := s.withConfig(c, func(ctx context.Context, p auth.Principal, snap spaces.Snapshot) error {
		var err error
		res, err = s.State.ReadAt(ctx, snap, p, req)
		return err
	})
	if err != nil {
		s.writeError(c, err)
		return
	}
	// What PureJSON writes, without reflection or compacting the body again.
	c.Data(http.StatusOK, jsonContentType, res.AppendJSON(make([]byte, 0, len(res.Body)+96)))
}

// deleteState: POST /v1/agent-state/delete {"scope", "agent"} or {"subject", "agent"?}
// (issue 29 §3) -> 200 {"deleted", "state_ids", "receipt_id"}: the states named are gone,
// receipted (compliance, agent_state.delete) and evented (agent_state.deleted), in one
// transaction; nothing named deletes nothing (deleted 0, no receipt). Ids travel in the body,
// as for reads (WM-3).
func (s *Server) deleteState(c *gin.Context) {
	var req state.DeleteRequest
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	res, err := s.State.Delete(s.ctx(c), principal(c), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, res)
}

// createProfile: POST /v1/profiles (role integration) -> 201 {"profile_id"}.
func (s *Server) createProfile(c *gin.Context) {
	var req subjects.ProfileRequest
	if err := bind(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	id, err := s.Subjects.Create(s.ctx(c), principal(c), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusCreated, gin.H{"profile_id": id})
}

// getProfile: GET /v1/profiles/{id} (integration or compliance) -> the unsealed profile.
func (s *Server) getProfile(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleIntegration, auth.RoleCompliance); err != nil {
		s.writeError(c, err)
		return
	}
	prof, err := s.Subjects.Get(s.ctx(c), p.SpaceID, c.Param("profile_id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, prof)
}

// profileAgentState: GET /v1/profiles/{id}/agent-state (WM-11): the subject's states with
// agent, scope kind, size, version and dates; never their content.
func (s *Server) profileAgentState(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleIntegration, auth.RoleAdmin, auth.RoleCompliance, auth.RoleSecurity); err != nil {
		s.writeError(c, err)
		return
	}
	hashes, err := s.Subjects.HandleHashes(s.ctx(c), p.SpaceID, c.Param("profile_id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	list, err := s.State.ListBySubject(s.ctx(c), p.SpaceID, hashes)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"profile_id": c.Param("profile_id"), "states": list})
}

// stateLease: POST /v1/agent-state/lease, /lease/renew, /lease/release {"scope", "agent",
// "ttl_seconds", "lease_id", "token"} (issue 31) -> 200 {lease_id, token, expires_at}; 409
// lease_held when another lease is in force (acquire), 409 lease_lost when the lease named
// is not (renew, release).
func (s *Server) stateLease(action string) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req state.LeaseRequest
		if !s.bindOrFail(c, &req) {
			return
		}
		var l leases.Lease
		err := s.withConfig(c, func(ctx context.Context, p auth.Principal, snap spaces.Snapshot) error {
			var err error
			l, err = s.State.Lease(ctx, snap, p, action, req)
			return err
		})
		if err != nil {
			s.writeError(c, err)
			return
		}
		c.PureJSON(http.StatusOK, l)
	}
}
