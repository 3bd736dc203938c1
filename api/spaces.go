package api

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/spaces"
)

// spaceSpec is the body of POST /v1/spaces: the new space's name and whether its documents
// allow a direct PUT (spaces.CreateOptions).
type spaceSpec struct {
	Name      string `json:"name"`
	DirectPut bool   `json:"direct_put"`
}

// createSpace: POST /v1/spaces (an operator key, never a space's key) {"name", "direct_put"}
// -> 201 {"space_id", "admin_key"}: a new space and its first admin key (every person role,
// shown once), as `agentmemory space create` makes them, receipted in the new space's chain
// with the operator key's id as actor. A space's key (its admin's too) is 403
// operator_key_required; no or an unknown key 401; a bad body 400 and nothing is created.
// The operator key reads no space: it is unknown to every other route (401).
func (s *Server) createSpace(c *gin.Context) {
	scheme, key, ok := strings.Cut(strings.TrimSpace(c.GetHeader("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		s.writeError(c, fault.New(fault.Unauthorized, "missing_key", "send Authorization: Bearer <operator key>"))
		return
	}
	op, err := spaces.AuthenticateOperator(s.ctx(c), s.DB, strings.TrimSpace(key))
	if err != nil {
		s.writeError(c, err) // before the body is read
		return
	}
	var spec spaceSpec
	if err := bind(c, &spec); err != nil {
		s.writeError(c, err)
		return
	}
	id, admin, err := spaces.CreateWith(s.ctx(c), s.DB, spec.Name, s.Now(), spaces.CreateOptions{DirectPut: spec.DirectPut, Actor: op.KeyID})
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.log.Info("space created by an operator key", "space_id", id, "operator_key_id", op.KeyID)
	c.PureJSON(http.StatusCreated, gin.H{"space_id": id, "admin_key": admin})
}
