package api

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/feed"
)

// exportFeed: GET /v1/export/feed?tables=&after=&limit= (role admin, or an agent key with
// scope export) -> {"records": [...], "next_after"}: the caller's space's continuous export
// feed (issue 33, EXP-1), oldest first after cursor `after` (default 0), at most `limit`
// (1..1000, default 100), of the comma-separated `tables` (default every table; an unknown
// name is 400 invalid_query naming tables; an `after` below the range retention pruned is 410
// cursor_expired with error.oldest_cursor, the cursor to read after instead). next_after is the last cursor returned (or
// `after` when none), for the next page; a cursor never skips or repeats a committed change.
func (s *Server) exportFeed(c *gin.Context) {
	p := principal(c)
	if !p.HasScope(auth.ScopeExport) {
		if err := p.RequireRole(auth.RoleAdmin); err != nil {
			s.writeError(c, err)
			return
		}
	}
	after, limit, err := page(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var tables []string
	if raw := c.Query("tables"); raw != "" {
		tables = strings.Split(raw, ",")
	}
	recs, err := feed.Read(s.ctx(c), s.DB, s.Notes.Keys, p.SpaceID, feed.Query{After: after, Tables: tables, Limit: limit})
	var expired *feed.ExpiredError
	if errors.As(err, &expired) {
		err = fault.New(fault.Gone, "cursor_expired", "the feed was pruned past cursor %d: read again after the oldest available cursor",
			expired.After).With("oldest_cursor", expired.Oldest)
	}
	if errors.Is(err, feed.ErrUnknownTable) {
		err = fault.New(fault.Invalid, "invalid_query", "tables must be a comma-separated list of: %s",
			strings.Join(slices.Sorted(slices.Values(feed.TableNames())), ", ")).With("member", "tables")
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	next := after
	if len(recs) > 0 {
		next = recs[len(recs)-1].Cursor
	}
	c.PureJSON(http.StatusOK, gin.H{"records": recs, "next_after": next})
}
