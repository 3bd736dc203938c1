package turns

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/internal/receipts"
	"github.com/agentmemory/agentmemory/models"
)

// Paging of Read.
const (
	DefaultReadLimit = 100
	MaxReadLimit     = 500
)

// ReadRequest is the body of POST /v1/turns/read: the conversation (or task) whose turns to
// read, After (the next_after of the previous page; "" from the oldest) and Limit (1 to
// MaxReadLimit; 0 means DefaultReadLimit).
type ReadRequest struct {
	Scope
	After string `json:"after,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// ReadPage is one page of a conversation's masked turns, oldest first (by time, then id),
// and NextAfter, the cursor of the next page ("" when this page is the last).
type ReadPage struct {
	Turns     []Turn `json:"turns"`
	NextAfter string `json:"next_after"`
}

// readCursor is a page cursor: the last turn's time (Unix microseconds) and id.
type readCursor struct {
	at int64
	id string
}

func (c readCursor) String() string { return strconv.FormatInt(c.at, 10) + "." + c.id }

// parseCursor reads a cursor of ReadPage.NextAfter; "" is the start.
func parseCursor(s string) (readCursor, bool, error) {
	if s == "" {
		return readCursor{}, false, nil
	}
	at, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" || len(s) > 100 {
		return readCursor{}, false, fault.New(fault.Invalid, "invalid_member", "after must be the next_after of a previous page").With("member", "after")
	}
	return readCursor{at: n, id: id}, true, nil
}

// Read returns a page of the masked turns of req's conversation or task for p (scope
// context or role integration, as writing them), oldest first, and leaves an agent_memory
// receipt "turns.read" naming the conversation by its keyed hash (never its id) and the
// turns returned. Turns past the space's retention and turns whose key was destroyed (an
// erased subject or conversation) are left out, so an erased conversation answers as one
// that never existed: no turns. Errors: fault.Forbidden (scope or role), fault.Invalid
// naming the member (conversation_id, task_id, after, limit); the database's and the key
// store's.
func (s *Service) Read(ctx context.Context, p auth.Principal, req ReadRequest) (ReadPage, error) {
	if err := authorize(p); err != nil {
		return ReadPage{}, err
	}
	kind, id, err := req.Scope.KindID()
	if err != nil {
		return ReadPage{}, err
	}
	if req.Limit == 0 {
		req.Limit = DefaultReadLimit
	}
	if req.Limit < 1 || req.Limit > MaxReadLimit {
		return ReadPage{}, fault.New(fault.Invalid, "invalid_member", "limit must be 1 to %d", MaxReadLimit).With("member", "limit")
	}
	after, hasAfter, err := parseCursor(req.After)
	if err != nil {
		return ReadPage{}, err
	}
	scopeHash := s.ScopeHash(p.SpaceID, kind, id)
	rows, more, err := s.readRows(ctx, p.SpaceID, scopeHash, after, hasAfter, req.Limit)
	if err != nil {
		return ReadPage{}, err
	}
	page, err := s.openPage(ctx, req.Scope, rows, more)
	if err != nil {
		return ReadPage{}, err
	}
	return page, s.receiptRead(ctx, p, kind, scopeHash, page)
}

// readRows loads at most limit turns of the scope after the cursor (within retention),
// and whether more follow.
func (s *Service) readRows(ctx context.Context, spaceID, scopeHash string, after readCursor, hasAfter bool, limit int) ([]models.Turn, bool, error) {
	since, err := s.notExpired(ctx, s.DB, spaceID, time.Time{})
	if err != nil {
		return nil, false, err
	}
	var rows []models.Turn
	q := s.DB.NewSelect().Model(&rows).Where("space_id = ? AND scope_hash = ? AND at >= ?", spaceID, scopeHash, since)
	if hasAfter {
		at := time.UnixMicro(after.at).UTC()
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("at > ?", at).WhereOr("at = ? AND id > ?", at, after.id)
		})
	}
	if err := q.Order("at", "id").Limit(int64(limit) + 1).Scan(ctx); err != nil {
		return nil, false, fmt.Errorf("turns: read: %w", err)
	}
	if len(rows) > limit {
		return rows[:limit], true, nil
	}
	return rows, false, nil
}

// openPage opens rows' masked texts (leaving out the unreadable ones) as the page; the
// cursor follows the last row read, readable or not.
func (s *Service) openPage(ctx context.Context, sc Scope, rows []models.Turn, more bool) (ReadPage, error) {
	page := ReadPage{Turns: make([]Turn, 0, len(rows))}
	op := s.opener()
	for i := range rows {
		r := &rows[i]
		text, ok, err := op.open(ctx, r)
		if err != nil {
			return ReadPage{}, err
		}
		if ok {
			page.Turns = append(page.Turns, Turn{ID: r.ID, Scope: sc, Speaker: r.Speaker, Text: text, At: r.At.UTC(),
				KeyID: r.KeyID, AgentVersion: r.AgentVersion})
		}
	}
	if more && len(rows) > 0 {
		last := rows[len(rows)-1]
		page.NextAfter = readCursor{at: last.At.UTC().UnixMicro(), id: last.ID}.String()
	}
	return page, nil
}

// receiptRead records the read: the scope's kind and keyed hash, how many turns, their ids.
func (s *Service) receiptRead(ctx context.Context, p auth.Principal, kind, scopeHash string, page ReadPage) error {
	ids := make([]string, len(page.Turns))
	for i, t := range page.Turns {
		ids[i] = t.ID
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return receipts.Record(ctx, s.Receipts, s.DB, p.SpaceID, receipts.Entry{
		Kind: receipts.KindAgentMemory, Action: "turns.read", ActorKey: p.KeyID, ObjectIDs: ids,
		Detail: map[string]any{"scope_kind": kind, "scope_hash": scopeHash, "turns": len(ids)},
	}, now().UTC())
}
