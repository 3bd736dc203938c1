package api

import (
	"net/http"
	"regexp"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/logs"
)

// keyIDPattern is the shape of a key id (auth.NewID("key")): "key_" and 32 lowercase hex digits.
var keyIDPattern = regexp.MustCompile(`^key_[0-9a-f]{32}$`)

// listKeys: GET /v1/keys?after=&limit= (role admin or security) -> 200 {"keys": [...],
// "next_after": key id | null}: the space's keys in id order (oldest first), revoked ones
// too, at most limit (1..500, default 100) after the key id after. Each key is auth.KeyInfo:
// key_id, kind, name (people), agent and vendor (agents), scopes, roles, created_by,
// created_at, revoked_at, last_used_at (to the minute; null: not used since recorded); never
// the key or its hash. A malformed after or limit is 400 invalid_query naming it. The uses
// this replica noted are written first, so the caller's own request shows.
func (s *Server) listKeys(c *gin.Context) {
	p := principal(c)
	if err := p.RequireRole(auth.RoleAdmin, auth.RoleSecurity); err != nil {
		s.writeError(c, err)
		return
	}
	limit, err := queryInt(c, "limit", 100, 1, 500)
	if err != nil {
		s.writeError(c, err)
		return
	}
	after := c.Query("after")
	if after != "" && !keyIDPattern.MatchString(after) {
		s.writeError(c, fault.New(fault.Invalid, "invalid_query", "after must be a key id (key_...)").With("member", "after"))
		return
	}
	if err := s.KeyUsage.Flush(s.ctx(c), s.DB, s.Now()); err != nil {
		code, cause := logs.Scrub(err) // never a key id or a driver's text
		s.log.WarnContext(s.ctx(c), "key use not recorded; retried at the next flush", "code", code, "cause", cause)
	}
	list, more, err := auth.Page(s.ctx(c), s.DB, p.SpaceID, after, int(limit))
	if err != nil {
		s.writeError(c, err)
		return
	}
	var next *string
	if more && len(list) > 0 {
		next = &list[len(list)-1].ID
	}
	c.PureJSON(http.StatusOK, gin.H{"keys": list, "next_after": next})
}

// KeySelf is the answer of GET /v1/keys/self: the calling key as GET /v1/keys lists it
// (auth.KeyInfo: id, kind, agent and vendor or name, scopes, roles, purposes, dates) and its
// space's id (QT-2: a key learns what it may do without a person's help); never the key or
// its hash.
type KeySelf struct {
	SpaceID string `json:"space_id"`
	auth.KeyInfo
}

// keySelf: GET /v1/keys/self (any key) -> 200 KeySelf.
func (s *Server) keySelf(c *gin.Context) {
	p := principal(c)
	info, err := auth.Info(s.ctx(c), s.DB, p.SpaceID, p.KeyID)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, KeySelf{SpaceID: p.SpaceID, KeyInfo: info})
}
