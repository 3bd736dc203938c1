package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/events"
	"github.com/agentmemory/agentmemory/internal/fault"
)

// listEvents: GET /v1/events?after=&limit= (role admin or integration) -> {"events": [...],
// "next_after"}: the outbox of the caller's space, oldest first after seq `after` (default
// 0), at most `limit` (1..1000, default 100), each with its Kafka and webhook delivery state
// (AM-13, GOV-4). next_after is the last seq returned (or `after` when none), for the next page.
func (s *Server) listEvents(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin, auth.RoleIntegration); err != nil {
		s.writeError(c, err)
		return
	}
	after, limit, err := page(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	items, err := events.List(s.ctx(c), s.DB, p.SpaceID, after, limit)
	if err != nil {
		s.writeError(c, err)
		return
	}
	next := after
	if len(items) > 0 {
		next = items[len(items)-1].Seq
	}
	c.PureJSON(http.StatusOK, gin.H{"events": items, "next_after": next})
}

// webhookSecret: GET /v1/events/webhook-secret (role admin or security) -> {"secret"}: the
// key with which the space's webhook requests are signed (see events.VerifySignature).
func (s *Server) webhookSecret(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin, auth.RoleSecurity); err != nil {
		s.writeError(c, err)
		return
	}
	secret, err := s.EventSigner.Secret(p.SpaceID)
	if err != nil {
		s.writeError(c, fault.New(fault.Unavailable, "webhooks_unavailable", "webhook signing is not configured on this server"))
		return
	}
	c.Header("Cache-Control", "no-store")
	c.PureJSON(http.StatusOK, gin.H{"secret": secret})
}
