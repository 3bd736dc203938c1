package notes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/agentmemory/agentmemory/internal/auth"
	"github.com/agentmemory/agentmemory/internal/fault"
	"github.com/agentmemory/agentmemory/models"
)

// viewer is whose eyes a read uses (AM-2): an agent (source and vendor), or a person who
// sees every note of the space (all).
type viewer struct {
	spaceID string
	source  string
	vendor  string
	all     bool
}

// sees reports whether v may read note r: space notes reach every agent of the space; vendor
// notes only agents of the same vendor; source notes only their owner.
func (v viewer) sees(r models.Note) bool {
	if r.SpaceID != v.spaceID {
		return false
	}
	switch {
	case v.all, r.Visibility == VisibilitySpace:
		return true
	case r.Visibility == VisibilityVendor:
		return r.Vendor == v.vendor
	default:
		return r.Vendor == v.vendor && r.SourceID == v.source
	}
}

// where adds the same rule as sees to q, on the notes table aliased n.
func (v viewer) where(q *bun.SelectQuery) *bun.SelectQuery {
	q = q.Where("n.space_id = ?", v.spaceID)
	if v.all {
		return q
	}
	return q.Where("(n.visibility = ? OR (n.visibility = ? AND n.vendor = ?) OR (n.visibility = ? AND n.vendor = ? AND n.source_id = ?))",
		VisibilitySpace, VisibilityVendor, v.vendor, VisibilitySource, v.vendor, v.source)
}

// reader resolves the viewer of a read (AM-10): an agent needs scope agent_memory or
// context and reads as itself; a person with integration names sourceID to read as that agent,
// or (when people is true: lists and single notes) reads the whole space with integration,
// admin or reviewer.
func (s *Service) reader(ctx context.Context, p auth.Principal, sourceID string, people bool) (viewer, error) {
	if p.IsAgent() {
		if !p.HasScope(auth.ScopeAgentMemory) && !p.HasScope(auth.ScopeContext) {
			return viewer{}, fault.New(fault.Forbidden, CodeScopeRequired, "this key lacks scope agent_memory (or context)")
		}
		if sourceID != "" && sourceID != p.Agent {
			return viewer{}, fault.New(fault.Forbidden, CodeSourceMismatch, "an agent reads as itself; leave source_id out").With("member", "source_id")
		}
		return viewer{spaceID: p.SpaceID, source: p.Agent, vendor: p.Vendor}, nil
	}
	if sourceID != "" {
		if err := p.RequireRole(auth.RoleIntegration); err != nil {
			return viewer{}, err
		}
		vendor, err := s.sourceVendor(ctx, p.SpaceID, sourceID)
		if err != nil {
			return viewer{}, err
		}
		return viewer{spaceID: p.SpaceID, source: sourceID, vendor: vendor}, nil
	}
	if !people {
		if err := p.RequireRole(auth.RoleIntegration); err != nil {
			return viewer{}, err
		}
		return viewer{}, invalid("source_id", "a person reads the block or searches as an agent: name it in source_id")
	}
	if err := p.RequireRole(auth.RoleIntegration, auth.RoleAdmin, auth.RoleReviewer); err != nil {
		return viewer{}, err
	}
	return viewer{spaceID: p.SpaceID, all: true}, nil
}

// Get returns note version id if p may read it (any version, retired too). Unknown or not
// visible: fault.NotFound note_not_found. Feature off: fault.Forbidden feature_disabled.
func (s *Service) Get(ctx context.Context, p auth.Principal, id string) (Note, error) {
	if _, err := s.features(ctx, p.SpaceID); err != nil {
		return Note{}, err
	}
	v, err := s.reader(ctx, p, "", true)
	if err != nil {
		return Note{}, err
	}
	var r models.Note
	err = s.DB.NewSelect().Model(&r).Where("id = ? AND space_id = ?", id, p.SpaceID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !v.sees(r)) {
		return Note{}, noteNotFound()
	}
	if err != nil {
		return Note{}, fmt.Errorf("notes: get: %w", err)
	}
	if err := s.openOne(ctx, &r); err != nil {
		return Note{}, err
	}
	return toNote(r), nil
}

// ListFilter filters GET /v1/agent-memory/notes: SourceID, Kind, Tag, Status ("active",
// "retired" or "" for both); After is the last id of the previous page; Limit 1..500.
type ListFilter struct {
	SourceID string
	Kind     string
	Tag      string
	Status   string
	After    string
	Limit    int
}

// List returns the notes p may read matching f, oldest id first. Unknown filter values are
// fault.Invalid naming the member.
func (s *Service) List(ctx context.Context, p auth.Principal, f ListFilter) ([]Note, error) {
	if _, err := s.features(ctx, p.SpaceID); err != nil {
		return nil, err
	}
	v, err := s.reader(ctx, p, "", true)
	if err != nil {
		return nil, err
	}
	if f.Kind != "" && !slices.Contains(kinds, f.Kind) {
		return nil, invalid("kind", "kind must be one of %s", strings.Join(kinds, ", "))
	}
	if f.Status != "" && f.Status != StatusActive && f.Status != StatusRetired {
		return nil, invalid("status", `status must be "active" or "retired"`)
	}
	if f.Tag != "" && !tagPattern.MatchString(f.Tag) {
		return nil, invalid("tag", "a tag is lower-case a-z, 0-9, _ . : -")
	}
	var rows []models.Note
	q := v.where(s.DB.NewSelect().Model(&rows))
	if f.SourceID != "" {
		q = q.Where("n.source_id = ?", f.SourceID)
	}
	if f.Kind != "" {
		q = q.Where("n.kind = ?", f.Kind)
	}
	if f.Status != "" {
		q = q.Where("n.status = ?", f.Status)
	}
	if f.Tag != "" {
		q = q.Where("EXISTS (SELECT 1 FROM note_tags t WHERE t.note_id = n.id AND t.tag = ?)", f.Tag)
	}
	if f.After != "" {
		q = q.Where("n.id > ?", f.After)
	}
	if err := q.Order("n.id ASC").Limit(int64(f.Limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("notes: list: %w", err)
	}
	rows, err = s.openNotes(ctx, rows)
	if err != nil {
		return nil, err
	}
	out := make([]Note, 0, len(rows))
	for _, r := range rows {
		out = append(out, toNote(r))
	}
	return out, nil
}

// deliverable selects the active, unexpired notes v may read (block and search, AM-4, AM-14).
func deliverable(q *bun.SelectQuery, v viewer, now time.Time) *bun.SelectQuery {
	return v.where(q).Where("n.status = ?", StatusActive).Where("(n.valid_until IS NULL OR n.valid_until > ?)", now)
}
