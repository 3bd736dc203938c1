package boards

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/models"
)

// Meta is what operators (and the export feed) see of a board: its id (bd_...), type, size
// in bytes, version, latest writers (agent names, most recent last) and dates; never its
// content or its board id in clear (issue 31, as WM-11).
type Meta struct {
	BoardID   string    `json:"board_id"`
	Type      string    `json:"type"`
	Bytes     int       `json:"bytes"`
	Version   int64     `json:"version"`
	Writers   []string  `json:"writers"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// MetaFilter selects boards for ListMeta: Type ("" every type), UpdatedAfter (zero: any
// time; the feed's cursor), Limit (1..1000; 0 is 100).
type MetaFilter struct {
	Type         string
	UpdatedAfter time.Time
	Limit        int
}

// ListMeta returns the metadata of the space's boards through idb, most recently updated
// first (oldest first when UpdatedAfter is set, for a feed that pages forward): the one
// function every reader of board metadata uses (the API, the Console, an export feed).
func ListMeta(ctx context.Context, idb bun.IDB, spaceID string, f MetaFilter) ([]Meta, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	var rows []models.Board
	q := idb.NewSelect().Model(&rows).Column("id", "type", "bytes", "version", "writers", "created_at", "updated_at", "expires_at").
		Where("space_id = ?", spaceID).Limit(int64(f.Limit))
	if f.Type != "" {
		q = q.Where("type = ?", f.Type)
	}
	if f.UpdatedAfter.IsZero() {
		q = q.Order("updated_at DESC", "id")
	} else {
		q = q.Where("updated_at > ?", f.UpdatedAfter.UTC()).Order("updated_at ASC", "id")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("boards: list: %w", err)
	}
	out := make([]Meta, 0, len(rows))
	for _, r := range rows {
		writers := []string{}
		_ = json.Unmarshal([]byte(r.Writers), &writers) // an unreadable list shows as none
		out = append(out, Meta{BoardID: r.ID, Type: r.Type, Bytes: r.Bytes, Version: r.Version, Writers: writers,
			CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()})
	}
	return out, nil
}

// List is ListMeta for a person key of p's space holding role admin, integration, security
// or compliance (fault.Forbidden otherwise).
func (s *Service) List(ctx context.Context, p auth.Principal, f MetaFilter) ([]Meta, error) {
	if p.IsAgent() {
		return nil, errPeopleOnly()
	}
	if err := p.RequireRole(auth.RoleAdmin, auth.RoleIntegration, auth.RoleSecurity, auth.RoleCompliance); err != nil {
		return nil, err
	}
	return ListMeta(ctx, s.DB, p.SpaceID, f)
}
